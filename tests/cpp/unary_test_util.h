// Helpers for the unary op tests: building tensors from doubles, reading them
// back, and comparing against a double-precision reference with a tolerance in
// units of the result dtype's precision.
#pragma once

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/unary.h"

namespace unary_test {

using namespace kiln;

// A 1-D tensor of `dtype` holding vals (converted through float64).
inline Tensor make(const std::vector<double>& vals, DType dtype) {
  Tensor t = from_buffer_copy(vals.data(), {int64_t(vals.size())}, DType::Float64);
  return t.to(dtype);
}

// All elements of t (any shape, any strides) as doubles, in row-major order.
inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

// The value a double rounds to in `dtype`.
inline double round_to(double v, DType dtype) {
  switch (dtype) {
    case DType::Float32: return double(float(v));
    case DType::BFloat16: return double(float(bfloat16(v)));
    case DType::Float16: return double(float(half(v)));
    default: return v;
  }
}

inline double max_finite(DType d) {
  switch (d) {
    case DType::Float32: return double(FLT_MAX);
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float16: return 65504.0;
    default: return DBL_MAX;
  }
}

// Precision of a dtype: relative step (one ulp at the bottom of a binade, so
// "k ulp" is k * eps * |value|) and the smallest subnormal.
struct Precision {
  double eps;
  double denorm;
};
inline Precision precision(DType d) {
  switch (d) {
    case DType::Float64: return {std::ldexp(1.0, -52), std::numeric_limits<double>::denorm_min()};
    case DType::Float32: return {std::ldexp(1.0, -23), double(std::numeric_limits<float>::denorm_min())};
    case DType::BFloat16: return {std::ldexp(1.0, -7), std::ldexp(1.0, -133)};
    case DType::Float16: return {std::ldexp(1.0, -10), std::ldexp(1.0, -24)};
    default: return {0.0, 0.0};
  }
}

// True when got matches the (exact, double) reference ref within `ulps` units of
// dtype's precision, plus `atol`. NaN matches NaN; infinities must match
// exactly unless the reference rounds to the largest finite value.
inline bool close(double got, double ref, DType dtype, double ulps, double atol = 0.0) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isnan(got)) return false;
  const double rr = round_to(ref, dtype);
  if (std::isinf(rr) || std::isinf(got)) {
    if (got == rr) return true;
    // At the overflow threshold either inf or the largest finite value will do.
    const double m = max_finite(dtype);
    return std::signbit(got) == std::signbit(ref) && std::fabs(ref) >= m * (1 - ulps * precision(dtype).eps) &&
           (std::isinf(got) || std::fabs(got) == m);
  }
  const Precision p = precision(dtype);
  const double tol = ulps * p.eps * std::fabs(ref) + 2 * p.denorm + atol;
  return std::fabs(got - ref) <= tol;
}

// A deterministic spread of test inputs: specials, powers of ten across the
// whole float32 range (subnormals included), and pseudo-random values in
// [-range, range]. Odd length, so SIMD loops have tails.
inline std::vector<double> inputs(double range, int n_random = 2001) {
  std::vector<double> v = {0.0,  -0.0,  1.0,   -1.0, 0.5,  -0.5,  2.0, -2.0, 1e-45, -1e-45, 1e-40, -1e-40,
                           1e-38, 1.2e-38, 1e-30, 1e-10, 1e-5, -1e-5, 3.0, 10.0, -10.0, 20.0, -20.0, 87.0,
                           88.5, 88.72, 88.73, 89.0, -87.0, -87.4, -100.0, -103.5, -104.5, -120.0, 1e4,
                           -3e4, 32767.0, 40000.0, 1e6, 1e10, 1e30, -1e30, 3.4e38, -3.4e38, 1e300,
                           -1e300, 0.99999994, -0.99999994, -0.9999, 1e-300,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  for (int e = -44; e <= 38; e += 3) {
    v.push_back(std::pow(10.0, e) * 1.37);
    v.push_back(-std::pow(10.0, e) * 2.71);
  }
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < n_random; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = double(s >> 11) * std::ldexp(1.0, -53);  // [0, 1)
    v.push_back((2 * u - 1) * range);
  }
  return v;
}

inline const char* dname(DType d) { return kiln::name(d); }

}  // namespace unary_test
