// Op table entries of sort, argsort, topk, the order statistics (kthvalue,
// median, nanmedian, mode) and bincount (ops/registry/sort.h).
// The oracles sort (value, index) pairs stably, so ties keep the lower index
// first, as kiln's (and torch's stable) sort.
#include "kiln/sort.h"

#include <algorithm>
#include <numeric>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// The order of a line: positions sorted by value, stably (no NaN in the inputs).
std::vector<size_t> order(const std::vector<double>& line, bool descending) {
  std::vector<size_t> idx(line.size());
  std::iota(idx.begin(), idx.end(), size_t(0));
  std::stable_sort(idx.begin(), idx.end(),
                   [&](size_t a, size_t b) { return descending ? line[a] > line[b] : line[a] < line[b]; });
  return idx;
}

// k < 0: a whole sort; else the first k of the order, raising ValueError when
// the line is shorter than k.
Entry sort_entry(const char* op, int dim, bool descending, int64_t k, bool want_indices) {
  Entry e;
  e.op = op;
  e.dtypes = kFloatsAndInts;
  e.shapes = unary_shapes;
  const std::string name = op;
  e.call = [name, dim, descending, k, want_indices](const std::vector<Tensor>& x) {
    if (name == "argsort") return argsort(x[0], dim, descending);
    const SortResult r = name == "topk" ? topk(x[0], k, dim, descending) : sort(x[0], dim, descending);
    return want_indices ? r.indices : r.values;
  };
  e.oracle = [dim, descending, k, want_indices](const Inputs& in, const Tensor& out) {
    const Shape& shape = in.shapes[0];
    const int nd = int(shape.size());
    const int64_t n = nd == 0 ? 1 : shape[size_t(dim < 0 ? dim + nd : dim)];
    if (k > n) throw raises<ValueError>("ValueError");
    if (out.defined()) {
      Shape want = shape;
      if (nd > 0 && k >= 0) want[size_t(dim < 0 ? dim + nd : dim)] = k;
      if (nd == 0 && k >= 0 && k != 1) want = {k};  // a 0-d x stays 0-d only for k = 1
      expect_shape(out, want);
    }
    return map_lines(in.values[0], shape, dim, [&](const std::vector<double>& line) {
      const std::vector<size_t> idx = order(line, descending);
      std::vector<double> y(k >= 0 ? size_t(k) : line.size());
      for (size_t i = 0; i < y.size(); ++i) y[i] = want_indices ? double(idx[i]) : line[idx[i]];
      return y;
    });
  };
  e.perf_shapes = {{{256, 4096}}};
  return e;
}

// The order statistics of one line (no NaN in the inputs): the entry at a
// rank of the stable ascending order, or the mode (the smallest of the most
// frequent values, at its last index); value or index.
using LinePick = size_t (*)(const std::vector<double>& line, int64_t k);
size_t at_rank(const std::vector<double>& line, size_t rank) {
  if (rank >= line.size()) throw raises<IndexError>("IndexError");
  return order(line, false)[rank];
}
size_t kth_pick(const std::vector<double>& line, int64_t k) { return at_rank(line, size_t(k - 1)); }
size_t median_pick(const std::vector<double>& line, int64_t) { return at_rank(line, (line.size() - 1) / 2); }
size_t mode_pick(const std::vector<double>& line, int64_t) {
  size_t best = 0, best_count = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    size_t count = 0, last = i;
    for (size_t j = 0; j < line.size(); ++j)
      if (line[j] == line[i]) ++count, last = j;
    if (count > best_count || (count == best_count && line[i] < line[best])) best = last, best_count = count;
  }
  return best;
}

