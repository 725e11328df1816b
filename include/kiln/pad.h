// Padding (torch.nn.functional.pad) and pixel shuffling, with the backward of
// padding as its own op (the gradient folded back onto the input).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

enum class PadMode { Constant, Reflect, Replicate, Circular };

// "constant", "reflect", "replicate", "circular"; NotImplementedError otherwise.
PadMode pad_mode(std::string_view name);
const char* pad_mode_name(PadMode mode);

// F.pad(x, pad, mode, value): pad = (left, right) pairs from the last dim
// backwards (torch's order); negative entries crop. Constant mode pads any
// number of dims of any rank (value defaults to 0); the other modes pad the
// last 1, 2 or 3 dims of a 2-3, 3-4 or 4-5 dim input (batched or not) and take
// no value other than 0. Reflect pads must be below the input size, circular
// pads at most the (cropped) size.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, PadMode mode = PadMode::Constant,
           std::optional<double> value = std::nullopt);

// The gradient of pad with respect to its input: grad_output [*, m] (pad's
// output shape for input_shape) folded back onto input_shape (each input
// element sums the output elements that read it). Linear in grad_output; its
// own derivative is pad with the same mode.
Tensor pad_backward(const Tensor& grad_output, const Shape& input_shape, const std::vector<int64_t>& pad,
                    PadMode mode);

// F.pixel_shuffle: [*, C * r * r, H, W] -> [*, C, H * r, W * r].
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
// F.pixel_unshuffle: [*, C, H * r, W * r] -> [*, C * r * r, H, W].
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

}  // namespace kiln
