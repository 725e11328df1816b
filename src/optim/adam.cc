// torch.optim.Adam / AdamW's update for one parameter, fused into one pass.
#include <cmath>

#include "optim/optim_common.h"

namespace kiln::optim {
namespace {

void adam_impl(const char* op, Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               Tensor& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2, double eps,
               double weight_decay, bool amsgrad, bool maximize, bool decoupled) {
  detail::check_param(op, param);
  const Tensor g = detail::grad_f32(op, param, grad);
  detail::check_state(op, "exp_avg", param, exp_avg);
  detail::check_state(op, "exp_avg_sq", param, exp_avg_sq);
  if (amsgrad) detail::check_state(op, "max_exp_avg_sq", param, max_exp_avg_sq);
  if (step < 1) throw ValueError(std::string("[") + op + "] step must be >= 1, got " + std::to_string(step));
  // Coefficients in float64, as torch computes its Python-float bias corrections.
  const double bc1 = 1.0 - std::pow(beta1, double(step));
  const double bc2_sqrt = std::sqrt(1.0 - std::pow(beta2, double(step)));
  const float step_size = float(lr / bc1), inv_bc2_sqrt = float(1.0 / bc2_sqrt);
  const float b1 = float(beta1), b2 = float(beta2), one_b1 = float(1.0 - beta1), one_b2 = float(1.0 - beta2);
  const float feps = float(eps), fwd = float(weight_decay), decay = float(1.0 - lr * weight_decay);
  const float* gp = g.data<float>();
  float* m = exp_avg.data<float>();
  float* v = exp_avg_sq.data<float>();
  float* vmax = amsgrad ? max_exp_avg_sq.data<float>() : nullptr;
  const int64_t n = param.numel();
  detail::for_param(param, [&](auto load, auto store) {
    for (int64_t i = 0; i < n; ++i) {
      float p = load(i);
      float gi = maximize ? -gp[i] : gp[i];
      if (weight_decay != 0) {
        if (decoupled)
          p *= decay;
        else
          gi += fwd * p;
      }
      const float mi = b1 * m[i] + one_b1 * gi;
      const float vi = b2 * v[i] + one_b2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      float vv = vi;
      if (vmax) vv = vmax[i] = std::fmax(vmax[i], vi);
      const float denom = std::sqrt(vv) * inv_bc2_sqrt + feps;
      store(i, p - step_size * mi / denom);
    }
  });
}

}  // namespace

void adam_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, Tensor& max_exp_avg_sq,
               int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay,
               bool amsgrad, bool maximize) {
  adam_impl("adam_step", param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
            weight_decay, amsgrad, maximize, false);
}

void adamw_step(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                Tensor& max_exp_avg_sq, int64_t step, double lr, double beta1, double beta2, double eps,
                double weight_decay, bool amsgrad, bool maximize) {
  adam_impl("adamw_step", param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps,
            weight_decay, amsgrad, maximize, true);
}

}  // namespace kiln::optim
