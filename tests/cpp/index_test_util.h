// Helpers for the indexing and sorting tests: tensors from/to double vectors
// and a row-major coordinate walk for the scalar references.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kiln/index.h"
#include "kiln/sort.h"
#include "kiln/tensor.h"

namespace kiln::testing_index {

inline Tensor from_vec(const std::vector<double>& v, const Shape& s, DType dt = DType::Float64) {
  if (int64_t(v.size()) != shape_numel(s, "from_vec")) throw std::logic_error("test data does not match its shape");
  return from_buffer_copy(v.data(), s, DType::Float64).to(dt);
}
inline Tensor from_i64(const std::vector<int64_t>& v, const Shape& s) {
  if (int64_t(v.size()) != shape_numel(s, "from_i64")) throw std::logic_error("test data does not match its shape");
  return from_buffer_copy(v.data(), s, DType::Int64);
}
inline Tensor from_i64(const std::vector<int64_t>& v) { return from_i64(v, {int64_t(v.size())}); }
inline std::vector<double> to_vec(const Tensor& t) {
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}
inline std::vector<int64_t> to_i64(const Tensor& t) {
  Tensor c = t.to(DType::Int64).contiguous();
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}
inline int64_t linear(const Shape& c, const Shape& s) {
  int64_t l = 0;
  for (size_t d = 0; d < s.size(); ++d) l = l * s[d] + c[d];
  return l;
}
// Every coordinate of shape s in row-major order.
inline std::vector<Shape> coords(const Shape& s) {
  std::vector<Shape> out;
  int64_t n = 1;
  for (auto v : s) n *= v;
  Shape c(s.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(c);
    for (size_t d = s.size(); d-- > 0;) {
      if (++c[d] < s[d]) break;
      c[d] = 0;
    }
  }
  return out;
}
inline std::vector<double> random_vec(size_t n, std::mt19937& rng, int lo = -50, int hi = 50) {
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}
// Dtypes every data-movement op must handle (values are small integers, exact in all).
inline const std::vector<DType>& movement_dtypes() {
  static const std::vector<DType> d = {
      DType::Bool,      DType::UInt8,     DType::Int8,    DType::Int16,         DType::Int32,
      DType::Int64,     DType::UInt16,    DType::UInt32,  DType::UInt64,        DType::Float16,
      DType::BFloat16,  DType::Float32,   DType::Float64, DType::Float8_e4m3fn, DType::Float8_e5m2,
      DType::Complex64, DType::Complex128};
  return d;
}
// Values as stored in dtype dt (so references compare exactly after the round trip).
// Unsigned dtypes get |v| (a wrapped uint64 does not survive the trip through double).
inline std::vector<double> roundtrip(std::vector<double> v, DType dt) {
  if (info(dt).kind == DKind::Unsigned)
    for (auto& x : v) x = x < 0 ? -x : x;
  return to_vec(from_vec(v, {int64_t(v.size())}, dt));
}

}  // namespace kiln::testing_index