// kthvalue (k = 3), median, nanmedian or mode along dim; values or indices.
// Ints from a narrow range give ties, whose index the stable order decides.
Entry order_statistic_entry(const char* op, int dim, bool keepdim, bool want_indices) {
  Entry e;
  e.op = op;
  e.dtypes = kFloatsAndInts;
  e.lo = -3;
  e.hi = 3;
  e.shapes = reduce_shapes({dim});
  const std::string name = op;
  constexpr int64_t k = 3;
  e.call = [name, dim, keepdim, want_indices](const std::vector<Tensor>& x) {
    const ValuesIndices r = name == "kthvalue"    ? kthvalue(x[0], k, dim, keepdim)
                            : name == "median"    ? median(x[0], dim, keepdim)
                            : name == "nanmedian" ? nanmedian(x[0], dim, keepdim)
                                                  : mode(x[0], dim, keepdim);
    return want_indices ? r.indices : r.values;
  };
  const LinePick pick = name == "kthvalue" ? kth_pick : name == "mode" ? mode_pick : median_pick;
  const auto groups = reduction(
      {dim}, keepdim,
      [pick, want_indices](const std::vector<double>& line) {
        const size_t i = pick(line, k);
        return want_indices ? double(i) : line[i];
      },
      raises<IndexError>("IndexError"));
  e.oracle = [name, groups](const Inputs& in, const Tensor& out) {
    if (name != "mode" && in.tensors[0].dtype() == DType::Bool)
      throw raises<NotImplementedError>("NotImplementedError");
    return groups(in, out);
  };
  e.perf_shapes = {{{256, 4096}}};
  return e;
}

// bincount of a 1-d integer tensor, optionally weighted by a second input of
// the same dtype (as float64, or float32 when weights_f32), with minlength.
Entry bincount_entry(bool weighted, bool weights_f32, int64_t minlength) {
  Entry e;
  e.op = "bincount";
  e.dtypes = {DType::Int64, DType::Int32, DType::UInt8, DType::Int16, DType::Float32};
  e.lo = 0;
  e.hi = 9;
  e.shapes = [weighted](ShapeClass c) -> std::vector<InputSpec> {
    std::vector<InputSpec> one;
    switch (c) {
      case ShapeClass::Empty:
        one = {{{0}}};
        break;
      case ShapeClass::Scalar:
        one = {{{}}};
        break;  // raises: bincount takes 1-d inputs
      case ShapeClass::Odd:
        one = {{{37}}};
        break;
      case ShapeClass::NonContiguous:
        one = {{{37}, InputSpec::Strided}};
        break;
      case ShapeClass::Broadcast:
        one = {{{37}, InputSpec::Expanded, {1}}};
        break;
    }
    if (weighted) one.push_back(one[0]);
    return one;
  };
  e.call = [weighted, weights_f32, minlength](const std::vector<Tensor>& x) {
    if (!weighted) return bincount(x[0], Tensor(), minlength);
    return bincount(x[0], x[1].to(weights_f32 ? DType::Float32 : DType::Float64), minlength);
  };
  e.oracle = [weighted, minlength](const Inputs& in, const Tensor& out) {
    if (in.shapes[0].size() != 1) throw raises<ValueError>("ValueError");
    if (in.tensors[0].dtype() == DType::Float32) throw raises<TypeError>("TypeError");
    const std::vector<double>& x = in.values[0];
    double top = -1;
    for (double v : x) top = std::max(top, v);
    std::vector<double> bins(size_t(std::max<int64_t>(int64_t(top) + 1, minlength)), 0.0);
    for (size_t i = 0; i < x.size(); ++i) bins[size_t(x[i])] += weighted ? in.values[1][i] : 1.0;
    if (out.defined()) expect_shape(out, {int64_t(bins.size())});
    return bins;
  };
  e.perf_shapes = {{{1 << 20}}};
  return e;
}

KILN_OP_TABLE({
    sort_entry("sort", -1, false, -1, false),
    sort_entry("sort", 0, true, -1, true),
    sort_entry("sort", -1, true, -1, true),
    sort_entry("argsort", -1, false, -1, true),
    sort_entry("argsort", 0, true, -1, true),
    sort_entry("topk", -1, true, 3, false),
    sort_entry("topk", -1, true, 3, true),
    sort_entry("topk", 0, false, 2, true),
    sort_entry("topk", 0, false, 0, false),
    order_statistic_entry("kthvalue", -1, false, false),
    order_statistic_entry("kthvalue", 0, true, true),
    order_statistic_entry("median", -1, false, true),
    order_statistic_entry("median", 0, true, false),
    order_statistic_entry("nanmedian", -1, true, true),
    order_statistic_entry("nanmedian", 0, false, false),
    order_statistic_entry("mode", -1, false, true),
    order_statistic_entry("mode", 0, true, false),
    bincount_entry(false, false, 0),
    bincount_entry(false, false, 12),
    bincount_entry(true, false, 0),
    bincount_entry(true, true, 3),
});

}  // namespace
}  // namespace op_table
