// torch.optim.SGD's update for one parameter, fused into one pass.
#include "optim/optim_common.h"

namespace kiln::optim {

void sgd_step(Tensor& param, const Tensor& grad, Tensor& momentum_buf, double lr, double momentum,
              double dampening, double weight_decay, bool nesterov, bool maximize, bool first_step) {
  const char* op = "sgd_step";
  detail::check_param(op, param);
  const Tensor g = detail::grad_f32(op, param, grad);
  if (momentum != 0) detail::check_state(op, "momentum_buffer", param, momentum_buf);
  if (nesterov && (momentum <= 0 || dampening != 0))
    throw ValueError("[sgd_step] nesterov momentum requires a momentum and zero dampening");
  const float* gp = g.data<float>();
  float* buf = momentum != 0 ? momentum_buf.data<float>() : nullptr;
  const int64_t n = param.numel();
  const float flr = float(lr), fwd = float(weight_decay), fmom = float(momentum);
  const float keep = float(1.0 - dampening);
  detail::for_param(param, [&](auto load, auto store) {
    for (int64_t i = 0; i < n; ++i) {
      const float p = load(i);
      float d = maximize ? -gp[i] : gp[i];
      if (weight_decay != 0) d += fwd * p;
      if (buf) {
        // The first step copies d into the buffer (no dampening), as torch.
        const float b = first_step ? d : fmom * buf[i] + keep * d;
        buf[i] = b;
        d = nesterov ? d + fmom * b : b;
      }
      store(i, p - flr * d);
    }
  });
}

}  // namespace kiln::optim
