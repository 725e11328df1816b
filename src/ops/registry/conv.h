// Convolution ops (include/kiln/conv.h): the N-d convolution of either
// direction and its weight gradient. The front-end casts narrow floats to
// float32 and makes every tensor contiguous; kernels see nd = 1..3.
#pragma once

#include <array>
#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::ops {

// Geometry of one convolution, spatial dims padded to 3 at the front (size 1,
// kernel 1, stride 1, padding 0, dilation 1).
struct ConvParams {
  std::array<int64_t, 3> stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  bool transposed = false;
  int64_t groups = 1;
};

// input: [N, C_in, *s] contiguous float32/float64; weight: [C_out, C_in/g, *k]
// (transposed: [C_in, C_out/g, *k]) contiguous, input's dtype; bias: [C_out]
// of that dtype or undefined; out: [N, C_out, *o] contiguous, input's dtype,
// o from the front-end (transposed: with output_padding).
using Convolution = void(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                         const Tensor& out);
// input: [N, C_in, *s], grad_output: [N, C_out, *o] contiguous float32/float64;
// grad_weight: contiguous, weight's shape and input's dtype.
using ConvolutionBackwardWeight = void(const Tensor& input, const Tensor& grad_output, const ConvParams& p,
                                       const Tensor& grad_weight);

#define KILN_OPS_CONV(X)      \
  X(convolution, Convolution) \
  X(convolution_backward_weight, ConvolutionBackwardWeight)

}  // namespace kiln::ops
