// Scalar special functions in double for kiln.special's Bessel, Airy, normal
// quantile, Hurwitz zeta, polygamma and incomplete gamma kernels
// (cpu/ops/special.cc), with SciPy's (and torch's) values at the poles, edges
// and infinities. The Bessel functions of integer order lean on the C++17
// library's cyl_bessel_* (which throw outside their domain: every argument is
// checked first); their exponentially scaled forms switch to the large-argument
// asymptotic series where the unscaled ones overflow or underflow.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

#include "cpu/bessel_k_cheb.h"
#include "cpu/special_math.h"

namespace kiln::cpu::special {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Bessel functions of the first and second kind ----------------------------

// Hankel's large-argument form of J_n and Y_n (n = 0, 1) for x >= 25:
// sqrt(2 / (pi x)) (P cos chi - Q sin chi) and (P sin chi + Q cos chi), chi =
// x - (2n + 1) pi / 4, P and Q the even and odd parts of sum_k (-1)^k c_k / x^k
// with c_k = prod_{j<=k} (4n^2 - (2j - 1)^2) / (8 j) (the smallest term at
// x = 25 is ~e^-50). cos chi and sin chi come from cos x and sin x of the
// double x, so the phase is exact however large x is.
inline void bessel_hankel(double n, double x, double* j, double* y) {
  const double mu = 4.0 * n * n;
  double p = 1.0, q = 0.0, term = 1.0;
  for (int k = 1; k < 60; ++k) {
    term *= (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    const double signed_term = (k / 2) % 2 == 0 ? term : -term;  // (-1)^floor(k/2)
    if (k % 2 == 0)
      p += signed_term;
    else
      q += signed_term;
    if (std::fabs(term) < 1e-17) break;
  }
  // chi = x - phase: cos chi = cos x cos phase + sin x sin phase, sin alike.
  const double c = std::cos(x), s = std::sin(x), phase = (2 * n + 1) * std::numbers::pi / 4;
  const double cp = std::cos(phase), sp = std::sin(phase);
  const double cc = c * cp + s * sp, sc = s * cp - c * sp;
  const double amp = std::sqrt(2 / (std::numbers::pi * x));
  if (j) *j = amp * (p * cc - q * sc);
  if (y) *y = amp * (p * sc + q * cc);
}

// +-inf gives NaN (torch's and SciPy's value) for J, Y, I_1 and Ai.
inline double bessel_j(int n, double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  const double a = std::fabs(x);
  double r;
  if (a >= 25)
    bessel_hankel(n, a, &r, nullptr);
  else
    r = std::cyl_bessel_j(double(n), a);
  return (n == 1 && x < 0) ? -r : r;
}

// Y_n is real only for x > 0: NaN below, -inf at 0.
inline double bessel_y(int n, double x) {
  if (std::isnan(x) || x < 0 || std::isinf(x)) return kNaN;
  if (x == 0) return -kInf;
  if (x >= 25) {
    double r;
    bessel_hankel(n, x, nullptr, &r);
    return r;
  }
  return std::cyl_neumann(double(n), x);
}

// ---- modified Bessel functions ------------------------------------------------

// e^-|x| I_n(|x|) (times sign(x) for odd n), n = 0 or 1; 0 at +-inf.
inline double bessel_ie(int n, double x) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(x);
  const double r = std::isinf(a) ? 0.0 : bessel_ie_pos(n, a);
  return (n == 1 && x < 0) ? -r : r;
}

// I_1: odd, inf past the overflow, NaN at +-inf.
inline double bessel_i1(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  const double a = std::fabs(x);
  const double r = a > 714.0 ? kInf : bessel_i_pos(1, a);
  return x < 0 ? -r : r;
}

// K_n, n = 0 or 1, for x > 0 (inf at 0, NaN below); scaled: e^x K_n(x).
// Chebyshev series fitted against mpmath (cpu/bessel_k_cheb.h,
// scripts/fit-bessel-k): up to 2, K_n less its log(x / 2) I_n(x) part, a
// series in x^2 / 2 - 1; up to 8, e^x K_n in (x - 5) / 3; above, sqrt(x) e^x K_n
// in 16 / x - 1. Within 4 ulps of mpmath (scripts/special-accuracy).
inline double bessel_k(int n, double x, bool scaled) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0.0;
  if (x <= 2.0) {
    const double t = x * x / 2 - 1, l = std::log(x / 2);
    const double k = n == 0 ? chebyshev(cheb::kK0Small, t) - l * bessel_i_pos(0, x)
                            : chebyshev(cheb::kK1Small, t) / x + l * bessel_i_pos(1, x);
    return scaled ? std::exp(x) * k : k;
  }
  double ke;
  if (x <= 8.0) {
    const double t = (x - 5) / 3;
    ke = n == 0 ? chebyshev(cheb::kK0eMid, t) : chebyshev(cheb::kK1eMid, t);
  } else {
    const double t = 16 / x - 1;
    ke = (n == 0 ? chebyshev(cheb::kK0eLarge, t) : chebyshev(cheb::kK1eLarge, t)) / std::sqrt(x);
  }
  return scaled ? ke : std::exp(-x) * ke;  // 0 past x ~ 745
}

