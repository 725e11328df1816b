// Fused optimizer updates (torch.optim's single-tensor equations): each call updates
// one parameter and its state in a single elementwise pass, in place.
//
// param: float32 or bfloat16, contiguous; grad: param's shape, any float dtype (read
// as float32); state tensors (momentum buffer, exp_avg, ...): float32, param's shape,
// contiguous. The arithmetic runs in float32, the scalar coefficients in float64.
// The caller runs these outside grad recording (kiln.optim does, under no_grad); the
// param's version counter is bumped as for any in-place write.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::optim {

// torch.optim.SGD for one parameter. momentum_buf is read only when momentum != 0;
// on the first step (first_step) it is set to the (decayed, sign-adjusted) gradient.
void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buf, double lr, double momentum,
              double dampening, double weight_decay, bool nesterov, bool maximize, bool first_step);

// torch.optim.Adam for one parameter at step `step` (1-based, already incremented).
// max_exp_avg_sq is read only when amsgrad.
void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
               int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay,
               bool amsgrad, bool maximize);

// torch.optim.AdamW: Adam with decoupled weight decay (param *= 1 - lr * weight_decay).
void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                Tensor& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2, double eps,
                double weight_decay, bool amsgrad, bool maximize);

}  // namespace kiln::optim
