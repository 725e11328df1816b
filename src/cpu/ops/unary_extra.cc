// CPU kernels of the inverse trig/hyperbolic, error, gamma and Bessel
// functions, angle conversions, logit, frac, square and sgn
// (ops/registry/unary.h, KILN_OPS_UNARY_EXTRA): scalar bodies over the strided
// loop (erf, lgamma, digamma and i0 on contiguous float32/bf16/f16 run
// cpu/unary.cc's Highway kernels), and signbit, isposinf, isneginf, isreal and
// nan_to_num. Bool and integer inputs compute in float32
// (square keeps integers), f16/bf16 in float, f64 in double; the special
// functions (erfinv, digamma, lgamma, i0, sinc) compute in double for every
// floating dtype and narrow on store.
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>

#include "core/dense_layout.h"
#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "cpu/special_math.h"
#include "cpu/unary.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class F {
  Acos,
  Asin,
  Atan,
  Acosh,
  Asinh,
  Atanh,
  Cosh,
  Sinh,
  Erf,
  Erfc,
  Erfinv,
  Lgamma,
  Digamma,
  Log10,
  Sinc,
  Deg2rad,
  Rad2deg,
  I0,
  Frac
};

constexpr bool has_complex(F k) { return k <= F::Sinh || k == F::Log10; }

template <F K, typename C>
C real_fn(C v) {
  if constexpr (K == F::Acos)
    return std::acos(v);
  else if constexpr (K == F::Asin)
    return std::asin(v);
  else if constexpr (K == F::Atan)
    return std::atan(v);
  else if constexpr (K == F::Acosh)
    return std::acosh(v);
  else if constexpr (K == F::Asinh)
    return std::asinh(v);
  else if constexpr (K == F::Atanh)
    return std::atanh(v);
  else if constexpr (K == F::Cosh)
    return std::cosh(v);
  else if constexpr (K == F::Sinh)
    return std::sinh(v);
  else if constexpr (K == F::Erf)
    return std::erf(v);
  else if constexpr (K == F::Erfc)
    return std::erfc(v);
  else if constexpr (K == F::Erfinv)
    return C(special::erfinv(double(v)));
  else if constexpr (K == F::Lgamma)
    return uop_scalar<UOp::Lgamma, C>(v);
  else if constexpr (K == F::Digamma)
    return uop_scalar<UOp::Digamma, C>(v);
  else if constexpr (K == F::Log10)
    return std::log10(v);
  else if constexpr (K == F::Sinc)
    return C(special::sinc(double(v)));
  else if constexpr (K == F::Deg2rad)
    return v * C(std::numbers::pi / 180.0);
  else if constexpr (K == F::Rad2deg)
    return v * C(180.0 / std::numbers::pi);
  else if constexpr (K == F::I0)
    return uop_scalar<UOp::I0, C>(v);
  else
    return v - std::trunc(v);  // Frac: inf gives NaN, as torch
}

template <F K, typename Z>
Z complex_fn(Z z) {
  if constexpr (K == F::Acos)
    return std::acos(z);
  else if constexpr (K == F::Asin)
    return std::asin(z);
  else if constexpr (K == F::Atan)
    return std::atan(z);
  else if constexpr (K == F::Acosh)
    return std::acosh(z);
  else if constexpr (K == F::Asinh)
    return std::asinh(z);
  else if constexpr (K == F::Atanh)
    return std::atanh(z);
  else if constexpr (K == F::Cosh)
    return std::cosh(z);
  else if constexpr (K == F::Sinh)
    return std::sinh(z);
  else
    return std::log10(z);
}

