// More unary elementwise ops with PyTorch's names, dtype rules and semantics
// (see kiln/unary.h for the shared rules): inverse trig/hyperbolic, error,
// gamma and Bessel functions, angle conversions, logit, frac, square, sgn,
// the sign/infinity predicates and nan_to_num.
//   - The float functions give float32 for bool/integer inputs; complex
//     inputs are taken by acos, asin, atan, acosh, asinh, atanh, cosh, sinh
//     and log10. FP8 inputs raise TypeError.
//   - erfinv(+-1) = +-inf and |y| > 1 gives NaN; digamma(+-0) = -+inf and
//     negative integers give NaN; lgamma is inf at its poles. i0 is the
//     modified Bessel function I0; sinc(x) = sin(pi x) / (pi x), 1 at 0.
//   - In-place forms op_(x) throw TypeError when the result dtype differs
//     from x's (acos_ of int64), as kiln/unary.h.
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln {

#define KILN_UNARY_EXTRA(fn)  \
  Tensor fn(const Tensor& x); \
  Tensor& fn##_(Tensor& x)
KILN_UNARY_EXTRA(acos);
KILN_UNARY_EXTRA(asin);
KILN_UNARY_EXTRA(atan);
KILN_UNARY_EXTRA(acosh);
KILN_UNARY_EXTRA(asinh);
KILN_UNARY_EXTRA(atanh);
KILN_UNARY_EXTRA(cosh);
KILN_UNARY_EXTRA(sinh);
KILN_UNARY_EXTRA(erf);
KILN_UNARY_EXTRA(erfc);
KILN_UNARY_EXTRA(erfinv);
KILN_UNARY_EXTRA(lgamma);
KILN_UNARY_EXTRA(digamma);
KILN_UNARY_EXTRA(log10);
KILN_UNARY_EXTRA(sinc);
KILN_UNARY_EXTRA(deg2rad);
KILN_UNARY_EXTRA(rad2deg);
KILN_UNARY_EXTRA(i0);
KILN_UNARY_EXTRA(frac);    // floating inputs only; x - trunc(x) (inf gives NaN)
KILN_UNARY_EXTRA(square);  // x * x; integers keep their dtype (wrapping), bool gives int64
KILN_UNARY_EXTRA(sgn);     // sign for real x (x's dtype, NaN gives 0), z / |z| for complex (0 at 0)
#undef KILN_UNARY_EXTRA

// logit(x, eps): log(z / (1 - z)), z = x clamped to [eps, 1 - eps] when eps is given.
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor& logit_(Tensor& x, std::optional<double> eps = std::nullopt);

// positive(x) returns x itself; bool raises TypeError, as torch.
Tensor positive(const Tensor& x);

// Bool results for real dtypes (isreal also complex: imag == 0).
// signbit(-0.0) is true; integers are never +-inf.
Tensor signbit(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor isneginf(const Tensor& x);
Tensor isreal(const Tensor& x);

// NaN -> nan, +inf -> posinf, -inf -> neginf; posinf/neginf default to the
// dtype's largest/lowest finite value. Integer and bool inputs give a copy
// (nan_to_num_ leaves them as they are).
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Tensor& nan_to_num_(Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt);

}  // namespace kiln
