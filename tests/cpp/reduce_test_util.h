// Double-precision reference helpers for the reduction tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::test {

// Values of x as doubles in row-major order (exact for the test data).
inline std::vector<double> values(const Tensor& x) {
  const Tensor d = x.to(DType::Float64).contiguous();
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

// Mask for a dim list (nullopt / {} = all), negative dims wrapped.
inline std::vector<bool> mask_of(const DimList& dims, int ndim) {
  std::vector<bool> m(size_t(ndim), !dims || dims->empty());
  if (dims)
    for (int d : *dims) m[size_t(d < 0 ? d + ndim : d)] = true;
  return m;
}

// For each output element (row-major over kept dims), the reduced input values
// in row-major order of the reduced dims.
inline std::vector<std::vector<double>> groups(const Tensor& x, const std::vector<bool>& mask) {
  const std::vector<double> v = values(x);
  int64_t n_out = 1;
  for (int d = 0; d < x.dim(); ++d)
    if (!mask[size_t(d)]) n_out *= x.shape()[d];
  std::vector<std::vector<double>> g(static_cast<size_t>(n_out));
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    int64_t rem = i, o = 0, ostride = 1;
    for (int d = x.dim() - 1; d >= 0; --d) {
      const int64_t idx = rem % x.shape()[d];
      rem /= x.shape()[d];
      if (!mask[size_t(d)]) {
        o += idx * ostride;
        ostride *= x.shape()[d];
      }
    }
    g[size_t(o)].push_back(v[size_t(i)]);
  }
  return g;
}

// Machine epsilon of a dtype's storage (0 for integers: exact).
inline double eps_of(DType d) {
  switch (d) {
    case DType::Float16: return 1.0 / 1024;
    case DType::BFloat16: return 1.0 / 128;
    case DType::Float32: case DType::Complex64: return 1.2e-7;
    case DType::Float64: case DType::Complex128: return 2.3e-16;
    default: return 0;
  }
}

// Expects out (any dtype) to match ref element-wise within
// 4 eps (|ref| + scale); NaN must match NaN, inf must match exactly.
inline void expect_close(const Tensor& out, const std::vector<double>& ref, double scale = 1.0,
                         const std::string& what = "") {
  const std::vector<double> got = values(out);
  ASSERT_EQ(got.size(), ref.size()) << what;
  const double eps = eps_of(out.dtype());
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] got " << got[i];
    } else if (std::isinf(ref[i])) {
      EXPECT_EQ(got[i], ref[i]) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(got[i], ref[i], 4 * eps * (std::fabs(ref[i]) + scale)) << what << " [" << i << "]";
    }
  }
}

// Reference reduction: fn over each group.
inline std::vector<double> ref_reduce(const Tensor& x, const DimList& dims,
                                      const std::function<double(const std::vector<double>&)>& fn) {
  std::vector<double> r;
  for (const auto& g : groups(x, mask_of(dims, x.dim()))) r.push_back(fn(g));
  return r;
}

// Random test data of any dtype: small integers for integer dtypes (so sums
// and products stay exact), values in [lo, hi) otherwise, rounded to dtype.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint32_t seed = 1, double lo = -2, double hi = 2) {
  std::mt19937 rng(seed);
  const int64_t n = shape_numel(shape, "test");
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& e : v) {
    if (dtype == DType::Bool) e = double(rng() % 2);
    else if (is_integral(dtype, false)) e = double(int(rng() % 7) - (is_signed(dtype) ? 3 : 0));
    else e = lo + (hi - lo) * double(rng()) / 4294967296.0;
  }
  return from_buffer_copy(v.data(), shape, DType::Float64).to(dtype);
}

inline std::vector<DimList> dim_sets() {
  return {std::nullopt, std::vector<int>{}, std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{-1},
          std::vector<int>{0, 2}, std::vector<int>{2, 0}, std::vector<int>{-3, -1}, std::vector<int>{0, 1, 2}};
}

inline std::string dims_str(const DimList& d) {
  if (!d) return "None";
  std::string s = "[";
  for (int x : *d) s += std::to_string(x) + ",";
  return s + "]";
}

// Contiguous and non-contiguous [3, 4, 5] inputs of a dtype.
inline std::vector<Tensor> inputs_345(DType dt, uint32_t seed = 1) {
  return {random_tensor({3, 4, 5}, dt, seed),
          random_tensor({5, 4, 3}, dt, seed + 1).permute({2, 1, 0}),                   // transposed
          random_tensor({3, 8, 10}, dt, seed + 2).slice(1, 0, 8, 2).slice(2, 1, 10, 2)};  // strided
}

inline const std::vector<DType>& all_real_dtypes() {
  static const std::vector<DType> v = {DType::Bool,    DType::UInt8,    DType::Int8,    DType::Int16,
                                       DType::Int32,   DType::Int64,    DType::UInt32,  DType::Float16,
                                       DType::BFloat16, DType::Float32, DType::Float64};
  return v;
}

}  // namespace kiln::test