// out = K(x): out has x's shape; its dtype is x's, or float32 for bool/integer x.
template <F K>
void run(const Tensor& x, const Tensor& out) {
  // erf, lgamma, digamma and i0 on contiguous float32 / bf16 / f16: the Highway
  // kernels (cpu/unary.cc).
  constexpr UOp kSimd = K == F::Erf      ? UOp::Erf
                        : K == F::Lgamma ? UOp::Lgamma
                        : K == F::I0     ? UOp::I0
                                         : UOp::Digamma;
  if constexpr (K == F::Erf || K == F::Lgamma || K == F::Digamma || K == F::I0)
    if (x.dtype() == out.dtype() && same_dense_layout(x, out) && unary_has_kernel(kSimd, x.dtype()))
      return unary_contiguous(kSimd, x.dtype(), x.data_ptr(), out.data_ptr(), x.numel());
  constexpr DTypeSet kIn = kBoolSet | kIntSet | kFloatSet | (has_complex(K) ? kComplexSet : 0);
  dispatch<kIn>(x.dtype(), "unary", [&]<typename In>() {
    if constexpr (is_complex_v<In>) {
      unary_loop<In, In>(out, x, [](In z) { return complex_fn<K>(z); });
    } else {
      using Out = std::conditional_t<is_float_v<In>, In, float>;
      using C = compute_t<Out>;
      unary_loop<Out, In>(out, x, [](In v) { return Out(real_fn<K, C>(cast<C>(v))); });
    }
  });
}

void logit(const Tensor& x, const Tensor& out, double eps) {
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), "logit", [&]<typename In>() {
    using Out = std::conditional_t<is_float_v<In>, In, float>;
    using C = compute_t<Out>;
    const C lo = C(eps), hi = C(1) - C(eps);
    unary_loop<Out, In>(out, x, [eps, lo, hi](In v) {
      C z = cast<C>(v);
      if (eps >= 0) z = z < lo ? lo : (z > hi ? hi : z);  // NaN stays NaN
      return Out(std::log(z / (C(1) - z)));
    });
  });
}

// x * x; integers wrap (computed unsigned), bool gives int64 (out's dtype).
void square(const Tensor& x, const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet | kComplexSet>(x.dtype(), "square", [&]<typename In>() {
    if constexpr (std::is_same_v<In, bool>) {
      unary_loop<int64_t, bool>(out, x, [](bool v) { return int64_t(v); });
    } else if constexpr (std::is_integral_v<In>) {
      using U = std::make_unsigned_t<std::common_type_t<In, unsigned>>;
      unary_loop<In, In>(out, x, [](In v) { return In(U(v) * U(v)); });
    } else {
      using C = compute_t<In>;
      unary_loop<In, In>(out, x, [](In v) {
        const C c = cast<C>(v);
        return In(c * c);
      });
    }
  });
}

// Real: -1, 0, +1 in x's dtype (NaN gives 0, as sign); complex: z / |z|, 0 at 0.
void sgn(const Tensor& x, const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet | kComplexSet>(x.dtype(), "sgn", [&]<typename T>() {
    if constexpr (is_complex_v<T>) {
      unary_loop<T, T>(out, x, [](T z) { return z == T(0) ? T(0) : z / std::abs(z); });
    } else if constexpr (std::is_same_v<T, bool>) {
      unary_loop<T, T>(out, x, [](T v) { return v; });
    } else {
      using C = compute_t<T>;
      unary_loop<T, T>(out, x, [](T v) {
        const C c = cast<C>(v);
        return T(C((C(0) < c) - (c < C(0))));
      });
    }
  });
}

namespace detail {
template <typename T>
bool top_bit(T v) {
  using U =
      std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  U u;
  std::memcpy(&u, &v, sizeof(T));
  return (u >> (8 * sizeof(T) - 1)) != 0;
}
}  // namespace detail

// signbit, isposinf, isneginf (real x; bool out) and isreal (any x; bool out).
enum class P { Signbit, IsPosInf, IsNegInf, IsReal };

