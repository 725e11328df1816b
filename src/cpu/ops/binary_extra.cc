// CPU kernels of hypot, logaddexp, logaddexp2, xlogy, fmax, fmin, gcd, lcm,
// ldexp, nextafter, float_power and isclose (ops/registry/binary_extra.h):
// scalar bodies over the binary loop (no Highway kernels yet), computed in
// float for f16/bf16 and narrowed on store.
#include "ops/registry/all.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "cpu/ops/binary_loop.h"

namespace kiln::cpu {
namespace {

enum class F { Hypot, LogAddExp, LogAddExp2, Xlogy, Ldexp, Fmax, Fmin, FloatPower };

template <F K, typename C>
C apply(C x, C y) {
  if constexpr (K == F::Hypot) {
    return std::hypot(x, y);
  } else if constexpr (K == F::LogAddExp || K == F::LogAddExp2) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
    const C m = x > y ? x : y;
    if (std::isinf(m) && x == y) return m;  // both +inf or both -inf
    const C d = -std::fabs(x - y);
    if constexpr (K == F::LogAddExp)
      return m + std::log1p(std::exp(d));
    else
      return m + std::log1p(std::exp2(d)) / C(0.693147180559945309417232121458176568);
  } else if constexpr (K == F::Xlogy) {
    if (std::isnan(y)) return y;
    if (x == C(0)) return C(0);
    return x * std::log(y);
  } else if constexpr (K == F::Ldexp) {
    return x * std::exp2(y);
  } else if constexpr (K == F::Fmax || K == F::Fmin) {
    if constexpr (std::is_floating_point_v<C>)
      return K == F::Fmax ? std::fmax(x, y) : std::fmin(x, y);
    else
      return K == F::Fmax ? (x < y ? y : x) : (y < x ? y : x);
  } else {
    return std::pow(x, y);
  }
}

template <F K>
void float_kernel(const Operand& a, const Operand& b, const Tensor& out) {
  constexpr DTypeSet kSet = K == F::FloatPower               ? bit(DType::Float64) | bit(DType::Complex128)
                            : (K == F::Fmax || K == F::Fmin) ? kBoolSet | kIntSet | kFloatSet
                                                             : kFloatSet;
  dispatch<kSet>(out.dtype(), "binary", [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_complex_v<T>)
      run<T, T, T>(out, a, b, [](C x, C y) { return C(std::pow(x, y)); });
    else
      run<T, T, T>(out, a, b, [](C x, C y) { return C(apply<K>(x, y)); });
  });
}

// |gcd| and |lcm| of integers (lcm 0 when either is 0), wrapping as torch.
template <bool kLcm>
void gcd_lcm(const Operand& a, const Operand& b, const Tensor& out) {
  dispatch<kIntSet>(out.dtype(), kLcm ? "lcm" : "gcd", [&]<typename T>() {
    using U = std::make_unsigned_t<T>;
    run<T, T, T>(out, a, b, [](T x, T y) -> T {
      U ux = U(x), uy = U(y);
      if constexpr (std::is_signed_v<T>) {
        if (x < 0) ux = U(-ux);
        if (y < 0) uy = U(-uy);
      }
      const U g = std::gcd(ux, uy);
      if constexpr (!kLcm)
        return T(g);
      else
        return g == 0 ? T(0) : T(U(ux / g * uy));
    });
  });
}

// The next representable value after x toward y, by stepping x's storage bits
// (IEEE-like for every float width kiln has).
template <typename T>
T next_after(T xv, T yv) {
  using C = compute_t<T>;
  const C x = C(xv), y = C(yv);
  if (std::isnan(x) || std::isnan(y)) return T(x + y);
  if (x == y) return yv;
  using U =
      std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  U u;
  if (x == 0) {
    u = 1;  // the smallest subnormal, with y's sign
    if (y < 0) u |= U(U(1) << (8 * sizeof(T) - 1));
  } else {
    std::memcpy(&u, &xv, sizeof(T));
    u = ((x < y) == (x > 0)) ? U(u + 1) : U(u - 1);
  }
  T r;
  std::memcpy(&r, &u, sizeof(T));
  return r;
}

void nextafter(const Operand& a, const Operand& b, const Tensor& out) {
  dispatch<kFloatSet>(out.dtype(), "nextafter", [&]<typename T>() {
    using C = compute_t<T>;
    run<T, T, T>(out, a, b, [](C x, C y) { return C(next_after(T(x), T(y))); });
  });
}

// |a - b| <= atol + rtol |b|, or a == b; NaNs close only with equal_nan.
void isclose(const Operand& a, const Operand& b, double rtol, double atol, bool equal_nan,
             const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet | kComplexSet>(a.dtype, "isclose", [&]<typename T>() {
    using C = compute_t<T>;
    run<bool, T, T>(out, a, b, [rtol, atol, equal_nan](C x, C y) -> bool {
      if constexpr (is_complex_v<C>) {
        if (x == y) return true;
        const bool nx = std::isnan(x.real()) || std::isnan(x.imag());
        const bool ny = std::isnan(y.real()) || std::isnan(y.imag());
        if (nx || ny) return equal_nan && nx && ny;
        const double d = double(std::abs(x - y));
        return std::isfinite(d) && d <= atol + rtol * double(std::abs(y));
      } else if constexpr (std::is_floating_point_v<C>) {
        if (x == y) return true;
        if (std::isnan(x) || std::isnan(y)) return equal_nan && std::isnan(x) && std::isnan(y);
        const C d = std::fabs(x - y);
        return std::isfinite(d) && d <= C(atol + rtol * std::fabs(double(y)));
      } else {
        const double dx = double(x), dy = double(y);
        return std::fabs(dx - dy) <= atol + rtol * std::fabs(dy);
      }
    });
  });
}

}  // namespace

void register_binary_extra_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::hypot.set_kernel(kCpu, float_kernel<F::Hypot>);
  ops::logaddexp.set_kernel(kCpu, float_kernel<F::LogAddExp>);
  ops::logaddexp2.set_kernel(kCpu, float_kernel<F::LogAddExp2>);
  ops::xlogy.set_kernel(kCpu, float_kernel<F::Xlogy>);
  ops::ldexp.set_kernel(kCpu, float_kernel<F::Ldexp>);
  ops::fmax.set_kernel(kCpu, float_kernel<F::Fmax>);
  ops::fmin.set_kernel(kCpu, float_kernel<F::Fmin>);
  ops::float_power.set_kernel(kCpu, float_kernel<F::FloatPower>);
  ops::gcd.set_kernel(kCpu, gcd_lcm<false>);
  ops::lcm.set_kernel(kCpu, gcd_lcm<true>);
  ops::nextafter.set_kernel(kCpu, nextafter);
  ops::isclose.set_kernel(kCpu, isclose);
}

}  // namespace kiln::cpu
