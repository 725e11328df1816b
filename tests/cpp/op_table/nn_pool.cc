// Op table entries of the pooling ops (ops/registry/pool.h): float64 loops
// over every window written from torch's definitions (output sizes, ceil_mode,
// padding, dilation, count_include_pad, divisor_override, adaptive windows,
// NaN wins the max), and the backward ops as the transposed scatters.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kiln/pool.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;
using Ints = std::vector<int64_t>;

enum class Kind { Max, Avg, AdaptiveAvg, AdaptiveMax };

// One pooling configuration: x's shape (nd trailing spatial dims) and the
// arguments, expanded to nd entries (adaptive: `k` is the output size).
struct Config {
  Kind kind;
  Shape x;
  Ints k, s, p, d;
  bool ceil = false, count_include_pad = true;
  int64_t divisor = 0;  // 0: none
  int nd() const { return int(k.size()); }
};

int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

// The output size of one dim, from torch's formula in floating point.
int64_t out_size(const Config& c, int i, int64_t in) {
  if (c.kind == Kind::AdaptiveAvg || c.kind == Kind::AdaptiveMax) return c.k[size_t(i)];
  const double k = double(c.k[size_t(i)]), s = double(c.s[size_t(i)]), p = double(c.p[size_t(i)]),
               d = double(c.d[size_t(i)]);
  const double q = (double(in) + 2 * p - d * (k - 1) - 1) / s;
  int64_t o = int64_t(c.ceil ? std::ceil(q) : std::floor(q)) + 1;
  if (c.ceil && double(o - 1) * s >= double(in) + p) --o;  // the last window starts in the input or left pad
  return o;
}

Shape out_shape(const Config& c, const Shape& x) {
  Shape o = x;
  const size_t lead = x.size() - size_t(c.nd());
  for (int i = 0; i < c.nd(); ++i) o[lead + size_t(i)] = out_size(c, i, x[lead + size_t(i)]);
  return o;
}

// One output cell: the in-plane positions of its window that lie in the
// input (in window order), and its average divisor.
struct Cell {
  std::vector<int64_t> pos;
  double divisor = 1;
};

// The cells of one plane, row-major over the output's spatial dims.
std::vector<Cell> cells(const Config& c, const Shape& x) {
  const int nd = c.nd();
  const size_t lead = x.size() - size_t(nd);
  const Shape in(x.begin() + std::ptrdiff_t(lead), x.end());
  Shape on(static_cast<size_t>(nd), 0);
  for (int i = 0; i < nd; ++i) on[size_t(i)] = out_size(c, i, in[size_t(i)]);
  std::vector<Cell> r;
  std::vector<int64_t> o(static_cast<size_t>(nd), 0);
  for (int64_t n = 0; n < prod(on, 0, on.size()); ++n) {
    for (int64_t t = n, i = nd - 1; i >= 0; --i) o[size_t(i)] = t % on[size_t(i)], t /= on[size_t(i)];
    // Per dim: the input coordinates of the window (out of range ones dropped).
    std::vector<std::vector<int64_t>> coords(static_cast<size_t>(nd));
    double padded = 1;
    for (int i = 0; i < nd; ++i) {
      const size_t u = size_t(i);
      if (c.kind == Kind::AdaptiveAvg || c.kind == Kind::AdaptiveMax) {
        const int64_t lo = int64_t(std::floor(double(o[u]) * double(in[u]) / double(on[u])));
        const int64_t hi = int64_t(std::ceil(double(o[u] + 1) * double(in[u]) / double(on[u])));
        for (int64_t j = lo; j < hi; ++j) coords[u].push_back(j);
        continue;
      }
      const int64_t start = o[u] * c.s[u] - c.p[u];
      // avg: the window clipped to [-p, in + p) counts toward count_include_pad
      padded *= double(std::min(start + c.k[u], in[u] + c.p[u]) - start);
      for (int64_t j = 0; j < c.k[u]; ++j) {
        const int64_t at = start + j * c.d[u];
        if (at >= 0 && at < in[u]) coords[u].push_back(at);
      }
    }
    Cell cell;
    std::vector<size_t> w(static_cast<size_t>(nd), 0);
    bool empty = false;
    for (auto& v : coords) empty = empty || v.empty();
    while (!empty) {
      int64_t pos = 0;
      for (int i = 0; i < nd; ++i) pos = pos * in[size_t(i)] + coords[size_t(i)][w[size_t(i)]];
      cell.pos.push_back(pos);
      int i = nd - 1;
      while (i >= 0 && ++w[size_t(i)] == coords[size_t(i)].size()) w[size_t(i--)] = 0;
      if (i < 0) break;
    }
    cell.divisor = c.divisor                                             ? double(c.divisor)
                   : c.kind == Kind::AdaptiveAvg || !c.count_include_pad ? double(cell.pos.size())
                                                                         : padded;
    r.push_back(cell);
  }
  return r;
}

