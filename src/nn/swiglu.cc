// swiglu front-end: silu(gate) * up. Checks dtypes and shapes, allocates, and
// calls the op (ops/registry/nn.h).
#include "kiln/nn.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {

void swiglu_out(const Tensor& gate, const Tensor& up, const Tensor& out) {
  nn_detail::check_float(gate, "swiglu", "gate");
  KILN_CHECK(up.dtype() == gate.dtype() && up.sizes() == gate.sizes(), ValueError,
             "[swiglu] up " << up.shape_str() << " " << name(up.dtype()) << " must match gate "
                            << gate.shape_str() << " " << name(gate.dtype()));
  KILN_CHECK(out.sizes() == gate.sizes(), ValueError,
             "[swiglu] out has shape " << out.shape_str() << ", expected " << gate.shape_str());
  const Device device = common_device("swiglu", {&gate, &up, &out});
  if (gate.numel() == 0) return;
  ops::swiglu(device, gate, up, out);
}

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  nn_detail::check_float(gate, "swiglu", "gate");
  Tensor out = empty(gate.sizes(), gate.dtype(), gate.device());
  swiglu_out(gate, up, out);
  return out;
}

}  // namespace kiln
