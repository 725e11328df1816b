// Op table entries of hypot, logaddexp, logaddexp2, xlogy, fmax, fmin, gcd,
// lcm, ldexp, nextafter, float_power and isclose (ops/registry/binary_extra.h).
// Oracles in long double (float64 kernels meet a computation of their own).
#include "kiln/binary_extra.h"

#include <cmath>
#include <cstdint>
#include <numeric>

#include "op_table/binary.h"

namespace op_table::binary {
namespace {

using namespace kiln;
using V = const std::vector<double>&;
using X = const std::vector<Tensor>&;
using ld = long double;

const std::vector<DType> kSignedInts = {DType::Int32, DType::Int64};

// An infinite operand gives inf even beside NaN (IEEE 754 hypot, as torch).
double hypot_ref(V v, const Tensor&) {
  if (std::isinf(v[0]) || std::isinf(v[1])) return std::numeric_limits<double>::infinity();
  return double(std::sqrt(ld(v[0]) * v[0] + ld(v[1]) * v[1]));
}
double logaddexp_ref(V v, const Tensor&) { return double(std::log(std::exp(ld(v[0])) + std::exp(ld(v[1])))); }
double logaddexp2_ref(V v, const Tensor&) {
  return double(std::log2(std::exp2(ld(v[0])) + std::exp2(ld(v[1]))));
}
double xlogy_ref(V v, const Tensor&) { return v[0] == 0 ? 0.0 : double(ld(v[0]) * std::log(ld(v[1]))); }
double ldexp_ref(V v, const Tensor&) { return double(ld(v[0]) * std::pow(2.0L, ld(v[1]))); }
double fmax_ref(V v, const Tensor&) {
  return v[0] != v[0] ? v[1] : v[1] != v[1] ? v[0] : std::max(v[0], v[1]);
}
double fmin_ref(V v, const Tensor&) {
  return v[0] != v[0] ? v[1] : v[1] != v[1] ? v[0] : std::min(v[0], v[1]);
}
double float_power_ref(V v, const Tensor&) { return double(std::pow(ld(v[0]), ld(v[1]))); }
double gcd_ref(V v, const Tensor&) {
  int64_t a = std::llabs(int64_t(v[0])), b = std::llabs(int64_t(v[1]));
  while (b) a = std::exchange(b, a % b);
  return double(a);
}
double lcm_ref(V v, const Tensor& o) {
  const double g = gcd_ref(v, o);
  return g == 0 ? 0 : std::fabs(v[0] * v[1]) / g;
}
// The neighbour of x toward y in out's dtype: x +- one unit in the last place
// of its binade (the smaller binade's when stepping toward zero from a power of 2).
double nextafter_ref(V v, const Tensor& o) {
  const double x = v[0], y = v[1];
  if (x != x || y != y) return x + y;
  if (x == y) return y;
  const int mant = o.dtype() == DType::Float64   ? 52
                   : o.dtype() == DType::Float32 ? 23
                   : o.dtype() == DType::Float16 ? 10
                                                 : 7;
  const int emin = o.dtype() == DType::Float64   ? -1022
                   : o.dtype() == DType::Float32 ? -126
                   : o.dtype() == DType::Float16 ? -14
                                                 : -126;
  if (x == 0) return std::copysign(std::ldexp(1.0, emin - mant), y);
  const bool away = (y > x) == (x > 0);
  int e;
  std::frexp(std::fabs(x), &e);  // |x| in [2^(e-1), 2^e)
  int exp = std::max(e - 1, emin);
  if (!away && std::fabs(x) == std::ldexp(1.0, e - 1) && e - 1 > emin) exp -= 1;
  const double ulp = std::ldexp(1.0, exp - mant);
  return x + (away ? 1 : -1) * std::copysign(ulp, x);
}
double isclose_ref(V v, double rtol, double atol, bool equal_nan) {
  const double a = v[0], b = v[1];
  if (a == b) return 1;
  if (a != a || b != b) return equal_nan && a != a && b != b;
  const double d = std::fabs(a - b);
  return std::isfinite(d) && d <= atol + rtol * std::fabs(b);
}

// Pairs of the same values (a copy of input 0 into input 1 at every 3rd
// element) so isclose and nextafter see equal operands too.
void copy_some(Entry& e) {
  e.condition = [](size_t input, const Shape&, std::vector<double>& v) {
    if (input == 1)
      for (size_t i = 0; i < v.size(); i += 3) v[i] = 0.5;
    if (input == 0)
      for (size_t i = 0; i < v.size(); i += 3) v[i] = i % 2 ? 0.5 : 0.5000001;
  };
}

Entry with_edges(Entry e) {
  e.specials = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                -std::numeric_limits<double>::infinity(), 0.0, -0.0};
  return e;
}

Entry isclose_entry(const std::vector<DType>& dtypes, double rtol, double atol, bool equal_nan) {
  Entry e = tensors(
      "isclose", dtypes, -2, 2,
      [rtol, atol, equal_nan](X x) { return isclose(x[0], x[1], rtol, atol, equal_nan); },
      [rtol, atol, equal_nan](V v, const Tensor&) { return isclose_ref(v, rtol, atol, equal_nan); });
  copy_some(e);
  return with_edges(e);
}

KILN_OP_TABLE({
    with_edges(tensors(
        "hypot", kFloats, -4, 4, [](X x) { return hypot(x[0], x[1]); }, hypot_ref)),
    with_edges(tensors(
        "logaddexp", kFloats, -6, 6, [](X x) { return logaddexp(x[0], x[1]); }, logaddexp_ref)),
    with_edges(tensors(
        "logaddexp2", kFloats, -6, 6, [](X x) { return logaddexp2(x[0], x[1]); }, logaddexp2_ref)),
    tensors(
        "xlogy", kFloatsAndInts, 0, 4, [](X x) { return xlogy(x[0], x[1]); }, xlogy_ref),
    with_scalar(
        "xlogy", kFloats, 0.1, 4, [](X x) { return xlogy(x[0], Scalar(2.5)); },
        [](V v, const Tensor& o) {
          return xlogy_ref({v[0], 2.5}, o);
        }),
    tensors(
        "ldexp", join(kFloats, kSignedInts), -4, 4, [](X x) { return ldexp(x[0], x[1]); }, ldexp_ref),
    with_edges(tensors(
        "fmax", join(kFloats, kInts), -4, 4, [](X x) { return fmax(x[0], x[1]); }, fmax_ref)),
    with_edges(tensors(
        "fmin", join(kFloats, kInts), -4, 4, [](X x) { return fmin(x[0], x[1]); }, fmin_ref)),
    tensors(
        "gcd", join(kSignedInts, {DType::UInt8}), -40, 40, [](X x) { return gcd(x[0], x[1]); }, gcd_ref),
    tensors(
        "lcm", kSignedInts, -40, 40, [](X x) { return lcm(x[0], x[1]); }, lcm_ref),
    with_edges(tensors(
        "nextafter", kFloats, -4, 4, [](X x) { return nextafter(x[0], x[1]); }, nextafter_ref)),
    tensors(
        "float_power", kFloatsAndInts, 0.25, 3, [](X x) { return float_power(x[0], x[1]); }, float_power_ref),
    isclose_entry(kFloats, 1e-5, 1e-8, false),
    isclose_entry(kFloats, 1e-3, 0.5, true),
    isclose_entry(join(kInts, {DType::Bool}), 0, 1, false),
});

}  // namespace
}  // namespace op_table::binary