// The forward over x [*, in...] (values row-major): values, or indices as doubles.
std::vector<double> pool_ref(const Config& c, const std::vector<double>& xv, const Shape& x, bool indices) {
  const size_t lead = x.size() - size_t(c.nd());
  const int64_t planes = prod(x, 0, lead), in_plane = prod(x, lead, x.size());
  const std::vector<Cell> cs = cells(c, x);
  std::vector<double> y;
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* xp = xv.data() + pl * in_plane;
    for (const Cell& cell : cs) {
      if (c.kind == Kind::Avg || c.kind == Kind::AdaptiveAvg) {
        double s = 0;
        for (int64_t pos : cell.pos) s += xp[pos];
        y.push_back(cell.pos.empty() ? 0.0 : s / cell.divisor);
        continue;
      }
      // max: NaN wins (the last NaN of the window), else the first largest
      double best = -std::numeric_limits<double>::infinity();
      int64_t at = cell.pos.empty() ? -1 : cell.pos[0];
      for (int64_t pos : cell.pos)
        if (std::isnan(xp[pos]) || xp[pos] > best) best = xp[pos], at = pos;
      y.push_back(indices ? double(at) : best);
    }
  }
  return y;
}

// The backward over grad (the forward's output shape): each grad element
// scattered to its window (max: to its index from `idx`).
std::vector<double> backward_ref(const Config& c, const std::vector<double>& g, const Shape& x,
                                 const std::vector<double>& idx) {
  const size_t lead = x.size() - size_t(c.nd());
  const int64_t planes = prod(x, 0, lead), in_plane = prod(x, lead, x.size());
  std::vector<double> gi(size_t(planes * in_plane), 0.0);
  if (c.kind == Kind::Max) {
    const int64_t out_plane = planes ? int64_t(g.size()) / planes : 0;
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t o = 0; o < out_plane; ++o)
        gi[size_t(pl * in_plane + int64_t(idx[size_t(pl * out_plane + o)]))] += g[size_t(pl * out_plane + o)];
    return gi;
  }
  const std::vector<Cell> cs = cells(c, x);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (size_t o = 0; o < cs.size(); ++o)
      for (int64_t pos : cs[o].pos)
        gi[size_t(pl * in_plane + pos)] += g[size_t(pl) * cs.size() + o] / cs[o].divisor;
  return gi;
}

Tensor call_forward(const Config& c, const Tensor& x, bool indices) {
  switch (c.kind) {
    case Kind::Max: {
      const PoolResult r = max_pool_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
      return indices ? r.indices : r.values;
    }
    case Kind::Avg:
      return avg_pool(x, c.k, c.s, c.p, c.ceil, c.count_include_pad,
                      c.divisor ? std::optional<int64_t>(c.divisor) : std::nullopt);
    case Kind::AdaptiveAvg:
      return adaptive_avg_pool(x, c.k);
    case Kind::AdaptiveMax: {
      const PoolResult r = adaptive_max_pool(x, c.k);
      return indices ? r.indices : r.values;
    }
  }
  return Tensor();
}

// The shape classes over shape `base`: odd, transposed, expanded from a
// leading 1, and a zero batch (batched configs only); no 0-d class.
std::vector<InputSpec> classes(const Shape& base, ShapeClass sc, bool batched) {
  switch (sc) {
    case ShapeClass::Empty: {
      if (!batched) return {};
      Shape e = base;
      e[0] = 0;
      return {{e}};
    }
    case ShapeClass::Scalar:
      return {};
    case ShapeClass::Odd:
      return {{base}};
    case ShapeClass::NonContiguous:
      return {{base, InputSpec::Transposed}};
    case ShapeClass::Broadcast: {
      Shape one = base;
      one[0] = 1;
      return {{base, InputSpec::Expanded, one}};
    }
  }
  return {};
}

