// Op table entries of nansum and nanmean, logcumsumexp, cummax and cummin
// (ops/registry/reduce.h), searchsorted and unique (ops/registry/sort.h), against
// float64 oracles: the non-NaN entries summed in order, a direct
// log(sum(exp)) over each prefix, a running extreme under torch's NaN and tie
// rule, a count of the entries below each value, and a sort-and-scan for
// unique (flattened and along a dim).
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;
using Group = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double nansum_of(const Group& g) {
  double s = 0;
  for (double v : g)
    if (!std::isnan(v)) s += v;
  return s;
}
double nanmean_of(const Group& g) {
  double s = 0, n = 0;
  for (double v : g)
    if (!std::isnan(v)) {
      s += v;
      ++n;
    }
  return s / n;  // none: 0 / 0 = NaN
}

Tensor nansum_(const Tensor& x, const DimList& d, bool k) { return kiln::nansum(x, d, k); }
Tensor nanmean_(const Tensor& x, const DimList& d, bool k) { return kiln::nanmean(x, d, k); }

std::vector<Entry> nan_reductions(const char* op, Tensor (*fn)(const Tensor&, const DimList&, bool),
                                  double (*f)(const Group&)) {
  std::vector<Entry> es;
  for (auto [dims, keepdim] : {std::pair{std::vector<int>{-1}, false}, std::pair{std::vector<int>{0}, true},
                               std::pair{std::vector<int>{}, false}}) {
    Entry e;
    e.op = op;
    e.dtypes = kFloats;
    e.shapes = reduce_shapes(dims);
    e.call = [fn, dims, keepdim](const std::vector<Tensor>& x) {
      return fn(x[0], dims.empty() ? DimList() : DimList(dims), keepdim);
    };
    e.oracle = reduction(dims, keepdim, f);
    e.specials = {kNaN};
    e.ulps = 8;
    e.floor = 16;  // sums: error scales with the terms
    e.perf_shapes = {{{1024, 1024}}};
    es.push_back(std::move(e));
  }
  return es;
}

// A line-preserving scan along dim: fn(x, dim), oracle line -> line.
Entry scan_entry(const char* op, std::function<Tensor(const Tensor&, int)> fn, int dim, LineFn line,
                 const std::vector<DType>& dtypes) {
  Entry e;
  e.op = op;
  e.dtypes = dtypes;
  e.shapes = unary_shapes;
  e.call = [fn, dim](const std::vector<Tensor>& x) { return fn(x[0], dim); };
  e.oracle = [dim, line](const Inputs& in, const Tensor& out) {
    if (out.defined()) expect_shape(out, in.shapes[0]);
    return map_lines(in.values[0], in.shapes[0], dim, line);
  };
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

Group logcumsumexp_line(const Group& x) {
  Group y;
  double s = 0;  // sum of exp, directly: inputs stay within [-8, 8] besides the specials
  bool nan = false, pinf = false;
  for (double v : x) {
    nan = nan || std::isnan(v);
    pinf = pinf || v == kInf;
    s += std::exp(v);
    y.push_back(nan ? kNaN : pinf ? kInf : std::log(s));
  }
  return y;
}

// cummax (greater) / cummin values (what = 0) or indices (what = 1).
LineFn cum_extreme_line(bool greater, int what) {
  return [greater, what](const Group& x) {
    Group y;
    double best = 0;
    int64_t at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      const bool take = i == 0 || std::isnan(v) || (!std::isnan(best) && (greater ? v >= best : v <= best));
      if (take) {
        best = v;
        at = int64_t(i);
      }
      y.push_back(what == 0 ? best : double(at));
    }
    return y;
  };
}

// searchsorted: input 0 holds the sorted rows (sorted by `condition`), input 1
// the values: [7] with [0, 3], [7] with a 0-d value, [5, 37] with [5, 11],
// [37] with a transposed [11, 5], and no broadcast class.
std::vector<InputSpec> search_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{7}}, {{0, 3}}};
    case ShapeClass::Scalar:
      return {{{7}}, {{}}};
    case ShapeClass::Odd:
      return {{{5, 37}}, {{5, 11}}};
    case ShapeClass::NonContiguous:
      return {{{37}}, {{11, 5}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {};
  }
  return {};
}

