// Convolutions as torch: conv1d/2d/3d, conv_transpose1d/2d/3d and the N-d
// `convolution` they share (cf. aten::convolution), plus the weight gradient
// as its own op. Inputs are [N, C, *spatial] or unbatched [C, *spatial].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// input: [N, C_in, *s] (nd = 1..3 spatial dims); weight: [C_out, C_in/groups,
// *k], or [C_in, C_out/groups, *k] when transposed; bias: [C_out] or
// undefined. stride, padding, dilation, output_padding: nd values each (a
// single value is repeated). padding is symmetric; output_padding (transposed
// only) adds to one side of the output and must be < stride or < dilation.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& dilation, bool transposed,
                   const std::vector<int64_t>& output_padding, int64_t groups);

// The gradient of convolution's weight (shape weight_shape) given its input
// [N, C_in, *s] and the gradient of its output [N, C_out, *o].
Tensor convolution_backward_weight(const Tensor& input, const Tensor& grad_output, const Shape& weight_shape,
                                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                   const std::vector<int64_t>& dilation, bool transposed,
                                   const std::vector<int64_t>& output_padding, int64_t groups);

// torch.nn.functional.conv{1,2,3}d. padding: values, or "same" / "valid"
// (conv_padding); "same" pads d * (k - 1) in total per dim, the odd one on
// the right as torch, and needs stride 1.
struct ConvPadding {
  std::vector<int64_t> values{0};
  std::string mode;  // "", "same" or "valid"
  ConvPadding() = default;
  ConvPadding(std::vector<int64_t> v) : values(std::move(v)) {}  // NOLINT: implicit like torch's int
  ConvPadding(int64_t v) : values{v} {}                          // NOLINT
  ConvPadding(const char* m) : mode(m) {}                        // NOLINT
  ConvPadding(std::string m) : mode(std::move(m)) {}             // NOLINT
};
Tensor conv_nd(int nd, const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
               const std::vector<int64_t>& stride = {1}, const ConvPadding& padding = {},
               const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const ConvPadding& padding = {},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const ConvPadding& padding = {},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const std::vector<int64_t>& stride = {1}, const ConvPadding& padding = {},
              const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);

// torch.nn.functional.conv_transpose{1,2,3}d (torch's argument order: groups
// before dilation).
Tensor conv_transpose_nd(int nd, const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                         const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                         const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                         const std::vector<int64_t>& dilation = {1});
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});

}  // namespace kiln