const char* op_of(Kind k) {
  switch (k) {
    case Kind::Max:
      return "max_pool";
    case Kind::Avg:
      return "avg_pool";
    case Kind::AdaptiveAvg:
      return "adaptive_avg_pool";
    case Kind::AdaptiveMax:
      return "adaptive_max_pool";
  }
  return "";
}

// Finite values replaced by their ranks spread over [-4, 4] (ties impossible,
// gaps far above gradcheck's steps); NaN and infinities kept.
void distinct(size_t, const Shape&, std::vector<double>& v) {
  std::vector<size_t> order;
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  for (size_t r = 0; r < order.size(); ++r)
    v[order[r]] = -4.0 + 8.0 * (double(r) + 0.5) / double(order.size());
}

Entry forward_entry(const Config& c, bool indices, std::vector<double> specials = {}) {
  Entry e;
  e.op = op_of(c.kind);
  const bool is_max = c.kind == Kind::Max || c.kind == Kind::AdaptiveMax;
  e.dtypes = indices ? std::vector<DType>{DType::Float32, DType::Float64} : kFloats;
  const bool batched = int(c.x.size()) == c.nd() + 2;
  e.shapes = [c, batched](ShapeClass sc) { return classes(c.x, sc, batched); };
  e.call = [c, indices](const std::vector<Tensor>& x) { return call_forward(c, x[0], indices); };
  e.oracle = [c, indices](const Inputs& in, const Tensor& out) {
    if (out.defined()) expect_shape(out, out_shape(c, in.shapes[0]));
    return pool_ref(c, in.values[0], in.shapes[0], indices);
  };
  if (is_max) e.condition = distinct;  // no ties: one index, one derivative
  e.specials = std::move(specials);
  e.ulps = 32;  // float32 sums of the averages
  Config big = c;
  big.x = {8, 64, 56, 56};
  if (c.nd() == 2) e.perf_shapes = {{big.x}};
  return e;
}

