// Unary elementwise ops with PyTorch's names, dtype rules and semantics.
//
// Dtype rules (as torch):
//   - float math (exp, log, sin, sigmoid, ...): bool/integer inputs give float32;
//     f16/bf16 are computed in float and narrowed on store, f64 in double.
//     complex64/complex128 are accepted by neg, abs (-> real dtype), exp, log,
//     sqrt, rsqrt, reciprocal, sin, cos, tan, tanh, sigmoid and the predicates.
//   - neg/abs/sign/relu keep integer dtypes; neg of bool, relu of bool and sign of
//     complex (torch has sgn for that) throw TypeError. abs of bool is the
//     identity (torch's CUDA and NumPy behaviour).
//   - floor/ceil/round/trunc return a copy for integer inputs.
//   - isnan/isinf/isfinite and logical_not return bool for every dtype.
//   - bitwise_not takes integers and bool only.
//   - FP8 inputs throw TypeError "[op] unsupported dtype float8_e4m3fn", except
//     for abs, neg, isnan, isinf, isfinite and logical_not.
// Every op returns a new contiguous tensor of the input's shape; non-contiguous,
// 0-dim and empty inputs are fine. The in-place forms op_(x) write into x and
// throw TypeError when the result dtype differs from x's (e.g. exp_ of int64).
#pragma once

#include <string>
#include <utility>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

// ---- sign and magnitude ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // sign(NaN) = 0, as torch
Tensor& neg_(Tensor& x);
Tensor& abs_(Tensor& x);
Tensor& sign_(Tensor& x);

// ---- exponentials and logarithms ----
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor& exp_(Tensor& x);
Tensor& exp2_(Tensor& x);
Tensor& expm1_(Tensor& x);
Tensor& log_(Tensor& x);
Tensor& log2_(Tensor& x);
Tensor& log1p_(Tensor& x);
Tensor& sqrt_(Tensor& x);
Tensor& rsqrt_(Tensor& x);
Tensor& reciprocal_(Tensor& x);

// ---- trigonometric and hyperbolic ----
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor& sin_(Tensor& x);
Tensor& cos_(Tensor& x);
Tensor& tan_(Tensor& x);
Tensor& tanh_(Tensor& x);

// ---- activations ----
Tensor sigmoid(const Tensor& x);
// silu and gelu take floating inputs only (torch raises for integers).
Tensor silu(const Tensor& x);
// approximate: "none" (exact, erf) or "tanh"; anything else throws ValueError.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor relu(const Tensor& x);
Tensor& sigmoid_(Tensor& x);
Tensor& silu_(Tensor& x);
Tensor& gelu_(Tensor& x, const std::string& approximate = "none");
Tensor& relu_(Tensor& x);

// ---- rounding (half to even for round; copies for integer inputs) ----
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
// round(x, decimals): nearbyint(x * 10^d) / 10^d (d >= 0), nearbyint(x / 10^-d) * 10^-d
// (d < 0), as torch. decimals != 0 needs a floating input.
Tensor round(const Tensor& x, int decimals = 0);
Tensor trunc(const Tensor& x);
Tensor& floor_(Tensor& x);
Tensor& ceil_(Tensor& x);
Tensor& round_(Tensor& x, int decimals = 0);
Tensor& trunc_(Tensor& x);

// ---- predicates and logical/bitwise (bool results except bitwise_not) ----
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor logical_not(const Tensor& x);
Tensor bitwise_not(const Tensor& x);
Tensor& logical_not_(Tensor& x);  // x keeps its dtype: 1/0 in it
Tensor& bitwise_not_(Tensor& x);

// ---- decompositions ----
// frexp(x) -> (mantissa, exponent) with x = mantissa * 2^exponent, |mantissa| in
// [0.5, 1), mantissa of x's (floating) dtype and exponent int32. Exact for
// subnormals; +-0 -> (+-0, 0); inf/NaN -> (inf/NaN, 0). Floating inputs only.
std::pair<Tensor, Tensor> frexp(const Tensor& x);

// ---- special functions ----
// Laguerre polynomial L_n(x), x and n broadcast against each other. n is
// truncated to an integer; n < 0 gives 0, x == 0 gives 1. Result dtype is the
// promotion of x and n, with integer/bool results becoming float32.
Tensor special_laguerre_polynomial_l(const Tensor& x, const Tensor& n);
Tensor special_laguerre_polynomial_l(const Scalar& x, const Tensor& n);
Tensor special_laguerre_polynomial_l(const Tensor& x, const Scalar& n);

}  // namespace kiln