template <P K>
void predicate(const Tensor& x, const Tensor& out) {
  constexpr DTypeSet kIn = kBoolSet | kIntSet | kFloatSet | (K == P::IsReal ? kComplexSet : 0);
  dispatch<kIn>(x.dtype(), "unary", [&]<typename T>() {
    unary_loop<bool, T>(out, x, [](T v) {
      if constexpr (K == P::IsReal) {
        if constexpr (is_complex_v<T>)
          return v.imag() == 0;
        else
          return true;
      } else if constexpr (std::is_same_v<T, bool>) {
        return false;
      } else {
        const compute_t<T> c = cast<compute_t<T>>(v);
        constexpr auto inf = std::numeric_limits<compute_t<T>>::infinity();
        if constexpr (K == P::Signbit) {
          // The storage's top bit (as std::signbit, for every float width;
          // gcc 12 fails to compile std::signbit of a widened bfloat16 here).
          if constexpr (std::is_integral_v<T>)
            return c < 0;
          else
            return detail::top_bit(v);
        } else if constexpr (K == P::IsPosInf) {
          if constexpr (std::is_integral_v<T>)
            return false;
          else
            return c == inf;
        } else {
          if constexpr (std::is_integral_v<T>)
            return false;
          else
            return c == -inf;
        }
      }
    });
  });
}

// Floating x only (the front-end copies integers): NaN, +inf, -inf replaced.
void nan_to_num(const Tensor& x, const Tensor& out, double nan, double posinf, double neginf) {
  dispatch<kFloatSet>(x.dtype(), "nan_to_num", [&]<typename T>() {
    const T n = cast<T>(nan), p = cast<T>(posinf), m = cast<T>(neginf);
    unary_loop<T, T>(out, x, [n, p, m](T v) {
      const compute_t<T> c = cast<compute_t<T>>(v);
      if (std::isnan(c)) return n;
      if (std::isinf(c)) return c > 0 ? p : m;
      return v;
    });
  });
}

}  // namespace

void register_unary_extra_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::acos.set_kernel(kCpu, run<F::Acos>);
  ops::asin.set_kernel(kCpu, run<F::Asin>);
  ops::atan.set_kernel(kCpu, run<F::Atan>);
  ops::acosh.set_kernel(kCpu, run<F::Acosh>);
  ops::asinh.set_kernel(kCpu, run<F::Asinh>);
  ops::atanh.set_kernel(kCpu, run<F::Atanh>);
  ops::cosh.set_kernel(kCpu, run<F::Cosh>);
  ops::sinh.set_kernel(kCpu, run<F::Sinh>);
  ops::erf.set_kernel(kCpu, run<F::Erf>);
  ops::erfc.set_kernel(kCpu, run<F::Erfc>);
  ops::erfinv.set_kernel(kCpu, run<F::Erfinv>);
  ops::lgamma.set_kernel(kCpu, run<F::Lgamma>);
  ops::digamma.set_kernel(kCpu, run<F::Digamma>);
  ops::log10.set_kernel(kCpu, run<F::Log10>);
  ops::sinc.set_kernel(kCpu, run<F::Sinc>);
  ops::deg2rad.set_kernel(kCpu, run<F::Deg2rad>);
  ops::rad2deg.set_kernel(kCpu, run<F::Rad2deg>);
  ops::i0.set_kernel(kCpu, run<F::I0>);
  ops::frac.set_kernel(kCpu, run<F::Frac>);
  ops::logit.set_kernel(kCpu, logit);
  ops::square.set_kernel(kCpu, square);
  ops::sgn.set_kernel(kCpu, sgn);
  ops::signbit.set_kernel(kCpu, predicate<P::Signbit>);
  ops::isposinf.set_kernel(kCpu, predicate<P::IsPosInf>);
  ops::isneginf.set_kernel(kCpu, predicate<P::IsNegInf>);
  ops::isreal.set_kernel(kCpu, predicate<P::IsReal>);
  ops::nan_to_num.set_kernel(kCpu, nan_to_num);
}

}  // namespace kiln::cpu