// The backward op of c: inputs grad (the forward's output shape) and, for
// max, int64 indices within the plane.
Entry backward_entry(const Config& c) {
  Entry e;
  e.op = c.kind == Kind::Max   ? "max_pool_backward"
         : c.kind == Kind::Avg ? "avg_pool_backward"
                               : "adaptive_avg_pool_backward";
  e.dtypes = kFloats;
  const bool batched = int(c.x.size()) == c.nd() + 2;
  const Shape gshape = out_shape(c, c.x);
  const int64_t in_plane = prod(c.x, c.x.size() - size_t(c.nd()), c.x.size());
  e.shapes = [c, batched, gshape, in_plane](ShapeClass sc) {
    std::vector<InputSpec> s = classes(gshape, sc, batched);
    if (c.kind == Kind::Max && !s.empty()) {
      InputSpec ind = s[0];
      ind.ints = InputSpec::Ints{DType::Int64, 0, in_plane};
      s.push_back(ind);
    }
    return s;
  };
  // input_shape follows the batch size of the case (0 for the empty class).
  auto input_shape = [c](const Shape& g) {
    Shape x = c.x;
    x[0] = g[0];
    return x;
  };
  e.call = [c, input_shape](const std::vector<Tensor>& t) {
    const Shape x = input_shape(t[0].sizes());
    switch (c.kind) {
      case Kind::Max:
        return max_pool_backward(t[0], t[1], x, c.nd());
      case Kind::Avg:
        return avg_pool_backward(t[0], x, c.k, c.s, c.p, c.ceil, c.count_include_pad,
                                 c.divisor ? std::optional<int64_t>(c.divisor) : std::nullopt);
      default:
        return adaptive_avg_pool_backward(t[0], x, c.nd());
    }
  };
  e.oracle = [c, input_shape](const Inputs& in, const Tensor& out) {
    const Shape x = input_shape(in.shapes[0]);
    if (out.defined()) expect_shape(out, x);
    return backward_ref(c, in.values[0], x, c.kind == Kind::Max ? in.values[1] : std::vector<double>{});
  };
  e.ulps = 32;
  return e;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<Entry> pool_entries() {
  // max: 2-d with stride, padding, dilation and ceil_mode; 1-d ceil_mode with
  // padding; 3-d with default stride; unbatched 2-d with dilation.
  const std::vector<Config> maxes = {
      {Kind::Max, {2, 3, 7, 9}, {3, 2}, {2, 1}, {1, 1}, {1, 2}, true},
      {Kind::Max, {2, 3, 11}, {4}, {3}, {2}, {1}, true},
      {Kind::Max, {2, 2, 5, 6, 7}, {2, 3, 2}, {2, 3, 2}, {1, 1, 0}, {1, 1, 1}, false},
      {Kind::Max, {3, 7, 9}, {3, 3}, {2, 2}, {0, 1}, {2, 2}, false},
  };
  const std::vector<Config> avgs = {
      {Kind::Avg, {2, 3, 7, 9}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, true, true},
      {Kind::Avg, {2, 3, 7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false},
      {Kind::Avg, {2, 2, 5, 6, 7}, {3, 2, 2}, {2, 2, 2}, {1, 0, 1}, {1, 1, 1}, true, false, 5},
      {Kind::Avg, {2, 3, 11}, {4}, {3}, {2}, {1}, false, true},
      {Kind::Avg, {3, 7, 9}, {2, 4}, {2, 4}, {1, 2}, {1, 1}, true, true, -3},
  };
  const std::vector<Config> adaptives = {
      {Kind::AdaptiveAvg, {2, 3, 7, 9}, {3, 4}},       {Kind::AdaptiveAvg, {2, 3, 11}, {4}},
      {Kind::AdaptiveAvg, {2, 2, 5, 6, 7}, {2, 4, 3}}, {Kind::AdaptiveAvg, {3, 7, 9}, {10, 4}},
      {Kind::AdaptiveMax, {2, 3, 7, 9}, {3, 4}},       {Kind::AdaptiveMax, {2, 3, 11}, {4}},
      {Kind::AdaptiveMax, {3, 7, 9}, {10, 4}},
  };
  std::vector<Entry> es;
  for (const Config& c : maxes) {
    es.push_back(forward_entry(c, false));
    es.push_back(forward_entry(c, true));
    es.push_back(backward_entry(c));
  }
  // NaN wins (the last NaN of a window), -inf never beats a finite value.
  es.push_back(forward_entry(maxes[0], false, {kNaN, -kInf}));
  es.push_back(forward_entry(maxes[0], true, {kNaN, -kInf}));
  es.push_back(forward_entry(adaptives[4], true, {kNaN, -kInf}));
  for (const Config& c : avgs) {
    es.push_back(forward_entry(c, false));
    es.push_back(backward_entry(c));
  }
  for (const Config& c : adaptives) {
    es.push_back(forward_entry(c, false));
    if (c.kind == Kind::AdaptiveMax) es.push_back(forward_entry(c, true));
    if (c.kind == Kind::AdaptiveAvg) es.push_back(backward_entry(c));
  }
  return es;
}

// ---- fractional max pooling --------------------------------------------------
// Windows of size k per dim starting at int((i + u) * alpha) - int(u * alpha),
// alpha = (in - k) / (out - 1), the last at in - k (Graham 2014, as torch). The
// samples u are eighths and every alpha below a multiple of 1/2, so the window
// starts are exact in float32 and the oracle's doubles give torch's windows.

struct Fractional {
  Shape x;  // [N, C, *in] or [C, *in]
  Ints k, out;
  int nd() const { return int(k.size()); }
};

// The sample of plane pl's j-th entry (torch's order: (W, H) or (T, H, W)).
double fractional_sample(int64_t pl, int j, int nd) { return double((pl * nd + j) * 3 % 8) / 8.0; }

Tensor fractional_samples(const Fractional& f, const Tensor& x) {
  const int nd = f.nd();
  const int64_t batch = x.dim() == nd + 2 ? x.size(0) : 1, channels = x.size(x.dim() - nd - 1);
  std::vector<float> v;
  for (int64_t pl = 0; pl < batch * channels; ++pl)
    for (int j = 0; j < nd; ++j) v.push_back(float(fractional_sample(pl, j, nd)));
  return from_buffer_copy(v.data(), {batch, channels, nd}, DType::Float32).to(x.device());
}

std::vector<double> fractional_ref(const Fractional& f, const std::vector<double>& xv, const Shape& x,
                                   bool indices) {
  const int nd = f.nd();
  const size_t lead = x.size() - size_t(nd);
  const int64_t planes = prod(x, 0, lead), in_plane = prod(x, lead, x.size());
  std::vector<double> y;
  for (int64_t pl = 0; pl < planes; ++pl) {
    std::vector<std::vector<int64_t>> starts(static_cast<size_t>(nd));
    for (int i = 0; i < nd; ++i) {
      const int64_t in = x[lead + size_t(i)], k = f.k[size_t(i)], out = f.out[size_t(i)];
      const double u = fractional_sample(pl, nd == 2 ? 1 - i : i, nd);
      const double alpha = out > 1 ? double(in - k) / double(out - 1) : 0.0;
      for (int64_t o = 0; o + 1 < out; ++o)
        starts[size_t(i)].push_back(int64_t((double(o) + u) * alpha) - int64_t(u * alpha));
      starts[size_t(i)].push_back(in - k);
    }
    const double* xp = xv.data() + pl * in_plane;
    const int64_t cells = prod(Shape(f.out.begin(), f.out.end()), 0, size_t(nd));
    for (int64_t cell = 0; cell < cells; ++cell) {
      std::vector<int64_t> o(static_cast<size_t>(nd));
      for (int64_t t = cell, i = nd - 1; i >= 0; --i)
        o[size_t(i)] = t % f.out[size_t(i)], t /= f.out[size_t(i)];
      double best = -std::numeric_limits<double>::infinity();
      int64_t at = -1;
      const int64_t window = prod(Shape(f.k.begin(), f.k.end()), 0, size_t(nd));
      for (int64_t w = 0; w < window; ++w) {  // row-major over the window
        int64_t pos = 0;
        for (int64_t t = w, i = 0, rest = window; i < nd; ++i) {
          rest /= f.k[size_t(i)];
          const int64_t off = t / rest;
          t %= rest;
          pos = pos * x[lead + size_t(i)] + starts[size_t(i)][size_t(o[size_t(i)])] + off;
        }
        if (at < 0) at = pos;
        if (std::isnan(xp[pos]) || xp[pos] > best) best = xp[pos], at = pos;
      }
      y.push_back(indices ? double(at) : best);
    }
  }
  return y;
}

Entry fractional_entry(const Fractional& f, bool indices, std::vector<double> specials = {}) {
  Entry e;
  e.op = "fractional_max_pool";
  e.dtypes = indices ? std::vector<DType>{DType::Float32, DType::Float64} : kFloats;
  const bool batched = int(f.x.size()) == f.nd() + 2;
  e.shapes = [f, batched](ShapeClass sc) { return classes(f.x, sc, batched); };
  e.call = [f, indices](const std::vector<Tensor>& x) {
    const PoolResult r = fractional_max_pool(x[0], f.k, f.out, fractional_samples(f, x[0]));
    return indices ? r.indices : r.values;
  };
  e.oracle = [f, indices](const Inputs& in, const Tensor&) {
    return fractional_ref(f, in.values[0], in.shapes[0], indices);
  };
  e.condition = distinct;  // no ties: one index, one derivative
  e.specials = std::move(specials);
  e.ulps = 0;
  return e;
}

std::vector<Entry> fractional_entries() {
  // alphas: (7 - 2) / 2 = 2.5 and (9 - 3) / 4 = 1.5; (5 - 1) / 2 = 2, (8 - 2) / 3 = 2 and (7 - 2) / 5 = 1
  const std::vector<Fractional> fs = {
      {{2, 3, 7, 9}, {2, 3}, {3, 5}},
      {{3, 7, 9}, {2, 3}, {3, 5}},
      {{2, 2, 5, 8, 7}, {1, 2, 2}, {3, 4, 6}},
  };
  std::vector<Entry> es;
  for (const Fractional& f : fs) {
    es.push_back(fractional_entry(f, false));
    es.push_back(fractional_entry(f, true));
  }
  // NaN wins (the last NaN of a window), -inf never beats a finite value.
  es.push_back(fractional_entry(fs[0], false, {kNaN, -kInf}));
  es.push_back(fractional_entry(fs[0], true, {kNaN, -kInf}));
  return es;
}

KILN_OP_TABLE(pool_entries());
KILN_OP_TABLE(fractional_entries());

}  // namespace
}  // namespace op_table
