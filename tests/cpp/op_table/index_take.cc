// Op table entries of take and put (ops/registry/index.h): flat indices with
// negative values that wrap, duplicates in put.
#include "kiln/index.h"
#include "op_table/index_util.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace index_util;

// x and a flat index of values in [-numel(x), numel(x)).
std::vector<InputSpec> take_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{4, 5}}, ix({0, 3}, 0, 1)};
    case ShapeClass::Scalar:
      return {{{}}, ix({}, -1, 1)};
    case ShapeClass::Odd:
      return {{{5, 37}}, ix({7, 3}, -185, 185)};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}, ix({4, 9}, -185, 185, InputSpec::Transposed)};
    case ShapeClass::Broadcast:
      return {{{5, 37}, InputSpec::Expanded, {1, 37}}, ix({6, 4}, -185, 185, InputSpec::Expanded, {6, 1})};
  }
  return {};
}

// take_shapes plus a source with as many elements as the index.
std::vector<InputSpec> put_shapes(ShapeClass c) {
  std::vector<InputSpec> s = take_shapes(c);
  switch (c) {
    case ShapeClass::Empty:
      s.push_back({{0}});
      break;
    case ShapeClass::Scalar:
      s.push_back({{}});
      break;
    case ShapeClass::Odd:
      s.push_back({{21}});
      break;
    case ShapeClass::NonContiguous:
      s.push_back({{4, 9}, InputSpec::Strided});
      break;
    case ShapeClass::Broadcast:
      s.push_back({{6, 4}, InputSpec::Expanded, {1, 4}});
      break;
  }
  return s;
}

Entry take_entry() {
  Entry e;
  e.op = "take";
  e.dtypes = kFloatsAndInts;
  e.shapes = take_shapes;
  e.call = [](const std::vector<Tensor>& t) { return take(t[0], t[1]); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const int64_t n = int64_t(in.values[0].size());
    std::vector<double> y;
    for (double i : in.values[1]) y.push_back(in.values[0][size_t(wrap(i, n))]);
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}, ix({1 << 20}, 0, 1 << 20)};
  return e;
}

Entry put_entry(bool accumulate) {
  Entry e;
  e.op = "put";
  e.dtypes = kFloatsAndInts;
  e.shapes = put_shapes;
  e.call = [accumulate](const std::vector<Tensor>& t) { return put(t[0], t[1], t[2], accumulate); };
  e.oracle = [accumulate](const Inputs& in, const Tensor& out) {
    std::vector<double> y = in.values[0];
    const int64_t n = int64_t(y.size());
    for (size_t k = 0; k < in.values[1].size(); ++k) {
      double& d = y[size_t(wrap(in.values[1][k], n))];
      d = accumulate ? d + in.values[2][k] : in.values[2][k];  // in order: the last write wins
    }
    return held(y, out.dtype());
  };
  // Sums of a few duplicates round at each step in narrow dtypes.
  e.ulps = accumulate ? 16 : 4;
  e.floor = accumulate ? 16 : 1;
  e.perf_shapes = {{{1024, 1024}}, ix({1 << 20}, 0, 1 << 20), {{1 << 20}}};
  return e;
}

KILN_OP_TABLE({with_complex_by_parts(with_fp8(take_entry())),
               with_complex_by_parts(with_fp8(put_entry(false))), with_complex_by_parts(put_entry(true))});

}  // namespace
}  // namespace op_table