// ---- Airy Ai -------------------------------------------------------------------

// Ai(x): its Maclaurin series for |x| <= 1, else sqrt(x / 3) K_1/3(z) / pi for
// x > 0 and Ai(-t) = sqrt(t) (J_1/3(z) - Y_1/3(z) / sqrt(3)) / 2, z = 2/3 |x|^3/2.
inline double airy_ai(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  constexpr double c1 = 0.35502805388781723926, c2 = 0.25881940379280679840;  // Ai(0), -Ai'(0)
  if (std::fabs(x) <= 1) {
    // Ai = c1 f - c2 g with f'' = x f, f(0) = 1, f'(0) = 0 and g(0) = 0, g'(0) = 1:
    // f = sum x^3k / ((2 3)(5 6)...), g = sum x^(3k+1) / ((3 4)(6 7)...).
    const double x3 = x * x * x;
    double f = 1, g = x, tf = 1, tg = x;
    for (int k = 0; k < 30; ++k) {
      tf *= x3 / ((3.0 * k + 2) * (3.0 * k + 3));
      tg *= x3 / ((3.0 * k + 3) * (3.0 * k + 4));
      f += tf;
      g += tg;
      if (std::fabs(tf) < 1e-18 && std::fabs(tg) < 1e-18) break;
    }
    return c1 * f - c2 * g;
  }
  const double t = std::fabs(x), z = 2.0 / 3.0 * t * std::sqrt(t);
  if (x > 0) return z > 700.0 ? 0.0 : std::sqrt(x / 3.0) * std::cyl_bessel_k(1.0 / 3.0, z) / std::numbers::pi;
  double j, y;
  if (z >= 25) {
    bessel_hankel(1.0 / 3.0, z, &j, &y);
  } else {
    j = std::cyl_bessel_j(1.0 / 3.0, z);
    y = std::cyl_neumann(1.0 / 3.0, z);
  }
  return std::sqrt(t) * (j - y / std::sqrt(3.0)) / 2;
}

// ---- the normal quantile -------------------------------------------------------

// ndtri(p): the x with Phi(x) = p. A start from erfinv (or, in the tails,
// Abramowitz & Stegun 26.2.23), then Halley steps on Phi(x) - q computed with
// erfc on the lower tail (q = min(p, 1 - p), 1 - p exact for p >= 1/2).
inline double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  const double q = p < 0.5 ? p : 1.0 - p;
  double x;
  if (q > 0.02) {
    x = std::numbers::sqrt2 * erfinv(2 * q - 1);
  } else {
    const double t = std::sqrt(-2 * std::log(q));
    x = -(t -
          (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  }
  if (q < 1e-280) {
    // Far in the tail Phi(x)'s density underflows (x < -38.5 at q < 1e-322):
    // Newton on log Phi(x) = log q instead, with log Phi(x) = log(erfcx(z) / 2)
    // - x^2 / 2 and (log Phi)' = sqrt(2 / pi) / erfcx(z), z = -x / sqrt 2 > 25,
    // where erfcx(z) = sum_k (-1)^k (2k-1)!! / (2 z^2)^k / (z sqrt pi) to 1e-17.
    const double lq = std::log(q);
    for (int i = 0; i < 6; ++i) {
      const double z = -x / std::numbers::sqrt2, inv = 1 / (2 * z * z);
      double term = 1, series = 1;
      for (int k = 1; k < 12; ++k) series += (term *= -(2.0 * k - 1) * inv);
      const double erfcx = series / (z * std::sqrt(std::numbers::pi));
      const double step = (std::log(erfcx / 2) - 0.5 * x * x - lq) * erfcx / std::sqrt(2 / std::numbers::pi);
      x -= step;
      if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
    }
    return p < 0.5 ? x : -x;
  }
  for (int i = 0; i < 4; ++i) {
    const double f = 0.5 * std::erfc(-x / std::numbers::sqrt2) - q;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
    if (phi == 0) break;
    const double u = f / phi;
    x -= u / (1 + 0.5 * x * u);
  }
  return p < 0.5 ? x : -x;
}

// ---- Hurwitz zeta and polygamma ------------------------------------------------

// zeta(x, q) = sum_k (q + k)^-x: the first terms summed, the rest by the
// Euler-Maclaurin formula at w = q + N >= max(9, x) (twelve Bernoulli terms).
// x == 1: inf; x < 1: NaN; q a pole (an integer <= 0): inf; q < 0 with
// non-integer x: NaN (q^-x is not real). SciPy's conventions.
inline double zeta(double x, double q) {
  if (std::isnan(x) || std::isnan(q)) return kNaN;
  if (x == 1) return kInf;
  if (x < 1) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (x != std::floor(x)) return kNaN;
  }
  if (std::isinf(q)) return 0.0;
  if (x == kInf) return q == 1 ? 1.0 : (q < 1 ? kInf : 0.0);
  double sum = 0;
  if (x > 60) {  // the terms fall so fast that the plain sum converges at once
    for (int k = 0; k < 100000; ++k) {
      const double term = std::pow(q + k, -x);
      sum += term;
      if (q + k > 0 && std::fabs(term) <= 1e-18 * std::fabs(sum)) break;
    }
    return sum;
  }
  // w = q + n must reach max(9, x): |q| terms for a negative q. Past 10^9
  // of them (q < -1e9) the sum is refused (NaN) rather than run for minutes.
  if (q < -1e9) return kNaN;
  const int64_t n = int64_t(std::ceil(std::max(9.0, x) - std::min(q, 0.0)));
  for (int64_t k = 0; k < n; ++k) sum += std::pow(q + double(k), -x);
  const double w = q + n;
  // B_2j / (2j)!, j = 1..12
  static constexpr double kB[12] = {8.333333333333333e-02,  -1.388888888888889e-03,  3.306878306878307e-05,
                                    -8.267195767195768e-07, 2.08767569878681e-08,    -5.284190138687493e-10,
                                    1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
                                    -2.174868698558062e-16, 5.5090028283602295e-18,  -1.3954464685812522e-19};
  double tail = std::pow(w, 1 - x) / (x - 1) + 0.5 * std::pow(w, -x);
  double rising = x;  // x (x + 1) ... (x + 2j - 2)
  double wp = std::pow(w, -x - 1);
  for (int j = 0; j < 12; ++j) {
    const double term = kB[j] * rising * wp;
    tail += term;
    if (std::fabs(term) < 1e-18 * std::fabs(sum + tail)) break;
    rising *= (x + 2 * j + 1) * (x + 2 * j + 2);
    wp /= w * w;
  }
  return sum + tail;
}

// polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, digamma for 0.
inline double polygamma(int64_t n, double x) {
  if (n < 0) return kNaN;
  if (n == 0) return digamma(x);
  const double factorial = std::exp(std::lgamma(double(n) + 1));
  const double z = zeta(double(n) + 1, x);
  return (n % 2 == 1 ? 1.0 : -1.0) * factorial * z;
}

// ---- regularized incomplete gamma ----------------------------------------------

// log(1 + t) - t without the cancellation of the two for small t.
inline double log1pmx(double t) {
  if (std::fabs(t) > 0.25) return std::log1p(t) - t;
  double term = t, sum = 0;  // term: (-1)^(k+1) t^k
  for (int k = 2; k < 200; ++k) {
    term *= -t;
    const double d = term / k;
    sum += d;
    if (std::fabs(d) < 1e-18 * std::fabs(sum)) break;
  }
  return sum;
}

// log(x^a e^-x / Gamma(a)). For a >= 10, with x = a (1 + t) and Stirling's
// series for lgamma: a log1pmx(t) + log(a / 2 pi) / 2 - (its remainder), which
// keeps the digits that a log(x) - x - lgamma(a) (each ~a) would cancel.
inline double log_gamma_prefactor(double a, double x) {
  if (a < 10) return a * std::log(x) - x - lgamma(a);
  const double r = 1 / a, r2 = r * r;
  // lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2), to r^13 (< 1e-17 at a = 10)
  const double stirling =
      r *
      (1.0 / 12 -
       r2 * (1.0 / 360 -
             r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 * (1.0 / 1188 - r2 * (691.0 / 360360 - r2 / 156.0))))));
  // Near x = a the log1pmx form; away from it a log(x / a) + a - x, since
  // forming 1 + t = x / a from t would cost digits when x << a.
  const double main = std::fabs(x - a) < 0.3 * a ? a * log1pmx((x - a) / a) : a * std::log(x / a) + (a - x);
  return main + 0.5 * std::log(a / (2 * std::numbers::pi)) - stirling;
}

// P(a, x) (upper = false) or Q(a, x) = 1 - P: the series of P below x = a + 1,
// the continued fraction of Q (modified Lentz) above, the other one as the
// complement. The prefactor x^a e^-x / Gamma(a) is taken in logs.
inline double gammainc(double a, double x, bool upper) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return kNaN;
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : kNaN;
  if (x == 0) return upper ? 1.0 : 0.0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : (upper ? 1.0 : 0.0);
  if (std::isinf(x)) return upper ? 0.0 : 1.0;
  const double log_pre = log_gamma_prefactor(a, x);
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int k = 1; k < 100000; ++k) {
      term *= x / (a + k);
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    const double p = std::exp(log_pre) * sum;
    return upper ? 1.0 - p : p;
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int k = 1; k < 100000; ++k) {
    const double an = -k * (k - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  const double qv = std::exp(log_pre) * h;
  return upper ? qv : 1.0 - qv;
}

}  // namespace kiln::cpu::special
