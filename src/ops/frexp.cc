// frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1). The kernel is
// the op of ops/registry/unary.h.
#include "core/autograd_record.h"
#include "core/dense_layout.h"
#include "kiln/binary.h"
#include "kiln/unary.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {

std::pair<Tensor, Tensor> frexp(const Tensor& x) {
  if (!is_floating(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[frexp] only supports floating-point dtypes, got ") + name(x.dtype()));
  autograd::Record rec("frexp", {&x});
  Tensor mantissa = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
  Tensor exponent = empty_following(x.sizes(), DType::Int32, x.device(), {&x});
  ops::frexp(common_device("frexp", {&x, &mantissa, &exponent}), x, mantissa, exponent);
  // d mantissa / dx = 2^-exponent (piecewise); the exponent carries no gradient.
  if (rec)
    rec.finish("FrexpBackward0", {&mantissa, &exponent}, {exponent},
               [](autograd::FnNode& n, autograd::Grads& g) {
                 if (!n.needs(0) || !g[0].defined()) return autograd::Grads{Tensor()};
                 return autograd::Grads{mul(g[0], exp2(neg(n.saved(0).to(g[0].dtype()))))};
               });
  return {mantissa, exponent};
}

}  // namespace kiln
