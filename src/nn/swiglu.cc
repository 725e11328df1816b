// swiglu front-end: silu(gate) * up. Checks dtypes and shapes, allocates, and
// calls the op (ops/registry/nn.h).
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/nn.h"
#include "kiln/unary.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {

void swiglu_out(const Tensor& gate, const Tensor& up, const Tensor& out) {
  autograd::Record rec("swiglu", {&gate, &up});
  rec.no_out(out);
  autograd::wrote(out);
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
  autograd::Record rec("swiglu", {&gate, &up});
  Tensor out = empty(gate.sizes(), gate.dtype(), gate.device());
  swiglu_out(gate, up, out);
  if (rec)
    rec.finish("SwigluBackward0", {&out}, {gate, up}, [](autograd::FnNode& n, autograd::Grads& g) {
      const Tensor gate = n.saved(0), up = n.saved(1);
      const DType acc = gate.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
      const Tensor a = gate.to(acc), gf = g[0].to(acc), s = sigmoid(a);
      autograd::Grads r(2);
      // silu'(a) = s * (1 + a * (1 - s))
      if (n.needs(0)) r[0] = mul(mul(gf, up.to(acc)), mul(s, add(mul(a, sub(Scalar(1.0), s)), Scalar(1.0))));
      if (n.needs(1)) r[1] = mul(gf, mul(a, s));
      return r;
    });
  return out;
}

}  // namespace kiln
