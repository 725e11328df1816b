// The entry builder of the unary op table files (unary_sign.cc,
// unary_rounding.cc, unary_predicates.cc, unary_special.cc): one input of the
// unary shape classes, an oracle that maps each value (given the output dtype,
// for integer wrap-around) in float64.
#pragma once

#include <cmath>
#include <limits>

#include "op_table/table.h"

namespace op_table {

inline const std::vector<double> kEdgeValues = {std::numeric_limits<double>::quiet_NaN(),
                                                std::numeric_limits<double>::infinity(),
                                                -std::numeric_limits<double>::infinity(), 0.0, -0.0};

inline Entry unary_entry(const char* op, std::function<Tensor(const Tensor&)> fn,
                         std::function<double(double, DType)> f, const std::vector<DType>& dtypes,
                         double lo = -4, double hi = 4, std::vector<double> specials = kEdgeValues) {
  Entry e;
  e.op = op;
  e.dtypes = dtypes;
  e.lo = lo;
  e.hi = hi;
  e.specials = std::move(specials);
  e.shapes = unary_shapes;
  e.call = [fn](const std::vector<Tensor>& x) { return fn(x[0]); };
  e.oracle = [f](const Inputs& in, const Tensor& out) {
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(in.values[0][i], out.dtype());
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

// The integer dtypes the unary entries walk (signed, unsigned, bool).
inline const std::vector<DType> kInts = {DType::Int32, DType::Int64, DType::UInt8};

inline std::vector<DType> operator+(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace op_table
