// Channels-last convolution kernels (groups = 1): x [N, *S, C] in memory, the
// output written channels-last too. Patches become ROWS (one per output
// position, the kn * C_in values of the patch with the channel contiguous),
// so one gemm per block of rows multiplies them by the weight laid out
// [C_out, kn, C_in]. The transposed direction gathers the same rows from the
// small side (no scatter). Rows are cut into blocks of a fixed size, so the
// bits do not depend on the thread count.
#pragma once

#include "cpu/ops/conv_direct.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

// Whether input and out are both laid out channels-last (and not both
// row-major), the case the kernels below take.
bool conv_takes_nhwc(const Tensor& input, const Tensor& out, int64_t groups);

// out = convolution (either direction) of input and weight [C_out, C_in, *k]
// (transposed: [C_in, C_out, *k]), bias [C_out] or undefined; g as conv.cc's.
void conv_nhwc(const Tensor& input, const Tensor& weight, const Tensor& bias, const ops::ConvParams& p,
               const ConvGeo& g, const Tensor& out);
// grad_weight [C_a, C_s, *k] = sum over images and small positions of
// a[o, c_a] * src[o * s - p + k * d, c_s] (src the big side, a the small one).
void conv_nhwc_weight(const Tensor& src, const Tensor& a, const ops::ConvParams& p, const ConvGeo& g,
                      const Tensor& grad_weight);

}  // namespace kiln::cpu
