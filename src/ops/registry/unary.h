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

}  // namespace kiln::ops
