// frexp: x = mantissa * 2^exponent with |mantissa| in [0.5, 1).
#include <cmath>

#include "kiln/unary.h"
#include "ops/unary_common.h"

namespace kiln {

namespace {
// Exact for every finite value: std::frexp scales subnormals correctly. f16
// and bf16 go through float, where they are all normal and the mantissa (at
// most 11 significant bits) narrows back exactly.
template <typename C>
C frexp_one(C v, int32_t* e) {
  if (!std::isfinite(v) || v == C(0)) {  // +-0, +-inf, NaN: (x, 0), as NumPy/torch
    *e = 0;
    return v;
  }
  int ei = 0;
  const C m = std::frexp(v, &ei);
  *e = int32_t(ei);
  return m;
}
}  // namespace

std::pair<Tensor, Tensor> frexp(const Tensor& x) {
  if (!is_floating(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[frexp] only supports floating-point dtypes, got ") + name(x.dtype()));
  Tensor mantissa = empty(x.sizes(), x.dtype());
  Tensor exponent = empty(x.sizes(), DType::Int32);
  // Both outputs in one pass: a three-operand loop over (mantissa, exponent, x).
  const Tensor* ops[3] = {&mantissa, &exponent, &x};
  const StridedLoop loop = StridedLoop::make(x.shape(), ops);
  dispatch<kFloatSet>(x.dtype(), "frexp", [&]<typename T>() {
    using C = compute_t<T>;
    for_each(loop, kElementwiseGrain, [](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int32_t e = 0;
        const C m = frexp_one(C(detail::load<T>(p[2] + i * s[2])), &e);
        detail::store<T>(p[0] + i * s[0], T(m));
        detail::store<int32_t>(p[1] + i * s[1], e);
      }
    });
  });
  return {mantissa, exponent};
}

}  // namespace kiln
