// Scalar special functions in double that the C++ library lacks (erfinv,
// digamma, i0 and the scaled I_0 / I_1, sinc) or has only in a thread-unsafe form (lgamma sets the
// global signgam), with torch's values at the poles and edges.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

#include "cpu/bessel_i_cheb.h"

namespace kiln::cpu::special {

inline double lgamma(double x) {
  int sign;
  return ::lgamma_r(x, &sign);
}

// sin(pi x) / (pi x), 1 at 0; NaN for +-inf.
inline double sinc(double x) {
  if (x == 0) return 1.0;
  const double px = std::numbers::pi * x;
  return std::sin(px) / px;
}

// erfinv(y): Giles' single-precision polynomial (2010) as the start, then
// Newton steps on erf (on log erfc above 0.5, where 1 - y is exact). +-1 -> +-inf,
// |y| > 1 -> NaN.
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1 || y == -1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  if (y == 0) return y;  // keeps -0
  const double a = std::fabs(y);
  double w = -std::log((1.0 - a) * (1.0 + a)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * a;
  const double k = 2.0 / std::sqrt(std::numbers::pi);
  if (a < 0.5) {
    for (int i = 0; i < 2; ++i) x -= (std::erf(x) - a) / (k * std::exp(-x * x));
    return std::copysign(x, y);
  }
  // Above 0.5, Newton on log(erfc(x)) = log(1 - a) (1 - a exact): nearly
  // linear in x, so it converges from the single-precision start even where
  // erfc is tiny (1 - a ~ 1e-16, x ~ 5.9), which plain Newton on erfc does not.
  const double lq = std::log(1.0 - a);
  for (int i = 0; i < 6; ++i) {
    const double e = std::erfc(x);
    const double step = (std::log(e) - lq) * e / (k * std::exp(-x * x));
    x += step;
    if (std::fabs(step) <= 1e-17 * x) break;
  }
  return std::copysign(x, y);
}

// digamma(x): reflection for x < 0, the recurrence up to x >= 10, then the
// asymptotic series. +-0 -> -+inf, negative integers and -inf -> NaN (torch).
inline double digamma(double x) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (x == 0) return std::copysign(kInf, -x);
  if (std::isnan(x) || x == -kInf) return std::numeric_limits<double>::quiet_NaN();
  if (x == kInf) return kInf;
  double r = 0;
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi, so use g = x -
    // round(x), exact (|g| <= 0.5; x - floor(x) would round to 1 for x just
    // below 0 and lose the pole): near a pole -pi / tan(pi g) ~ -1 / g.
    const double g = x - std::nearbyint(x);
    r = -std::numbers::pi / std::tan(std::numbers::pi * g);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    r -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  const double s =
      z * (1.0 / 12 -
           z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760))))));
  return r + std::log(x) - 0.5 / x - s;
}

// sum_k c[k] T_k(t), |t| <= 1, by Clenshaw's recurrence.
template <size_t N>
inline double chebyshev(const double (&c)[N], double t) {
  double b1 = 0, b2 = 0;
  for (size_t k = N - 1; k >= 1; --k) {
    const double b0 = 2 * t * b1 - b2 + c[k];
    b2 = b1;
    b1 = b0;
  }
  return t * b1 - b2 + c[0];
}

// e^-a I_n(a), n = 0 or 1, for finite a >= 0: Chebyshev series fitted
// against mpmath (cpu/bessel_i_cheb.h, scripts/fit-bessel-i): in x / 2 - 1
// up to 4 (I_1 as a times a series, so it keeps its accuracy down to the
// subnormals), in x / 2 - 3 up to 8, and in 16 / x - 1 above, times 1 / sqrt(x).
inline double bessel_ie_pos(int n, double a) {
  if (a <= 4.0) {
    const double t = a / 2 - 1;
    return n == 0 ? chebyshev(cheb::kI0eSmall, t) : a * chebyshev(cheb::kI1eSmall, t);
  }
  if (a <= 8.0) {
    const double t = a / 2 - 3;
    return chebyshev(n == 0 ? cheb::kI0eMid : cheb::kI1eMid, t);
  }
  const double t = 16.0 / a - 1;
  return (n == 0 ? chebyshev(cheb::kI0eLarge, t) : chebyshev(cheb::kI1eLarge, t)) / std::sqrt(a);
}

// I_n(a) = e^a (e^-a I_n(a)) for finite a >= 0: e^a in two halves past
// 709, where it overflows while I_n does not yet (I_n overflows past ~713.98).
inline double bessel_i_pos(int n, double a) {
  const double s = bessel_ie_pos(n, a);
  if (a <= 709.0) return std::exp(a) * s;
  const double h = std::exp(a / 2);
  return h * (s * h);
}

// i0(x), the modified Bessel function of the first kind of order 0: even,
// inf past its overflow and at +-inf.
inline double i0(double x) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(x);
  if (a > 714.0) return std::numeric_limits<double>::infinity();
  return bessel_i_pos(0, a);
}

}  // namespace kiln::cpu::special
