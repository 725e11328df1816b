// Pooling with torch's semantics over 1, 2 or 3 spatial dims (max_pool1d/2d/3d,
// avg_pool*, adaptive_avg_pool*, adaptive_max_pool*), and their backward ops.
//
// The number of spatial dims is the length of kernel_size (of output_size for
// the adaptive ops): x is [N, C, *spatial] or unbatched [C, *spatial]. stride
// empty means stride = kernel_size; a one-element list applies to every dim.
// Output sizes follow torch: floor((in + 2p - d(k-1) - 1) / s) + 1, or ceil
// with ceil_mode, where the last window must start inside the input or the
// left padding. Max pooling pads with -inf and lets NaN win; its indices are
// int64 flat positions within each input plane (D*H*W), as torch's.
// float16/bfloat16 compute in float32.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

struct PoolResult {
  Tensor values;   // x's dtype
  Tensor indices;  // int64, flat positions within each input plane
};

PoolResult max_pool_with_indices(const Tensor& x, const std::vector<int64_t>& kernel_size,
                                 const std::vector<int64_t>& stride = {},
                                 const std::vector<int64_t>& padding = {0},
                                 const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
Tensor max_pool(const Tensor& x, const std::vector<int64_t>& kernel_size,
                const std::vector<int64_t>& stride = {}, const std::vector<int64_t>& padding = {0},
                const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);

// divisor_override (non-zero) replaces the window's element count.
Tensor avg_pool(const Tensor& x, const std::vector<int64_t>& kernel_size,
                const std::vector<int64_t>& stride = {}, const std::vector<int64_t>& padding = {0},
                bool ceil_mode = false, bool count_include_pad = true,
                std::optional<int64_t> divisor_override = std::nullopt);

// Output cell o of a dim of size in (out cells) covers [floor(o*in/out), ceil((o+1)*in/out)).
Tensor adaptive_avg_pool(const Tensor& x, const std::vector<int64_t>& output_size);
PoolResult adaptive_max_pool(const Tensor& x, const std::vector<int64_t>& output_size);

// Fractional max pooling (torch's fractional_max_pool2d/3d, Graham 2014) over
// the 2 or 3 trailing dims (output_size's length) of [N, C, *] or [C, *]:
// windows of kernel_size whose starts step pseudo-randomly, drawn from
// random_samples [N (1 unbatched), C, nd] in [0, 1) in torch's order ((W, H)
// for 2 dims, (T, H, W) for 3). Its derivative is max_pool_backward.
PoolResult fractional_max_pool(const Tensor& x, const std::vector<int64_t>& kernel_size,
                               const std::vector<int64_t>& output_size, const Tensor& random_samples);

// Backward ops, linear in grad (each differentiable again): grad has the
// forward's output shape, input_shape is the forward's input shape.
// spatial_dims (1-3) says which trailing dims form a plane. max_pool_backward
// serves max_pool and adaptive_max_pool: it adds each grad element at its
// index within the plane.
Tensor max_pool_backward(const Tensor& grad, const Tensor& indices, const Shape& input_shape,
                         int spatial_dims);
Tensor avg_pool_backward(const Tensor& grad, const Shape& input_shape,
                         const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride = {},
                         const std::vector<int64_t>& padding = {0}, bool ceil_mode = false,
                         bool count_include_pad = true,
                         std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool_backward(const Tensor& grad, const Shape& input_shape, int spatial_dims);

}  // namespace kiln
