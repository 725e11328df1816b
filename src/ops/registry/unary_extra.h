// Unary elementwise ops beyond the core math family: inverse trig/hyperbolic,
// error, gamma and Bessel functions, angle conversions, logit, frac, square,
// sgn, the sign/infinity predicates and nan_to_num (src/ops/unary_extra.cc).
// The front-end has allocated `out` with x's shape and the result dtype (out
// may be x itself for op_). Joined into KILN_OPS by ops/registry/all.h.
#pragma once

#include "core/op.h"
#include "ops/registry/unary.h"

namespace kiln::ops {

// logit: eps >= 0 clamps x to [eps, 1 - eps] first; eps < 0: no clamp.
using Logit = void(const Tensor& x, const Tensor& out, double eps);
// nan_to_num: NaN -> nan, +inf -> posinf, -inf -> neginf (floating x and out).
using NanToNum = void(const Tensor& x, const Tensor& out, double nan, double posinf, double neginf);

#define KILN_OPS_UNARY_EXTRA(X) \
  X(acos, Unary)                \
  X(asin, Unary)                \
  X(atan, Unary)                \
  X(acosh, Unary)               \
  X(asinh, Unary)               \
  X(atanh, Unary)               \
  X(cosh, Unary)                \
  X(sinh, Unary)                \
  X(erf, Unary)                 \
  X(erfc, Unary)                \
  X(erfinv, Unary)              \
  X(lgamma, Unary)              \
  X(digamma, Unary)             \
  X(log10, Unary)               \
  X(sinc, Unary)                \
  X(deg2rad, Unary)             \
  X(rad2deg, Unary)             \
  X(i0, Unary)                  \
  X(logit, Logit)               \
  X(frac, Unary)                \
  X(square, Unary)              \
  X(sgn, Unary)                 \
  X(signbit, Unary)             \
  X(isposinf, Unary)            \
  X(isneginf, Unary)            \
  X(isreal, Unary)              \
  X(nan_to_num, NanToNum)


}  // namespace kiln::ops
