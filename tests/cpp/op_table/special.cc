// Op table entries of kiln.special's Bessel, Airy, ndtri, zeta, polygamma and
// incomplete gamma ops (ops/registry/special.h), against float64 oracles
// computed from other definitions than the kernels use: J and I from their
// integral representations (trapezoid sums over a period, which converge
// geometrically), K from its double-exponentially decaying integral, Y from
// its power series in long double, Ai from its Maclaurin series, ndtri by bisection of
// erfc, zeta and polygamma by direct summation with an integral tail, and the
// incomplete gamma from its power series in long double.
#include "kiln/special.h"

#include <cmath>
#include <numbers>

#include "op_table/binary.h"
#include "op_table/unary_entry.h"

namespace op_table {
namespace {

using namespace kiln;
using std::numbers::pi;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// (1/pi) int_0^pi f(t) dt by the trapezoid rule on m intervals.
template <typename F>
double over_pi(F f, int m = 400) {
  double s = 0.5 * (f(0.0) + f(pi));
  for (int i = 1; i < m; ++i) s += f(pi * i / m);
  return s / m;
}

// int_0^T f(t) dt by the trapezoid rule, step h.
template <typename F>
double to_infinity(F f, double T, double h = 1e-3) {
  const int m = int(T / h) + 1;
  double s = 0.5 * f(0.0);
  for (int i = 1; i <= m; ++i) s += f(i * h);
  return s * h;
}

double jn(int n, double x) {
  return over_pi([&](double t) { return std::cos(n * t - x * std::sin(t)); });
}

// Y_0 and Y_1 from their power series (Abramowitz & Stegun 9.1.13, 9.1.11),
// in long double: at x = 8 the largest terms are ~100, so the cancellation
// costs ~7 bits of long double's 64.
long double j_series(int n, long double x) {
  long double s = 0, term = std::pow(x / 2, (long double)n) / std::tgamma((long double)n + 1);
  for (int k = 0; k < 80; ++k) {
    s += term;
    term *= -(x * x / 4) / ((k + 1.0L) * (k + 1.0L + n));
  }
  return s;
}

double yn(int n, double xd) {
  if (xd < 0) return kNaN;
  if (xd == 0) return -INFINITY;
  const long double x = xd, g = 0.57721566490153286060651209L, pil = 3.14159265358979323846264338L;
  const long double q = x * x / 4;
  long double s = 0;
  if (n == 0) {
    long double h = 0, term = 1;  // term: q^k / (k!)^2
    for (int k = 1; k < 80; ++k) {
      h += 1.0L / k;
      term *= q / ((long double)k * k);
      s += (k % 2 ? 1 : -1) * h * term;
    }
    return double(2 / pil * ((std::log(x / 2) + g) * j_series(0, x) + s));
  }
  long double h = 0, term = x / 2;  // term: (x/2)^(2k+1) / (k! (k+1)!)
  for (int k = 0; k < 80; ++k) {
    const long double psi = 2 * (h - g) + 1.0L / (k + 1);  // psi(k + 1) + psi(k + 2)
    s += (k % 2 ? -1 : 1) * psi * term;
    h += 1.0L / (k + 1);
    term *= q / ((k + 1.0L) * (k + 2.0L));
  }
  return double(2 / pil * std::log(x / 2) * j_series(1, x) - 2 / (pil * x) - s / pil);
}

// e^-|x| I_n(|x|) = (1/pi) int_0^pi e^(|x| (cos t - 1)) cos(n t) dt.
double ie(int n, double x) {
  const double r =
      over_pi([&](double t) { return std::exp(std::fabs(x) * (std::cos(t) - 1)) * std::cos(n * t); });
  return (n == 1 && x < 0) ? -r : r;
}

// e^x K_n(x) = int_0^inf e^(-x (cosh t - 1)) cosh(n t) dt.
double ke(int n, double x) {
  if (x < 0) return kNaN;
  if (x == 0) return INFINITY;
  return to_infinity([&](double t) { return std::exp(-x * (std::cosh(t) - 1)) * std::cosh(n * t); },
                     std::acosh(1 + 60.0 / x) + 1);
}

// Ai(x) = c1 f - c2 g from the Maclaurin series, in long double: at x = 4 the
// two parts are ~100 each and cancel to ~1e-3.
double airy(double xd) {
  const long double x = xd, c1 = 0.355028053887817239260063186L, c2 = 0.258819403792806798405183560L;
  long double f = 1, g = x, tf = 1, tg = x;
  for (int k = 0; k < 60; ++k) {
    tf *= x * x * x / ((3.0L * k + 2) * (3.0L * k + 3));
    tg *= x * x * x / ((3.0L * k + 3) * (3.0L * k + 4));
    f += tf;
    g += tg;
  }
  return double(c1 * f - c2 * g);
}

double ndtri(double p) {
  if (p <= 0 || p >= 1) return p == 0 ? -INFINITY : (p == 1 ? INFINITY : kNaN);
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::numbers::sqrt2) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// sum_{k < N} (q + k)^-x + the Euler-Maclaurin tail to first order.
double zeta(double x, double q) {
  const int N = 20000;
  long double s = 0;
  for (int k = 0; k < N; ++k) s += std::pow((long double)(q + k), (long double)-x);
  const long double w = q + N;
  s += std::pow(w, 1 - (long double)x) / (x - 1) + 0.5L * std::pow(w, (long double)-x) +
       (long double)x / 12 * std::pow(w, (long double)-x - 1);
  return double(s);
}

double polygamma(int n, double x) { return (n % 2 ? 1.0 : -1.0) * std::tgamma(n + 1.0) * zeta(n + 1.0, x); }

// P(a, x) = x^a e^-x sum_k x^k / Gamma(a + k + 1), in long double.
double gamma_p(double a, double x) {
  long double s = 0, term = 1.0L / std::tgamma((long double)a + 1);
  for (int k = 0; k < 400; ++k) {
    s += term;
    term *= (long double)x / (a + k + 1);
  }
  return double(s * std::pow((long double)x, (long double)a) * std::exp(-(long double)x));
}

const std::vector<DType> kSpecialDtypes = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};

Entry unary(const char* op, Tensor (*fn)(const Tensor&), double (*ref)(double), double lo, double hi,
            double ulps = 16, double floor = 1) {
  Entry e = unary_entry(op, fn, [ref](double v, DType) { return ref(v); }, kSpecialDtypes, lo, hi, {});
  e.ulps = ulps;
  e.floor = floor;
  return e;
}

double j0_ref(double x) { return jn(0, x); }
double j1_ref(double x) { return jn(1, x); }
double y0_ref(double x) { return yn(0, x); }
double y1_ref(double x) { return yn(1, x); }
double k0_ref(double x) { return ke(0, x) * std::exp(-x); }
double k1_ref(double x) { return ke(1, x) * std::exp(-x); }
double k0e_ref(double x) { return ke(0, x); }
double k1e_ref(double x) { return ke(1, x); }
double i0e_ref(double x) { return ie(0, x); }
double i1e_ref(double x) { return ie(1, x); }
double i1_ref(double x) { return ie(1, x) * std::exp(std::fabs(x)); }
Tensor polygamma1(const Tensor& x) { return special_polygamma(1, x); }
Tensor polygamma3(const Tensor& x) { return special_polygamma(3, x); }
double polygamma1_ref(double x) { return polygamma(1, x); }
double polygamma3_ref(double x) { return polygamma(3, x); }

Entry two(const char* op, Tensor (*fn)(const Tensor&, const Tensor&), double (*ref)(double, double),
          double lo, double hi) {
  Entry e = binary::tensors(
      op, {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}, lo, hi,
      [fn](const std::vector<Tensor>& x) { return fn(x[0], x[1]); },
      [ref](const std::vector<double>& a, const Tensor&) { return ref(a[0], a[1]); });
  e.ulps = 32;
  return e;
}

double gamma_q(double a, double x) { return 1 - gamma_p(a, x); }

// Tolerances: 16 ulps of the output dtype relative to max(|want|, 1) (absolute
// near the zeros of the oscillating ones); 64 where the library's K_nu (also
// behind Ai for x > 1) and I_1, or the oracle's own rounding, measured up to ~30
// (tests/python/test_special_bessel.py states each one's error against SciPy).
KILN_OP_TABLE({
    unary("special_bessel_j0", special_bessel_j0, j0_ref, -8, 8),
    unary("special_bessel_j1", special_bessel_j1, j1_ref, -8, 8),
    unary("special_bessel_y0", special_bessel_y0, y0_ref, 0.05, 8),
    unary("special_bessel_y1", special_bessel_y1, y1_ref, 0.05, 8),
    unary("special_modified_bessel_k0", special_modified_bessel_k0, k0_ref, 0.05, 8, 64, 1e-6),
    unary("special_modified_bessel_k1", special_modified_bessel_k1, k1_ref, 0.05, 8, 64, 1e-6),
    unary("special_scaled_modified_bessel_k0", special_scaled_modified_bessel_k0, k0e_ref, 0.05, 8, 64),
    unary("special_scaled_modified_bessel_k1", special_scaled_modified_bessel_k1, k1e_ref, 0.05, 8, 64),
    unary("special_i0e", special_i0e, i0e_ref, -8, 8),
    unary("special_i1", special_i1, i1_ref, -8, 8, 64),
    unary("special_i1e", special_i1e, i1e_ref, -8, 8),
    unary("special_airy_ai", special_airy_ai, airy, -4, 4, 64),
    unary("special_ndtri", special_ndtri, ndtri, 0.001, 0.999, 64, 0.05),
    unary("special_polygamma", polygamma1, polygamma1_ref, 0.5, 6),
    unary("special_polygamma", polygamma3, polygamma3_ref, 0.5, 6),
    two("special_zeta", special_zeta, zeta, 1.5, 6),
    two("special_gammainc", special_gammainc, gamma_p, 0.25, 6),
    two("special_gammaincc", special_gammaincc, gamma_q, 0.25, 6),
});

}  // namespace
}  // namespace op_table
