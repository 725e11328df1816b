// Unary elementwise ops: out[i] = f(x[i]). The front-end has allocated `out`
// with x's shape and the result dtype (out may be x itself for op_).
#pragma once

#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*], out: [*] (same shape; dtype from the front-end's promotion rule)
using Unary = void(const Tensor& x, const Tensor& out);
// gelu: tanh_approx selects approximate="tanh", else the erf form.
using Gelu = void(const Tensor& x, const Tensor& out, bool tanh_approx);

// Floating-point math (src/ops/unary_math.cc).
#define KILN_OPS_UNARY_MATH(X) \
  X(exp, Unary)                \
  X(exp2, Unary)               \
  X(expm1, Unary)              \
  X(log, Unary)                \
  X(log2, Unary)               \
  X(log1p, Unary)              \
  X(sqrt, Unary)               \
  X(rsqrt, Unary)              \
  X(reciprocal, Unary)         \
  X(sin, Unary)                \
  X(cos, Unary)                \
  X(tan, Unary)                \
  X(tanh, Unary)               \
  X(sigmoid, Unary)            \
  X(silu, Unary)               \
  X(gelu, Gelu)

// round: decimals != 0 scales by 10^|decimals| around the rounding (x floating).
using Round = void(const Tensor& x, const Tensor& out, int decimals);
// x: [*], mantissa: [*] (x's floating dtype), exponent: [*] (int32).
using Frexp = void(const Tensor& x, const Tensor& mantissa, const Tensor& exponent);
// x, n, out: [*] (x and n already cast to out's floating dtype and expanded to
// out's shape).
using Laguerre = void(const Tensor& x, const Tensor& n, const Tensor& out);

// Sign and magnitude, integer dtypes kept (src/ops/unary_sign.cc).
#define KILN_OPS_UNARY_SIGN(X) \
  X(neg, Unary)                \
  X(abs, Unary)                \
  X(sign, Unary)               \
  X(relu, Unary)

// Rounding of floating inputs (src/ops/unary_rounding.cc; integer inputs never
// reach the kernels).
#define KILN_OPS_UNARY_ROUNDING(X) \
  X(floor, Unary)                  \
  X(ceil, Unary)                   \
  X(round, Round)                  \
  X(trunc, Unary)

// Predicates (bool out) and logical/bitwise not (src/ops/unary_predicates.cc).
#define KILN_OPS_UNARY_PREDICATES(X) \
  X(isnan, Unary)                    \
  X(isinf, Unary)                    \
  X(isfinite, Unary)                 \
  X(logical_not, Unary)              \
  X(bitwise_not, Unary)

// frexp (src/ops/frexp.cc) and the Laguerre polynomial (src/ops/laguerre.cc).
#define KILN_OPS_UNARY_SPECIAL(X) \
  X(frexp, Frexp)                 \
  X(special_laguerre_polynomial_l, Laguerre)

}  // namespace kiln::ops
