// Helpers of the indexing ops' op table entries: integer input specs and the
// row-major bookkeeping their float64 oracles share.
#pragma once

#include <cmath>

#include "op_table/table.h"

namespace op_table::index_util {

// An int64 index input of `shape` with values in [lo, hi).
inline InputSpec ix(Shape shape, int64_t lo, int64_t hi, InputSpec::Layout layout = InputSpec::Contiguous,
                    Shape base = {}) {
  return {std::move(shape), layout, std::move(base), InputSpec::Ints{DType::Int64, lo, hi}};
}
// A bool mask input of `shape`.
inline InputSpec mask(Shape shape, InputSpec::Layout layout = InputSpec::Contiguous, Shape base = {}) {
  return {std::move(shape), layout, std::move(base), InputSpec::Ints{DType::Bool, 0, 2}};
}

inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
// Row-major position i of shape s as coordinates, and back.
inline Shape unravel(int64_t i, const Shape& s) {
  Shape p(s.size());
  for (size_t k = s.size(); k-- > 0;) {
    p[k] = i % s[k];
    i /= s[k];
  }
  return p;
}
inline int64_t ravel(const Shape& p, const Shape& s) {
  int64_t i = 0;
  for (size_t k = 0; k < s.size(); ++k) i = i * s[k] + p[k];
  return i;
}
// The value of v (shape vs) at position p of a shape it broadcasts to.
inline double at(const std::vector<double>& v, const Shape& vs, const Shape& p) {
  int64_t i = 0;
  const size_t off = p.size() - vs.size();
  for (size_t k = 0; k < vs.size(); ++k) i = i * vs[k] + (vs[k] == 1 ? 0 : p[off + k]);
  return v[size_t(i)];
}
// Python's wrap of a (possibly negative) index into [0, n).
inline int64_t wrap(double i, int64_t n) { return i < 0 ? int64_t(i) + n : int64_t(i); }
// y as `d` holds it after sums: a bool accumulates as or.
inline std::vector<double> held(std::vector<double> y, DType d) {
  if (d == DType::Bool)
    for (double& v : y) v = v != 0 ? 1.0 : 0.0;
  return y;
}

}  // namespace op_table::index_util
