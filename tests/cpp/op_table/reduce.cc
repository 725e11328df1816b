// Op table entries of the reductions and scans (ops/registry/reduce.h): each
// over one dim (0 and -1), all dims and, where the op takes a list, two dims;
// with and without keepdim; empty reductions give the identity or raise as
// torch does.
#include "kiln/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

constexpr double kInf = std::numeric_limits<double>::infinity();
using Group = std::vector<double>;

DimList dim_list(const std::vector<int>& dims) {
  if (dims.empty()) return std::nullopt;
  return dims;
}

using DimsFn = Tensor (*)(const Tensor&, const DimList&, bool);

// An entry reducing x over dims with fn(x, dims, keepdim); f the float64 group oracle.
Entry reduce(const char* op, DimsFn fn, std::vector<int> dims, bool keepdim, GroupFn f,
             const std::vector<DType>& dtypes, std::optional<Raises> on_empty = std::nullopt) {
  Entry e;
  e.op = op;
  e.dtypes = dtypes;
  e.shapes = reduce_shapes(dims);
  e.call = [fn, dims, keepdim](const std::vector<Tensor>& x) { return fn(x[0], dim_list(dims), keepdim); };
  e.oracle = reduction(dims, keepdim, std::move(f), on_empty);
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

// The same entry over dim 1 (rows), dim 0 (columns), all dims and {0, 1} with keepdim.
std::vector<Entry> over_dims(const char* op, DimsFn fn, GroupFn f, const std::vector<DType>& dtypes,
                             std::optional<Raises> on_empty = std::nullopt) {
  return {reduce(op, fn, {-1}, false, f, dtypes, on_empty), reduce(op, fn, {0}, true, f, dtypes, on_empty),
          reduce(op, fn, {}, false, f, dtypes, on_empty), reduce(op, fn, {0, 1}, true, f, dtypes, on_empty)};
}

// The same over complex inputs (complex walks only), from a complex group oracle.
using CGroup = std::vector<cdouble>;
Entry reduce_complex(const char* op, DimsFn fn, std::vector<int> dims, bool keepdim, ComplexGroupFn f) {
  Entry e = reduce(op, fn, dims, keepdim, nullptr, {});
  e.oracle = nullptr;
  return with_complex(std::move(e), reduction(dims, keepdim, std::move(f)));
}
std::vector<Entry> over_dims_complex(const char* op, DimsFn fn, ComplexGroupFn f) {
  return {reduce_complex(op, fn, {-1}, false, f), reduce_complex(op, fn, {0}, true, f),
          reduce_complex(op, fn, {}, false, f), reduce_complex(op, fn, {0, 1}, true, f)};
}
cdouble csum_of(const CGroup& g) {
  cdouble s = 0;
  for (cdouble v : g) s += v;
  return s;
}
cdouble cmean_of(const CGroup& g) { return csum_of(g) / double(g.size()); }  // empty: NaN
cdouble cprod_of(const CGroup& g) {
  cdouble p = 1;
  for (cdouble v : g) p *= v;
  return p;
}
// Complex var: sum |z - mean|^2 / (n - 1), real; std its root; norm sqrt(sum |z|^2).
cdouble cvar_of(const CGroup& g) {
  const cdouble m = cmean_of(g);
  double ss = 0;
  for (cdouble v : g) ss += std::norm(v - m);
  return ss / std::max(0.0, double(g.size()) - 1.0);
}
cdouble cstd_of(const CGroup& g) { return std::sqrt(cvar_of(g).real()); }
cdouble cnorm_of(const CGroup& g) {
  double ss = 0;
  for (cdouble v : g) ss += std::norm(v);
  return std::sqrt(ss);
}

double sum_of(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double mean_of(const Group& g) { return sum_of(g) / double(g.size()); }  // empty: 0/0 = NaN
double prod_of(const Group& g) {
  double p = 1;
  for (double v : g) p *= v;
  return p;
}
double all_of(const Group& g) {
  return std::all_of(g.begin(), g.end(), [](double v) { return v != 0; });
}
double any_of(const Group& g) {
  return std::any_of(g.begin(), g.end(), [](double v) { return v != 0; });
}
double nonzero_of(const Group& g) {
  return double(std::count_if(g.begin(), g.end(), [](double v) { return v != 0; }));
}
// No identity: an empty group gives NaN (the entry says what the op raises).
double max_of(const Group& g) { return g.empty() ? NAN : *std::max_element(g.begin(), g.end()); }
double min_of(const Group& g) { return g.empty() ? NAN : *std::min_element(g.begin(), g.end()); }
// The first index of the max (min): max_element returns the first of equals.
double argmax_of(const Group& g) { return double(std::max_element(g.begin(), g.end()) - g.begin()); }
double argmin_of(const Group& g) { return double(std::min_element(g.begin(), g.end()) - g.begin()); }
// sum((x - mean)^2) / max(0, n - correction): 0/0 = NaN for an empty group.
double var_of(const Group& g, double correction) {
  const double m = mean_of(g);
  double ss = 0;
  for (double v : g) ss += (v - m) * (v - m);
  return ss / std::max(0.0, double(g.size()) - correction);
}
double logsumexp_of(const Group& g) {
  double m = -kInf;
  for (double v : g) m = std::max(m, v);
  if (m == -kInf) return -kInf;
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  return m + std::log(s);
}
double pnorm_of(const Group& g, double p) {
  if (p == kInf || p == -kInf) {
    double r = p == kInf ? 0.0 : kInf;
    for (double v : g) r = p == kInf ? std::max(r, std::fabs(v)) : std::min(r, std::fabs(v));
    return r;
  }
  double s = 0;
  for (double v : g) s += p == 0 ? (v != 0) : std::pow(std::fabs(v), p);
  return p == 0 ? s : std::pow(s, 1.0 / p);
}

const Raises kIndexError = raises<IndexError>("IndexError");
const Raises kValueError = raises<ValueError>("ValueError");

Tensor sum_(const Tensor& x, const DimList& d, bool k) { return kiln::sum(x, d, k); }
Tensor mean_(const Tensor& x, const DimList& d, bool k) { return kiln::mean(x, d, k); }
Tensor prod_(const Tensor& x, const DimList& d, bool k) { return kiln::prod(x, d, k); }
Tensor all_(const Tensor& x, const DimList& d, bool k) { return kiln::all(x, d, k); }
Tensor any_(const Tensor& x, const DimList& d, bool k) { return kiln::any(x, d, k); }
Tensor count_nonzero_(const Tensor& x, const DimList& d, bool) { return kiln::count_nonzero(x, d); }
Tensor amax_(const Tensor& x, const DimList& d, bool k) { return kiln::amax(x, d, k); }
Tensor amin_(const Tensor& x, const DimList& d, bool k) { return kiln::amin(x, d, k); }
Tensor logsumexp_(const Tensor& x, const DimList& d, bool k) { return kiln::logsumexp(x, d, k); }
Tensor var_(const Tensor& x, const DimList& d, bool k) { return kiln::var(x, d, 1.0, k); }
Tensor var0_(const Tensor& x, const DimList& d, bool k) { return kiln::var(x, d, 0.0, k); }
Tensor std_(const Tensor& x, const DimList& d, bool k) { return kiln::std(x, d, 1.0, k); }
Tensor var_mean_var(const Tensor& x, const DimList& d, bool k) { return kiln::var_mean(x, d, 1.0, k).first; }
Tensor var_mean_mean(const Tensor& x, const DimList& d, bool k) {
  return kiln::var_mean(x, d, 1.0, k).second;
}
Tensor std_mean_std(const Tensor& x, const DimList& d, bool k) { return kiln::std_mean(x, d, 0.0, k).first; }
Tensor std_mean_mean(const Tensor& x, const DimList& d, bool k) {
  return kiln::std_mean(x, d, 0.0, k).second;
}
template <int P>  // P = 99: +inf, -99: -inf
Tensor norm_(const Tensor& x, const DimList& d, bool k) {
  return kiln::norm(x, P == 99 ? kInf : P == -99 ? -kInf : double(P), d, k);
}
template <int P>
double norm_of(const Group& g) {
  return pnorm_of(g, P == 99 ? kInf : P == -99 ? -kInf : double(P));
}

// The single-dim ops: max/min values and indices, argmax/argmin, over dim
// `dim` (or, argmax with no dim, the flattened tensor).
Tensor max_values(const Tensor& x, const DimList& d, bool k) { return kiln::max(x, (*d)[0], k).values; }
Tensor max_indices(const Tensor& x, const DimList& d, bool k) { return kiln::max(x, (*d)[0], k).indices; }
Tensor min_values(const Tensor& x, const DimList& d, bool k) { return kiln::min(x, (*d)[0], k).values; }
Tensor min_indices(const Tensor& x, const DimList& d, bool k) { return kiln::min(x, (*d)[0], k).indices; }
Tensor max_whole(const Tensor& x, const DimList&, bool) { return kiln::max(x); }
Tensor min_whole(const Tensor& x, const DimList&, bool) { return kiln::min(x); }
Tensor argmax_(const Tensor& x, const DimList& d, bool k) {
  return kiln::argmax(x, d ? std::optional<int>((*d)[0]) : std::nullopt, k);
}
Tensor argmin_(const Tensor& x, const DimList& d, bool k) {
  return kiln::argmin(x, d ? std::optional<int>((*d)[0]) : std::nullopt, k);
}

// The running sums (products) of a line.
template <typename T>
std::vector<T> scan_of(const std::vector<T>& line, bool prod) {
  std::vector<T> y(line.size());
  T acc = prod ? 1 : 0;
  for (size_t i = 0; i < line.size(); ++i) y[i] = acc = prod ? acc * line[i] : acc + line[i];
  return y;
}

// A scan along dim: out has x's shape.
Entry scan(const char* op, Tensor (*fn)(const Tensor&, int, std::optional<DType>), int dim, bool prod,
           double lo, double hi) {
  Entry e;
  e.op = op;
  e.dtypes = kFloatsAndInts;
  e.lo = lo;
  e.hi = hi;
  e.shapes = unary_shapes;
  e.call = [fn, dim](const std::vector<Tensor>& x) { return fn(x[0], dim, std::nullopt); };
  e.oracle = [dim, prod](const Inputs& in, const Tensor& out) {
    if (out.defined()) expect_shape(out, in.shapes[0]);
    return map_lines(in.values[0], in.shapes[0], dim,
                     [prod](const Group& line) { return scan_of(line, prod); });
  };
  e.complex_oracle = [dim, prod](const Inputs& in, const Tensor& out) {
    if (out.defined()) expect_shape(out, in.shapes[0]);
    return map_lines(in.cvalues[0], in.shapes[0], dim,
                     [prod](const CGroup& line) { return scan_of(line, prod); });
  };
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

std::vector<Entry> entries_list() {
  std::vector<Entry> es;
  auto add = [&](std::vector<Entry> more) {
    for (Entry& e : more) {
      es.push_back(std::move(e));
    }
  };
  auto domain = [](std::vector<Entry> v, double lo, double hi, double ulps, double floor) {
    for (Entry& e : v) {
      e.lo = lo;
      e.hi = hi;
      e.ulps = ulps;
      e.floor = floor;
    }
    return v;
  };
  // Sums: float32 lanes over short blocks, so the error scales with the terms, not the result.
  add(domain(over_dims("sum", sum_, sum_of, kFloatsAndInts), -4, 4, 8, 16));
  add(domain(over_dims("mean", mean_, mean_of, kFloats), -4, 4, 8, 4));
  add(domain(over_dims("prod", prod_, prod_of, kFloatsAndInts), -1.5, 1.5, 4, 1));
  add(domain(over_dims("all", all_, all_of, kFloatsAndInts), -1, 1, 0, 1));
  add(domain(over_dims("any", any_, any_of, kFloatsAndInts), -1, 1, 0, 1));
  // count_nonzero has no keepdim.
  add(domain({reduce("count_nonzero", count_nonzero_, {-1}, false, nonzero_of, kFloatsAndInts),
              reduce("count_nonzero", count_nonzero_, {0, 1}, false, nonzero_of, kFloatsAndInts),
              reduce("count_nonzero", count_nonzero_, {}, false, nonzero_of, kFloatsAndInts)},
             -1, 1, 0, 1));
  add(over_dims("amax", amax_, max_of, kFloatsAndInts, kIndexError));
  add(over_dims("amin", amin_, min_of, kFloatsAndInts, kIndexError));
  add({reduce("max", max_values, {-1}, false, max_of, kFloatsAndInts, kIndexError),
       reduce("max", max_indices, {0}, true, argmax_of, kFloatsAndInts, kIndexError),
       reduce("max", max_whole, {}, false, max_of, kFloatsAndInts, kValueError),
       reduce("min", min_values, {0}, false, min_of, kFloatsAndInts, kIndexError),
       reduce("min", min_indices, {-1}, true, argmin_of, kFloatsAndInts, kIndexError),
       reduce("min", min_whole, {}, false, min_of, kFloatsAndInts, kValueError),
       reduce("argmax", argmax_, {-1}, false, argmax_of, kFloatsAndInts, kIndexError),
       reduce("argmax", argmax_, {0}, true, argmax_of, kFloatsAndInts, kIndexError),
       reduce("argmax", argmax_, {}, true, argmax_of, kFloatsAndInts, kValueError),
       reduce("argmin", argmin_, {-1}, true, argmin_of, kFloatsAndInts, kIndexError),
       reduce("argmin", argmin_, {}, false, argmin_of, kFloatsAndInts, kValueError)});
  auto var1 = [](const Group& g) { return var_of(g, 1.0); };
  auto var0 = [](const Group& g) { return var_of(g, 0.0); };
  add(over_dims("var", var_, var1, kFloats));
  add({reduce("var", var0_, {0}, false, var0, kFloats)});
  add(over_dims(
      "std", std_, [](const Group& g) { return std::sqrt(var_of(g, 1.0)); }, kFloats));
  add({reduce("var_mean", var_mean_var, {-1}, true, var1, kFloats),
       reduce("var_mean", var_mean_mean, {0, 1}, false, mean_of, kFloats),
       reduce(
           "std_mean", std_mean_std, {0}, false, [](const Group& g) { return std::sqrt(var_of(g, 0.0)); },
           kFloats),
       reduce("std_mean", std_mean_mean, {}, true, mean_of, kFloats)});
  add(domain(over_dims("logsumexp", logsumexp_, logsumexp_of, kFloatsAndInts), -8, 8, 4, 1));
  add(over_dims("norm", norm_<2>, norm_of<2>, kFloats));
  add({reduce("norm", norm_<1>, {0}, false, norm_of<1>, kFloats),
       reduce("norm", norm_<0>, {}, false, norm_of<0>, kFloats),
       reduce("norm", norm_<3>, {-1}, true, norm_of<3>, kFloats),
       reduce("norm", norm_<99>, {0}, false, norm_of<99>, kFloats),
       reduce("norm", norm_<-99>, {0}, false, norm_of<-99>, kFloats, kIndexError),
       reduce("norm", norm_<-99>, {-1}, true, norm_of<-99>, kFloats, kIndexError)});
  add({scan("cumsum", kiln::cumsum, -1, false, -4, 4), scan("cumsum", kiln::cumsum, 0, false, -4, 4),
       scan("cumprod", kiln::cumprod, -1, true, -1.5, 1.5), scan("cumprod", kiln::cumprod, 0, true, -4, 4)});
  // Complex inputs (both parts from [lo, hi]); var, std and norm give real results.
  add(domain(over_dims_complex("sum", sum_, csum_of), -4, 4, 8, 16));
  add(domain(over_dims_complex("mean", mean_, cmean_of), -4, 4, 8, 4));
  add(domain(over_dims_complex("prod", prod_, cprod_of), -1, 1, 8, 1));
  add(over_dims_complex("var", var_, cvar_of));
  add(over_dims_complex("std", std_, cstd_of));
  add(over_dims_complex("norm", norm_<2>, cnorm_of));
  add({reduce_complex("var_mean", var_mean_var, {-1}, true, cvar_of),
       reduce_complex("var_mean", var_mean_mean, {0, 1}, false, cmean_of),
       reduce_complex("std_mean", std_mean_mean, {}, true, cmean_of)});
  for (Entry e :
       {scan("cumsum", kiln::cumsum, -1, false, -4, 4), scan("cumsum", kiln::cumsum, 0, false, -4, 4),
        scan("cumprod", kiln::cumprod, -1, true, -1, 1)}) {
    e.dtypes = kComplex;
    e.ulps = 8;
    e.floor = 8;
    es.push_back(std::move(e));
  }
  return es;
}

KILN_OP_TABLE(entries_list());

}  // namespace
}  // namespace op_table
