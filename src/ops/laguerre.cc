// special_laguerre_polynomial_l(x, n): the Laguerre polynomial L_n(x) by its
// three-term recurrence, x and n broadcast against each other.
#include <cmath>

#include "kiln/unary.h"
#include "ops/unary_common.h"

namespace kiln {

namespace {

constexpr const char* kOp = "special_laguerre_polynomial_l";

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
double laguerre(double x, int64_t n) {
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

Tensor laguerre_impl(const Tensor& x, const Tensor& n, DType dt) {
  if (is_complex(dt) || is_fp8(dt)) unary_detail::unsupported(kOp, dt);
  if (is_integral(dt, true)) dt = kDefaultFloat;
  const Shape shape = broadcast_shapes(x.shape(), n.shape(), kOp);
  // Both operands in the result dtype, as torch's common-dtype iterator (n is
  // truncated from that dtype).
  const Tensor xs = x.to(dt).expand(shape);
  const Tensor ns = n.to(dt).expand(shape);
  Tensor out = empty(shape, dt);
  dispatch<kFloatSet>(dt, kOp, [&]<typename T>() {
    binary_loop<T, T, T>(out, xs, ns, [](T xv, T nv) {
      return T(laguerre(double(compute_t<T>(xv)), degree(double(compute_t<T>(nv)))));
    });
  });
  return out;
}

Priority priority_of(const Tensor& t) { return t.dim() == 0 ? Priority::ZeroDim : Priority::Dimensioned; }

}  // namespace

Tensor special_laguerre_polynomial_l(const Tensor& x, const Tensor& n) {
  ResultType rt;
  rt.add(x.dtype(), priority_of(x));
  rt.add(n.dtype(), priority_of(n));
  return laguerre_impl(x, n, rt.get());
}

Tensor special_laguerre_polynomial_l(const Scalar& x, const Tensor& n) {
  ResultType rt;
  rt.add(x.promotion_dtype(), Priority::Scalar);
  rt.add(n.dtype(), priority_of(n));
  const DType dt = rt.get();
  return laguerre_impl(scalar_tensor(x, is_integral(dt, true) ? kDefaultFloat : dt), n, dt);
}

Tensor special_laguerre_polynomial_l(const Tensor& x, const Scalar& n) {
  ResultType rt;
  rt.add(x.dtype(), priority_of(x));
  rt.add(n.promotion_dtype(), Priority::Scalar);
  const DType dt = rt.get();
  return laguerre_impl(x, scalar_tensor(n, is_integral(dt, true) ? kDefaultFloat : dt), dt);
}

}  // namespace kiln
