// frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1). The kernel is
// the op of ops/registry/unary.h.
#include "kiln/unary.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {

std::pair<Tensor, Tensor> frexp(const Tensor& x) {
  if (!is_floating(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[frexp] only supports floating-point dtypes, got ") + name(x.dtype()));
  Tensor mantissa = empty(x.sizes(), x.dtype(), x.device());
  Tensor exponent = empty(x.sizes(), DType::Int32, x.device());
  ops::frexp(common_device("frexp", {&x, &mantissa, &exponent}), x, mantissa, exponent);
  return {mantissa, exponent};
}

}  // namespace kiln
