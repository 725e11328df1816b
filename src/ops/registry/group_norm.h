// Group normalization (include/kiln/group_norm.h): the forward, which also
// returns the per-(sample, group) mean and reciprocal std, and the backward
// that reads them (torch's native_group_norm / native_group_norm_backward).
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::ops {

// x: [N, C, HxW] contiguous float (C divisible by groups); weight, bias: [C]
// contiguous float or undefined; out: x's shape and dtype, contiguous; mean,
// rstd: [N, groups] contiguous, float64 for float64 x, else float32.
using GroupNorm = void(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups, double eps,
                       const Tensor& out, const Tensor& mean, const Tensor& rstd);
// grad_out, x: [N, C, HxW] contiguous, one float dtype; mean, rstd: [N,
// groups] contiguous float; weight: [C] contiguous float or undefined.
// grad_input ([N, C, HxW], x's dtype), grad_weight, grad_bias ([C]): contiguous
// outputs, each undefined when not wanted.
using GroupNormBackward = void(const Tensor& grad_out, const Tensor& x, const Tensor& mean,
                               const Tensor& rstd, const Tensor& weight, int64_t groups,
                               const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

#define KILN_OPS_GROUP_NORM(X) \
  X(group_norm, GroupNorm)     \
  X(group_norm_backward, GroupNormBackward)

}  // namespace kiln::ops
