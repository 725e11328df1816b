// Op table entries of the ops of KILN_OPS_UNARY_EXTRA (ops/registry/unary.h).
// Oracles in long double (the libm long double functions, series and
// bisection where the library has none), so the float64 kernels meet a
// computation of their own.
#include "kiln/unary_extra.h"

#include <cmath>
#include <complex>

#include "op_table/unary_entry.h"

namespace op_table {
namespace {

using namespace kiln;
using ld = long double;
using cld = std::complex<long double>;
constexpr ld kPi = 3.141592653589793238462643383279502884L;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The edge values and more.
std::vector<double> edges_and(std::vector<double> more) {
  std::vector<double> v = kEdgeValues;
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// Float function entry: bool/ints give float32; edge values walked.
Entry fn_entry(const char* op, Tensor (*fn)(const Tensor&), double (*f)(double), double lo, double hi,
               double ulps = 4, std::vector<double> specials = kEdgeValues) {
  Entry e = unary_entry(
      op, fn, [f](double v, DType) { return f(v); }, kFloatsAndInts, lo, hi, std::move(specials));
  e.ulps = ulps;
  return e;
}

// The complex walk of op over a box [lo, hi]^2, oracle in complex long double.
Entry complex_entry(const char* op, Tensor (*fn)(const Tensor&), cdouble (*f)(cdouble), double lo,
                    double hi) {
  Entry e = unary_entry(op, fn, [](double, DType) { return 0.0; }, {}, lo, hi, {});
  e.ulps = 16;
  return with_complex(std::move(e), elementwise(f));
}

#define KILN_LD_ORACLE(name, expr)                      \
  double name##_ref(double v) {                         \
    const ld x = v;                                     \
    return double(expr);                                \
  }                                                     \
  cdouble c_##name(cdouble v) {                         \
    const cld x(v.real(), v.imag());                    \
    const cld r = std::name(x);                         \
    return cdouble(double(r.real()), double(r.imag())); \
  }
KILN_LD_ORACLE(acos, std::acos(x))
KILN_LD_ORACLE(asin, std::asin(x))
KILN_LD_ORACLE(atan, std::atan(x))
KILN_LD_ORACLE(acosh, std::acosh(x))
KILN_LD_ORACLE(asinh, std::asinh(x))
KILN_LD_ORACLE(atanh, std::atanh(x))
KILN_LD_ORACLE(cosh, std::cosh(x))
KILN_LD_ORACLE(sinh, std::sinh(x))
KILN_LD_ORACLE(log10, std::log10(x))
#undef KILN_LD_ORACLE

double erf_ref(double v) { return double(std::erf(ld(v))); }
double erfc_ref(double v) { return double(std::erfc(ld(v))); }
double lgamma_ref(double v) { return double(std::lgamma(ld(v))); }
double deg2rad_ref(double v) { return double(ld(v) * kPi / 180); }
double rad2deg_ref(double v) { return double(ld(v) * 180 / kPi); }
double frac_ref(double v) { return double(ld(v) - std::trunc(ld(v))); }
double sinc_ref(double v) { return v == 0 ? 1.0 : double(std::sin(kPi * v) / (kPi * v)); }

// erfinv by bisection on erf in long double.
double erfinv_ref(double y) {
  if (y != y || y < -1 || y > 1) return kNaN;
  if (y == 1 || y == -1) return std::copysign(kInf, y);
  if (y == 0) return y;
  ld lo = 0, hi = 7;
  const ld a = std::fabs(ld(y));
  for (int i = 0; i < 200; ++i) {
    const ld mid = (lo + hi) / 2;
    (std::erf(mid) < a ? lo : hi) = mid;
  }
  return std::copysign(double(lo), y);
}

// digamma: reflection, recurrence up to x >= 40, asymptotic series (long double).
double digamma_ref(double v) {
  if (v == 0) return std::copysign(kInf, -v);
  if (v != v || v == -kInf) return kNaN;
  if (v == kInf) return kInf;
  if (v < 0 && v == std::trunc(v)) return kNaN;
  ld x = v, r = 0;
  if (x < 0) {
    r = -kPi / std::tan(kPi * x);
    x = 1 - x;
  }
  for (; x < 40; x += 1) r -= 1 / x;
  const ld z = 1 / (x * x);
  r += std::log(x) - 1 / (2 * x) - z * (ld(1) / 12 - z * (ld(1) / 120 - z * (ld(1) / 252 - z / 240)));
  return double(r);
}

// i0: the power series sum (x/2)^(2k) / (k!)^2, positive terms.
double i0_ref(double v) {
  if (v != v) return v;
  if (std::isinf(v)) return kInf;
  const ld q = ld(v) * ld(v) / 4;
  ld term = 1, sum = 1;
  for (int k = 1; k < 500 && term > sum * 1e-22L; ++k) {
    term *= q / (ld(k) * ld(k));
    sum += term;
  }
  return double(sum);
}

double logit_ref(double v) { return double(std::log(ld(v) / (1 - ld(v)))); }
double logit_eps_ref(double v) {
  const ld z = v != v ? ld(v) : std::min(std::max(ld(v), 0.125L), 0.875L);
  return double(std::log(z / (1 - z)));
}

double square_ref(double v, DType) { return v * v; }
double sgn_ref(double v, DType) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }  // NaN -> 0, as sign
cdouble c_sgn(cdouble z) { return z == cdouble(0) ? cdouble(0) : z / std::abs(z); }
cdouble c_square(cdouble z) { return z * z; }
double signbit_ref(double v, DType) { return std::signbit(v); }
double isposinf_ref(double v, DType) { return v == kInf; }
double isneginf_ref(double v, DType) { return v == -kInf; }
double isreal_ref(double, DType) { return 1; }
cdouble c_isreal(cdouble z) { return z.imag() == 0; }