Entry searchsorted_entry(bool right) {
  Entry e;
  e.op = "searchsorted";
  e.dtypes = {DType::Float32, DType::Float64, DType::BFloat16, DType::Int32, DType::Int64};
  e.lo = -8;
  e.hi = 8;
  e.shapes = search_shapes;
  e.condition = [](size_t input, const Shape& shape, std::vector<double>& v) {
    if (input != 0 || shape.empty() || shape.back() == 0) return;
    const size_t m = size_t(shape.back());
    for (size_t r = 0; r < v.size() / m; ++r)
      std::sort(v.begin() + long(r * m), v.begin() + long((r + 1) * m));
  };
  e.call = [right](const std::vector<Tensor>& x) { return kiln::searchsorted(x[0], x[1], right); };
  e.oracle = [right](const Inputs& in, const Tensor& out) {
    if (out.defined()) expect_shape(out, in.shapes[1]);
    const Shape& ss = in.shapes[0];
    const size_t m = size_t(ss.back());
    const bool shared = ss.size() == 1;
    const size_t k = in.shapes[1].empty() ? 1 : size_t(in.shapes[1].back());
    std::vector<double> y;
    for (size_t j = 0; j < in.values[1].size(); ++j) {
      const double v = in.values[1][j];
      const size_t row = shared ? 0 : j / k;
      double count = 0;
      for (size_t i = 0; i < m; ++i) {
        const double s = in.values[0][row * m + i];
        count += right ? (s <= v) : (s < v);
      }
      y.push_back(count);
    }
    return y;
  };
  return e;
}

// unique (what: 0 values, 1 inverse, 2 counts) or unique_consecutive's
// values (consecutive) of the flattened input. The oracle sorts with NaN
// last (std::stable_sort on doubles, NaN moved to the end) and starts a run
// wherever a value differs from the one before (NaN equals nothing).
Entry unique_entry(int what, bool consecutive) {
  Entry e;
  e.op = "unique_runs";
  e.dtypes = kFloatsAndInts;
  e.shapes = unary_shapes;
  e.specials = {kNaN, kInf, -kInf};
  e.ulps = 0;
  e.call = [what, consecutive](const std::vector<Tensor>& x) {
    const UniqueResult r =
        consecutive ? kiln::unique_consecutive(x[0], true, true) : kiln::unique(x[0], true, true);
    return what == 0 ? r.values : what == 1 ? r.inverse : r.counts;
  };
  e.oracle = [what, consecutive](const Inputs& in, const Tensor&) {
    const std::vector<double>& x = in.values[0];
    std::vector<size_t> order(x.size());
    for (size_t i = 0; i < x.size(); ++i) order[i] = i;
    if (!consecutive)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::isnan(x[b]) ? !std::isnan(x[a]) : x[a] < x[b];
      });
    std::vector<double> values, inverse(x.size()), counts;
    for (size_t i = 0; i < order.size(); ++i) {
      const double v = x[order[i]];
      if (i == 0 || !(v == x[order[i - 1]])) {
        values.push_back(v);
        counts.push_back(0);
      }
      counts.back() += 1;
      inverse[order[i]] = double(values.size() - 1);
    }
    return what == 0 ? values : what == 1 ? inverse : counts;
  };
  return e;
}

