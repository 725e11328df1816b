// torch.nn.functional.unfold / fold: sliding local blocks of a batched image
// as columns (im2col) and back, summing overlaps (col2im). Each pair is
// (rows, cols); every value of kernel_size, dilation and stride must be > 0,
// padding >= 0.
#pragma once

#include <array>
#include <cstdint>

#include "kiln/tensor.h"

namespace kiln {

using Size2 = std::array<int64_t, 2>;

// x: [N, C, H, W] (or unbatched [C, H, W]) float -> [N, C*kh*kw, L] (or
// [C*kh*kw, L]), L = oh * ow, oh = (H + 2ph - dh*(kh-1) - 1) / sh + 1 (ow alike).
Tensor unfold(const Tensor& x, Size2 kernel_size, Size2 dilation = {1, 1}, Size2 padding = {0, 0},
              Size2 stride = {1, 1});
// x: [N, C*kh*kw, L] (or [C*kh*kw, L]) float, L the block count of
// output_size -> [N, C, H, W] (or [C, H, W]), overlapping entries summed.
Tensor fold(const Tensor& x, Size2 output_size, Size2 kernel_size, Size2 dilation = {1, 1},
            Size2 padding = {0, 0}, Size2 stride = {1, 1});

}  // namespace kiln
