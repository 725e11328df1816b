// Op table entry of swiglu (ops/registry/nn.h): silu(gate) * up in float64.
#include <cmath>

#include "kiln/nn.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

Entry swiglu_entry() {
  Entry e;
  e.op = "swiglu";
  e.dtypes = kFloats;
  e.lo = -12;
  e.hi = 12;
  // gate and up share the shape class.
  e.shapes = [](ShapeClass c) {
    std::vector<InputSpec> s = unary_shapes(c);
    s.push_back(s[0]);
    return s;
  };
  e.call = [](const std::vector<Tensor>& x) { return swiglu(x[0], x[1]); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) {
      const double g = in.values[0][i];
      y[i] = g / (1.0 + std::exp(-g)) * in.values[1][i];
    }
    return y;
  };
  e.ulps = 8;
  e.perf_shapes = {{{16, 11008}}, {{16, 11008}}};
  return e;
}

KILN_OP_TABLE({swiglu_entry()});

}  // namespace
}  // namespace op_table