// unique_dim / unique_consecutive_dim along dim 0 of a matrix [m, k] (what:
// 0 values, 1 inverse, 2 counts). Values drawn from {-1, 0, 1} (and the
// specials) so rows repeat. The oracle orders rows lexicographically with a
// stable sort (NaN after every number of its column, NaNs tied) and starts a
// run wherever a row differs from the one before in any element (NaN equals
// nothing).
Entry unique_dim_entry(int what, bool consecutive) {
  Entry e;
  e.op = "unique_rows";
  e.dtypes = kFloatsAndInts;
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, 3}}};
      case ShapeClass::Scalar:
        return {};
      case ShapeClass::Odd:
        return {{{11, 2}}};
      case ShapeClass::NonContiguous:
        return {{{7, 3}, InputSpec::Transposed}};
      case ShapeClass::Broadcast:
        return {{{6, 4}, InputSpec::Expanded, {1, 4}}};
    }
    return {};
  };
  e.condition = [](size_t, const Shape&, std::vector<double>& v) {
    for (double& x : v)
      if (std::isfinite(x)) x = std::round(x / 3);
  };
  e.specials = {kNaN, kInf, -kInf};
  e.ulps = 0;
  e.call = [what, consecutive](const std::vector<Tensor>& x) {
    const UniqueResult r = consecutive ? kiln::unique_consecutive_dim(x[0], 0, true, true)
                                       : kiln::unique_dim(x[0], 0, true, true);
    return what == 0 ? r.values : what == 1 ? r.inverse : r.counts;
  };
  e.oracle = [what, consecutive](const Inputs& in, const Tensor&) {
    const std::vector<double>& x = in.values[0];
    const size_t m = size_t(in.shapes[0][0]), k = size_t(in.shapes[0][1]);
    auto at = [&](size_t r, size_t j) { return x[r * k + j]; };
    std::vector<size_t> order(m);
    for (size_t i = 0; i < m; ++i) order[i] = i;
    if (!consecutive)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        for (size_t j = 0; j < k; ++j) {
          const double u = at(a, j), v = at(b, j);
          if (std::isnan(u) && std::isnan(v)) continue;
          if (std::isnan(u) || std::isnan(v)) return std::isnan(v);
          if (u != v) return u < v;
        }
        return false;
      });
    auto same = [&](size_t a, size_t b) {
      for (size_t j = 0; j < k; ++j)
        if (!(at(a, j) == at(b, j))) return false;
      return true;
    };
    std::vector<double> values, inverse(m), counts;
    for (size_t i = 0; i < m; ++i) {
      if (i == 0 || !same(order[i], order[i - 1])) {
        for (size_t j = 0; j < k; ++j) values.push_back(at(order[i], j));
        counts.push_back(0);
      }
      counts.back() += 1;
      inverse[order[i]] = double(counts.size() - 1);
    }
    return what == 0 ? values : what == 1 ? inverse : counts;
  };
  return e;
}

std::vector<Entry> entries_list() {
  std::vector<Entry> es;
  for (Entry& e : nan_reductions("nansum", nansum_, nansum_of)) es.push_back(std::move(e));
  for (Entry& e : nan_reductions("nanmean", nanmean_, nanmean_of)) es.push_back(std::move(e));
  for (int dim : {-1, 0}) {
    Entry l = scan_entry(
        "logcumsumexp", [](const Tensor& x, int d) { return kiln::logcumsumexp(x, d); }, dim,
        logcumsumexp_line, kFloats);
    l.lo = -8;
    l.hi = 8;
    l.specials = {-kInf, kInf, kNaN};
    l.ulps = 8;
    es.push_back(std::move(l));
    for (bool greater : {true, false})
      for (int what : {0, 1}) {
        const char* op = greater ? "cummax" : "cummin";
        Entry c = scan_entry(
            op,
            [greater, what](const Tensor& x, int d) {
              const ValuesIndices r = greater ? kiln::cummax(x, d) : kiln::cummin(x, d);
              return what == 0 ? r.values : r.indices;
            },
            dim, cum_extreme_line(greater, what), kFloatsAndInts);
        c.specials = {kNaN, -kInf, kInf};
        c.ulps = 0;
        es.push_back(std::move(c));
      }
  }
  es.push_back(searchsorted_entry(false));
  es.push_back(searchsorted_entry(true));
  for (int what : {0, 1, 2}) es.push_back(unique_entry(what, false));
  es.push_back(unique_entry(0, true));
  for (int what : {0, 1, 2}) es.push_back(unique_dim_entry(what, false));
  es.push_back(unique_dim_entry(0, true));
  es.push_back(unique_dim_entry(2, true));
  return es;
}

KILN_OP_TABLE(entries_list());

}  // namespace
}  // namespace op_table
