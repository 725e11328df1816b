// CPU kernels of frexp and special_laguerre_polynomial_l
// (ops/registry/unary.h): scalar bodies over the strided loop.
#include <cmath>
#include <cstdint>

#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
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

// Both outputs in one pass: a three-operand loop over (mantissa, exponent, x).
void frexp(const Tensor& x, const Tensor& mantissa, const Tensor& exponent) {
  const Tensor* operands[3] = {&mantissa, &exponent, &x};
  const StridedLoop loop = StridedLoop::make(x.shape(), operands);
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
}

// n as torch converts it (static_cast<int64_t>), with the out-of-range and NaN
// cases pinned to what x86 gives torch (INT64_MIN, hence a result of 0)
// instead of undefined behaviour.
int64_t degree(double n) {
  if (!(n > -9223372036854775808.0 && n < 9223372036854775808.0)) return INT64_MIN;
  return int64_t(n);
}

// L_0 = 1, L_1 = 1 - x, L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1).
// Evaluated in double for every dtype (narrowed on store) so float results are
// correctly rounded for moderate n.
double laguerre_one(double x, int64_t n) {
  if (n < 0) return 0.0;
  if (x == 0.0) return 1.0;
  if (n == 0) return 1.0;
  double p = 1.0, q = 1.0 - x;
  for (int64_t k = 1; k < n; ++k) {
    const double r = ((double(2 * k + 1) - x) * q - double(k) * p) / double(k + 1);
    p = q;
    q = r;
  }
  return q;
}

void laguerre(const Tensor& x, const Tensor& n, const Tensor& out) {
  dispatch<kFloatSet>(out.dtype(), "special_laguerre_polynomial_l", [&]<typename T>() {
    binary_loop<T, T, T>(out, x, n, [](T xv, T nv) {
      return T(laguerre_one(double(compute_t<T>(xv)), degree(double(compute_t<T>(nv)))));
    });
  });
}

}  // namespace

void register_unary_special_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::frexp.set_kernel(kCpu, frexp);
  ops::special_laguerre_polynomial_l.set_kernel(kCpu, laguerre);
}

}  // namespace kiln::cpu
