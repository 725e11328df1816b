// Scalar bodies of the floating-point unary ops, in the compute type C (float,
// double, complex64 or complex128). The generic strided loops use them, and the
// SIMD kernels fall back to them for lanes outside their accurate range, so a
// contiguous and a strided input give results of the same quality.
#pragma once

#include <cmath>
#include <complex>
#include <type_traits>

#include "cpu/special_math.h"
#include "kiln/dtype.h"

namespace kiln {

enum class UOp : int {
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log1p,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Sin,
  Cos,
  Tan,
  Tanh,
  Sigmoid,
  Silu,
  GeluErf,
  GeluTanh,
  Erf,
  Lgamma,
  Digamma,
  I0,
};
inline constexpr int kUOpCount = int(UOp::I0) + 1;  // one past the last op above

// Ops with a complex form (torch's list); the rest are real-only.
constexpr bool uop_has_complex(UOp k) {
  switch (k) {
    case UOp::Exp: case UOp::Log: case UOp::Sqrt: case UOp::Rsqrt: case UOp::Reciprocal:
    case UOp::Sin: case UOp::Cos: case UOp::Tan: case UOp::Tanh: case UOp::Sigmoid:
      return true;
    default:
      return false;
  }
}

namespace detail {
// Numerically stable logistic: exp(-|x|) never overflows, and for x < 0 the
// result e / (1 + e) keeps full relative accuracy down to the subnormals.
template <typename R>
inline R stable_sigmoid(R x) {
  const R e = std::exp(-std::abs(x));
  const R s = R(1) / (R(1) + e);
  return x >= R(0) ? s : e * s;
}
}  // namespace detail

template <UOp K, typename C>
inline C uop_scalar(C x) {
  if constexpr (K == UOp::Exp) return std::exp(x);
  else if constexpr (K == UOp::Exp2) return std::exp2(x);
  else if constexpr (K == UOp::Expm1) return std::expm1(x);
  else if constexpr (K == UOp::Log) return std::log(x);
  else if constexpr (K == UOp::Log2) return std::log2(x);
  else if constexpr (K == UOp::Log1p) return std::log1p(x);
  else if constexpr (K == UOp::Sqrt) return std::sqrt(x);
  else if constexpr (K == UOp::Rsqrt) return C(1) / std::sqrt(x);
  else if constexpr (K == UOp::Reciprocal) return C(1) / x;
  else if constexpr (K == UOp::Sin) return std::sin(x);
  else if constexpr (K == UOp::Cos) return std::cos(x);
  else if constexpr (K == UOp::Tan) return std::tan(x);
  else if constexpr (K == UOp::Tanh) return std::tanh(x);
  else if constexpr (K == UOp::Sigmoid) {
    if constexpr (is_complex_v<C>) return C(1) / (C(1) + std::exp(-x));
    else return detail::stable_sigmoid(x);
  } else if constexpr (K == UOp::Silu) {
    // In double for float: below x = -87 sigmoid(x) is subnormal in float.
    using W = std::conditional_t<std::is_same_v<C, float>, double, C>;
    return C(W(x) * detail::stable_sigmoid(W(x)));
  } else if constexpr (K == UOp::GeluErf) {
    // 0.5 x (1 + erf(x / sqrt2)) written with erfc so the negative tail keeps
    // its relative accuracy; evaluated in a wider type (the rounding of x / sqrt2
    // is amplified by 2 z^2 in erfc's tail).
    using W = std::conditional_t<std::is_same_v<C, float>, double, long double>;
    const W w = W(x);
    return C(W(0.5) * w * std::erfc(-w * W(0.707106781186547524400844362104849039L)));
  } else if constexpr (K == UOp::Erf) {
    return std::erf(x);
  } else if constexpr (K == UOp::Lgamma) {
    return C(cpu::special::lgamma(double(x)));  // in double for every floating C
  } else if constexpr (K == UOp::Digamma) {
    return C(cpu::special::digamma(double(x)));
  } else if constexpr (K == UOp::I0) {
    return C(cpu::special::i0(double(x)));
  } else if constexpr (K == UOp::GeluTanh) {
    // 0.5 x (1 + tanh(u)) == x * sigmoid(2u): no cancellation for x < 0.
    using W = std::conditional_t<std::is_same_v<C, float>, double, long double>;
    const W w = W(x);
    const W u = W(0.797884560802865355879892119868763737L) * (w + W(0.044715) * w * w * w);
    return C(w * detail::stable_sigmoid(W(2) * u));
  }
}

}  // namespace kiln
