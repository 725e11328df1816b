// kiln._C.optim_{sgd,adam,adamw}_step: the fused per-parameter updates that
// kiln.optim's SGD / Adam / AdamW call once per parameter.
#include "kiln/optim.h"

#include "bind_util.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

kiln::Tensor opt(nb::handle h) { return h.is_none() ? kiln::Tensor() : kiln::py::to_tensor(h); }

}  // namespace

void init_optim(nb::module_& m) {
  using kiln::Tensor;
  m.def(
      "_optim_sgd_step",
      [](Tensor& param, const Tensor& grad, nb::handle buf, double lr, double momentum, double dampening,
         double weight_decay, bool nesterov, bool maximize, bool first_step) {
        Tensor b = opt(buf);
        nb::gil_scoped_release release;
        kiln::optim::sgd_step(param, grad, b, lr, momentum, dampening, weight_decay, nesterov, maximize,
                              first_step);
      },
      "param"_a, "grad"_a, "momentum_buffer"_a.none(), "lr"_a, "momentum"_a, "dampening"_a, "weight_decay"_a,
      "nesterov"_a, "maximize"_a, "first_step"_a, "One fused torch.optim.SGD update of param (in place).");
  for (const char* nm : {"_optim_adam_step", "_optim_adamw_step"}) {
    const bool decoupled = nm[11] == 'w';
    m.def(
        nm,
        [decoupled](Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, nb::handle vmax,
                    int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay,
                    bool amsgrad, bool maximize) {
          Tensor mx = opt(vmax);
          nb::gil_scoped_release release;
          (decoupled ? kiln::optim::adamw_step : kiln::optim::adam_step)(param, grad, exp_avg, exp_avg_sq, mx,
                                                                         step, lr, beta1, beta2, eps,
                                                                         weight_decay, amsgrad, maximize);
        },
        "param"_a, "grad"_a, "exp_avg"_a, "exp_avg_sq"_a, "max_exp_avg_sq"_a.none(), "step"_a, "lr"_a,
        "beta1"_a, "beta2"_a, "eps"_a, "weight_decay"_a, "amsgrad"_a, "maximize"_a,
        decoupled ? "One fused torch.optim.AdamW update of param (in place)."
                  : "One fused torch.optim.Adam update of param (in place).");
  }
}