// The dtype's largest finite value (torch.finfo(d).max), from its format.
double finite_max(DType d) {
  switch (d) {
    case DType::Float16:
      return (2 - std::ldexp(1.0, -10)) * std::ldexp(1.0, 15);
    case DType::BFloat16:
      return (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127);
    case DType::Float32:
      return (2 - std::ldexp(1.0, -23)) * std::ldexp(1.0, 127);
    default:
      return (2 - std::ldexp(1.0, -52)) * std::ldexp(1.0, 1023);
  }
}
double nan_to_num_ref(double v, DType d) {
  if (v != v) return 0;
  if (v == kInf) return finite_max(d);
  if (v == -kInf) return -finite_max(d);
  return v;
}
double nan_to_num_args_ref(double v, DType) { return v != v ? 1.5 : v == kInf ? 100 : v == -kInf ? -7 : v; }

#define KILN_CALL(fn) \
  Tensor fn##_call(const Tensor& x) { return kiln::fn(x); }
KILN_CALL(acos)
KILN_CALL(asin) KILN_CALL(atan) KILN_CALL(acosh) KILN_CALL(asinh) KILN_CALL(atanh) KILN_CALL(cosh)
    KILN_CALL(sinh) KILN_CALL(erf) KILN_CALL(erfc) KILN_CALL(erfinv) KILN_CALL(lgamma) KILN_CALL(digamma)
        KILN_CALL(log10) KILN_CALL(sinc) KILN_CALL(deg2rad) KILN_CALL(rad2deg) KILN_CALL(i0) KILN_CALL(frac)
            KILN_CALL(square) KILN_CALL(sgn) KILN_CALL(signbit) KILN_CALL(isposinf) KILN_CALL(isneginf)
                KILN_CALL(isreal)
