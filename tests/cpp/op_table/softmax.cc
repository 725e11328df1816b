// Op table entries of softmax and log_softmax (ops/registry/softmax.h), over
// the last dim (the SIMD rows) and over dim 0 (the moved-dim path).
#include "kiln/softmax.h"

#include <cmath>
#include <limits>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// float64 softmax of x [*] over `dim` (wrapped here; a 0-d input is one row).
std::vector<double> softmax_ref(const std::vector<double>& x, const Shape& shape, int dim, bool log) {
  std::vector<double> y(x.size());
  if (x.empty()) return y;
  const int nd = int(shape.size());
  const int d = nd == 0 ? 0 : (dim < 0 ? dim + nd : dim);
  int64_t n = nd ? shape[d] : 1, inner = 1;
  for (int k = d + 1; k < nd; ++k) inner *= shape[k];
  const int64_t outer = int64_t(x.size()) / (n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
      double m = -std::numeric_limits<double>::infinity(), s = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, x[at(j)]);
      for (int64_t j = 0; j < n; ++j) s += std::exp(x[at(j)] - m);
      for (int64_t j = 0; j < n; ++j)
        y[at(j)] = log ? x[at(j)] - m - std::log(s) : std::exp(x[at(j)] - m) / s;
    }
  return y;
}

Entry softmax_entry(const char* op, bool log, int dim) {
  Entry e;
  e.op = op;
  e.dtypes = kFloats;
  e.lo = -8;
  e.hi = 8;
  e.shapes = unary_shapes;
  e.call = [log, dim](const std::vector<Tensor>& x) {
    return log ? log_softmax(x[0], dim) : softmax(x[0], dim);
  };
  e.oracle = [log, dim](const Inputs& in, const Tensor&) {
    return softmax_ref(in.values[0], in.shapes[0], in.shapes[0].empty() ? 0 : dim, log);
  };
  e.ulps = 8;
  e.perf_shapes = {{{64, 32000}}};
  return e;
}

KILN_OP_TABLE({
    softmax_entry("softmax", false, -1),
    softmax_entry("softmax", false, 0),
    softmax_entry("log_softmax", true, -1),
    softmax_entry("log_softmax", true, 0),
});

}  // namespace
}  // namespace op_table
