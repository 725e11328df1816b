// Op table entries of masked_fill, masked_select and nonzero
// (ops/registry/index.h).
#include "kiln/index.h"
#include "op_table/index_util.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace index_util;

// x and a bool mask that broadcast together.
std::vector<InputSpec> mask_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}, mask({0, 5})};
    case ShapeClass::Scalar:
      return {{{}}, mask({})};
    case ShapeClass::Odd:
      return {{{5, 37}}, mask({5, 37})};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}, mask({5, 37}, InputSpec::Strided)};
    case ShapeClass::Broadcast:
      return {{{5, 37}, InputSpec::Expanded, {1, 37}}, mask({5, 1})};
  }
  return {};
}

// The shape x and mask broadcast to (both have equal rank here).
Shape joint(const Inputs& in) {
  Shape s = in.shapes[0];
  for (size_t k = 0; k < s.size(); ++k) s[k] = std::max(s[k], in.shapes[1][k]);
  return s;
}

Entry masked_fill_entry() {
  Entry e;
  e.op = "masked_fill";
  e.dtypes = kFloatsAndInts;
  e.shapes = mask_shapes;
  e.call = [](const std::vector<Tensor>& t) { return masked_fill(t[0], t[1], Scalar(int64_t(1))); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape s = joint(in);
    std::vector<double> y(size_t(count(s)));
    for (size_t i = 0; i < y.size(); ++i) {
      const Shape p = unravel(int64_t(i), s);
      y[i] = at(in.values[1], in.shapes[1], p) != 0 ? 1.0 : at(in.values[0], in.shapes[0], p);
    }
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}, mask({1024, 1024})};
  return e;
}

Entry masked_select_entry() {
  Entry e;
  e.op = "masked_select";
  e.dtypes = kFloatsAndInts;
  e.shapes = mask_shapes;
  e.call = [](const std::vector<Tensor>& t) { return masked_select(t[0], t[1]); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape s = joint(in);
    std::vector<double> y;
    for (int64_t i = 0; i < count(s); ++i) {
      const Shape p = unravel(i, s);
      if (at(in.values[1], in.shapes[1], p) != 0) y.push_back(at(in.values[0], in.shapes[0], p));
    }
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}, mask({1024, 1024})};
  return e;
}

Entry nonzero_entry() {
  Entry e;
  e.op = "nonzero";
  e.dtypes = kFloatsAndInts;
  e.lo = -1.5;  // integer dtypes round many draws to 0
  e.hi = 1.5;
  e.shapes = unary_shapes;
  e.call = [](const std::vector<Tensor>& t) { return nonzero(t[0]); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> y;
    for (size_t i = 0; i < in.values[0].size(); ++i) {
      if (in.values[0][i] == 0) continue;
      for (int64_t c : unravel(int64_t(i), in.shapes[0])) y.push_back(double(c));
    }
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

KILN_OP_TABLE({masked_fill_entry(), with_complex_by_parts(with_fp8(masked_select_entry())), nonzero_entry()});

}  // namespace
}  // namespace op_table
