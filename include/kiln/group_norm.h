// Group and instance normalization (torch.nn.functional.group_norm,
// instance_norm) over x [N, C, *].
#pragma once

#include <array>
#include <cstdint>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln {

// y = (x - mean) * rstd * weight + bias, mean and rstd = 1 / sqrt(var + eps)
// (biased variance) over each sample's C / num_groups channels and all
// spatial positions. weight, bias: [C] or undefined.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// torch.native_group_norm: (y, mean, rstd), mean and rstd [N, num_groups]
// (float64 for float64 x, else float32).
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& x, const Tensor& weight,
                                                     const Tensor& bias, int64_t num_groups, double eps);
// torch.native_group_norm_backward: (grad_input, grad_weight, grad_bias) of
// group_norm from grad_out (x's shape) and the forward's mean and rstd
// [N, num_groups]; output_mask picks which are computed (the others are
// undefined; grad_weight and grad_bias need a defined weight). Differentiable
// in all its tensor inputs (mean and rstd as independent inputs).
std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad_out, const Tensor& x,
                                                       const Tensor& mean, const Tensor& rstd,
                                                       const Tensor& weight, int64_t num_groups,
                                                       std::array<bool, 3> output_mask = {true, true, true});
// Each (sample, channel) normalized over its spatial positions. With
// use_input_stats, the running stats (both or neither defined, [C]) are
// updated in place: r = (1 - momentum) * r + momentum * (the batch mean of
// the per-instance mean / unbiased variance); else they normalize x.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = Tensor(),
                     const Tensor& running_var = Tensor(), const Tensor& weight = Tensor(),
                     const Tensor& bias = Tensor(), bool use_input_stats = true, double momentum = 0.1,
                     double eps = 1e-5);

}  // namespace kiln