#undef KILN_CALL
                    Tensor logit_call(const Tensor& x) {
  return kiln::logit(x);
}
Tensor logit_eps_call(const Tensor& x) { return kiln::logit(x, 0.125); }
Tensor nan_to_num_call(const Tensor& x) { return kiln::nan_to_num(x); }
Tensor nan_to_num_args_call(const Tensor& x) { return kiln::nan_to_num(x, 1.5, 100.0, -7.0); }

// Bool and all integer dtypes the predicates and square take.
const std::vector<DType> kRealDtypes = kFloats + kInts + std::vector<DType>{DType::Bool};

KILN_OP_TABLE({
    fn_entry("acos", acos_call, acos_ref, -0.99, 0.99),
    fn_entry("asin", asin_call, asin_ref, -0.99, 0.99),
    fn_entry("atan", atan_call, atan_ref, -6, 6),
    fn_entry("acosh", acosh_call, acosh_ref, 1, 8),
    fn_entry("asinh", asinh_call, asinh_ref, -6, 6),
    fn_entry("atanh", atanh_call, atanh_ref, -0.99, 0.99),
    fn_entry("cosh", cosh_call, cosh_ref, -6, 6),
    fn_entry("sinh", sinh_call, sinh_ref, -6, 6),
    fn_entry("erf", erf_call, erf_ref, -3, 3),
    fn_entry("erfc", erfc_call, erfc_ref, -3, 5),
    fn_entry("erfinv", erfinv_call, erfinv_ref, -0.999, 0.999, 8, edges_and({1.0, -1.0, 1.5})),
    fn_entry("lgamma", lgamma_call, lgamma_ref, -3.5, 8),
    fn_entry("digamma", digamma_call, digamma_ref, -3.7, 6, 32, edges_and({-2.0, -1.0})),
    fn_entry("log10", log10_call, log10_ref, 0.05, 100),
    fn_entry("sinc", sinc_call, sinc_ref, -4, 4),
    fn_entry("deg2rad", deg2rad_call, deg2rad_ref, -200, 200),
    fn_entry("rad2deg", rad2deg_call, rad2deg_ref, -7, 7),
    fn_entry("i0", i0_call, i0_ref, -6, 6, 16),
    fn_entry("logit", logit_call, logit_ref, 0.02, 0.98),
    fn_entry("logit", logit_eps_call, logit_eps_ref, -0.5, 1.5),
    unary_entry(
        "frac", frac_call, [](double v, DType) { return frac_ref(v); }, kFloats, -9, 9),
    with_complex(unary_entry("square", square_call, square_ref, kRealDtypes), elementwise(c_square)),
    with_complex(unary_entry("sgn", sgn_call, sgn_ref, kRealDtypes), elementwise(c_sgn)),
    unary_entry("signbit", signbit_call, signbit_ref, kRealDtypes),
    unary_entry("isposinf", isposinf_call, isposinf_ref, kRealDtypes),
    unary_entry("isneginf", isneginf_call, isneginf_ref, kRealDtypes),
    with_complex(unary_entry("isreal", isreal_call, isreal_ref, kRealDtypes), elementwise(c_isreal)),
    unary_entry("nan_to_num", nan_to_num_call, nan_to_num_ref, kRealDtypes),
    unary_entry("nan_to_num", nan_to_num_args_call, nan_to_num_args_ref, kRealDtypes),
    complex_entry("acos", acos_call, c_acos, -0.9, 0.9),
    complex_entry("asin", asin_call, c_asin, -0.9, 0.9),
    complex_entry("atan", atan_call, c_atan, -0.9, 0.9),
    complex_entry("acosh", acosh_call, c_acosh, -3, 3),
    complex_entry("asinh", asinh_call, c_asinh, -0.9, 0.9),
    complex_entry("atanh", atanh_call, c_atanh, -0.9, 0.9),
    complex_entry("cosh", cosh_call, c_cosh, -3, 3),
    complex_entry("sinh", sinh_call, c_sinh, -3, 3),
    complex_entry("log10", log10_call, c_log10, -4, 4),
});

}  // namespace
}  // namespace op_table
