// Op table entries of gather, scatter, scatter_add, index_select and index_add
// (ops/registry/index.h), along the last dim (-1) and dim 0.
#include "kiln/index.h"
#include "op_table/index_util.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace index_util;

// x [5, 37] (or [4, 5] empty, [] scalar) and an index of x's rank with values
// in [0, x.size(dim)); with_src adds a src no smaller than the index.
std::function<std::vector<InputSpec>(ShapeClass)> gather_shapes(int dim, bool with_src) {
  return [dim, with_src](ShapeClass c) -> std::vector<InputSpec> {
    const int64_t n = dim == 0 ? 5 : 37;  // x.size(dim) of [5, 37]
    switch (c) {
      case ShapeClass::Empty:
        if (with_src) return {{{4, 5}}, ix({4, 0}, 0, 1), {{4, 0}}};
        return {{{4, 5}}, ix({4, 0}, 0, 1)};
      case ShapeClass::Scalar:
        if (with_src) return {{{}}, ix({}, 0, 1), {{}}};
        return {{{}}, ix({}, 0, 1)};
      case ShapeClass::Odd:
        if (with_src) return {{{5, 37}}, ix({4, 11}, 0, n), {{5, 20}}};
        return {{{5, 37}}, ix({4, 11}, 0, n)};
      case ShapeClass::NonContiguous:
        if (with_src)
          return {{{5, 37}, InputSpec::Transposed},
                  ix({4, 9}, 0, n, InputSpec::Transposed),
                  {{5, 10}, InputSpec::Transposed}};
        return {{{5, 37}, InputSpec::Transposed}, ix({4, 9}, 0, n, InputSpec::Transposed)};
      case ShapeClass::Broadcast:
        if (with_src)
          return {{{5, 37}, InputSpec::Expanded, {1, 37}},
                  ix({5, 6}, 0, n, InputSpec::Expanded, {1, 6}),
                  {{5, 6}, InputSpec::Expanded, {5, 1}}};
        return {{{5, 37}, InputSpec::Expanded, {1, 37}}, ix({5, 6}, 0, n, InputSpec::Expanded, {1, 6})};
    }
    return {};
  };
}

// dim wrapped for a tensor of `rank` dims (a 0-d one counts as 1-D).
int wd(int dim, size_t rank) { return dim < 0 ? dim + int(std::max<size_t>(rank, 1)) : dim; }

// A 0-d tensor counts as 1-D of size 1.
Shape as_1d(const Shape& s) { return s.empty() ? Shape{1} : s; }

Entry gather_entry(int dim) {
  Entry e;
  e.op = "gather";
  e.dtypes = kFloatsAndInts;
  e.shapes = gather_shapes(dim, false);
  e.call = [dim](const std::vector<Tensor>& t) { return gather(t[0], dim, t[1]); };
  e.oracle = [dim](const Inputs& in, const Tensor&) {
    const Shape xs = as_1d(in.shapes[0]), is = as_1d(in.shapes[1]);
    const int d = wd(dim, in.shapes[0].size());
    std::vector<double> y(in.values[1].size());
    for (size_t i = 0; i < y.size(); ++i) {
      Shape p = unravel(int64_t(i), is);
      p[size_t(d)] = int64_t(in.values[1][i]);
      y[i] = in.values[0][size_t(ravel(p, xs))];
    }
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}, ix({1024, 1024}, 0, 1024)};
  return e;
}

// scatter (src or the value 1) and scatter_add: x[.., idx[p], ..] (+)= src[p]
// for each position p of idx in row-major order, so the last write wins.
Entry scatter_entry(const char* op, int dim, bool add, bool value) {
  Entry e;
  e.op = op;
  e.dtypes = kFloatsAndInts;
  e.shapes = gather_shapes(dim, !value);
  e.call = [dim, add, value](const std::vector<Tensor>& t) {
    if (value) return scatter(t[0], dim, t[1], Scalar(int64_t(1)));
    return add ? scatter_add(t[0], dim, t[1], t[2]) : scatter(t[0], dim, t[1], t[2]);
  };
  e.oracle = [dim, add, value](const Inputs& in, const Tensor& out) {
    const Shape xs = as_1d(in.shapes[0]), is = as_1d(in.shapes[1]);
    const int d = wd(dim, in.shapes[0].size());
    std::vector<double> y = in.values[0];
    for (size_t i = 0; i < in.values[1].size(); ++i) {
      Shape p = unravel(int64_t(i), is);
      const double s = value ? 1.0 : in.values[2][size_t(ravel(p, as_1d(in.shapes[2])))];
      p[size_t(d)] = int64_t(in.values[1][i]);
      double& dst = y[size_t(ravel(p, xs))];
      dst = add ? dst + s : s;
    }
    return held(y, out.dtype());
  };
  if (add) {
    e.ulps = 16;
    e.floor = 16;
  }
  e.perf_shapes = {{{1024, 1024}}, ix({1024, 1024}, 0, 1024), {{1024, 1024}}};
  return e;
}

// x and a 1-D index of values in [0, x.size(dim)); with_source adds a source
// of x's shape with size(dim) = the index's length.
std::function<std::vector<InputSpec>(ShapeClass)> select_shapes(int dim, bool with_source) {
  return [dim, with_source](ShapeClass c) -> std::vector<InputSpec> {
    const int64_t n = dim == 0 ? 5 : 37;
    auto src = [dim](int64_t k, InputSpec::Layout l = InputSpec::Contiguous, Shape base = {}) {
      return InputSpec{dim == 0 ? Shape{k, 37} : Shape{5, k}, l, std::move(base)};
    };
    std::vector<InputSpec> s;
    switch (c) {
      case ShapeClass::Empty:
        s = {{{4, 5}}, ix({0}, 0, 1)};
        if (with_source) s.push_back({dim == 0 ? Shape{0, 5} : Shape{4, 0}});
        return s;
      case ShapeClass::Scalar:
        s = {{{}}, ix({}, 0, 1)};
        if (with_source) s.push_back({{}});
        return s;
      case ShapeClass::Odd:
        s = {{{5, 37}}, ix({11}, 0, n)};
        if (with_source) s.push_back(src(11));
        return s;
      case ShapeClass::NonContiguous:
        s = {{{5, 37}, InputSpec::Transposed}, ix({9}, 0, n, InputSpec::Strided)};
        if (with_source) s.push_back(src(9, InputSpec::Transposed));
        return s;
      case ShapeClass::Broadcast:
        s = {{{5, 37}, InputSpec::Expanded, {1, 37}}, ix({6}, 0, n, InputSpec::Expanded, {1})};
        if (with_source) s.push_back(src(6, InputSpec::Expanded, dim == 0 ? Shape{1, 37} : Shape{5, 1}));
        return s;
    }
    return s;
  };
}

Entry index_select_entry(int dim) {
  Entry e;
  e.op = "index_select";
  e.dtypes = kFloatsAndInts;
  e.shapes = select_shapes(dim, false);
  e.call = [dim](const std::vector<Tensor>& t) { return index_select(t[0], dim, t[1]); };
  e.oracle = [dim](const Inputs& in, const Tensor&) {
    if (in.shapes[0].empty()) return std::vector<double>{in.values[0][0]};
    const Shape& xs = in.shapes[0];
    const size_t d = size_t(wd(dim, xs.size()));
    Shape os = xs;
    os[d] = int64_t(in.values[1].size());
    std::vector<double> y(size_t(count(os)));
    for (size_t i = 0; i < y.size(); ++i) {
      Shape p = unravel(int64_t(i), os);
      p[d] = int64_t(in.values[1][size_t(p[d])]);
      y[i] = in.values[0][size_t(ravel(p, xs))];
    }
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}, ix({1024}, 0, 1024)};
  return e;
}

// x.select(dim, idx[k]) += 2 * source.select(dim, k).
Entry index_add_entry(int dim) {
  Entry e;
  e.op = "index_add";
  e.dtypes = kFloatsAndInts;
  e.shapes = select_shapes(dim, true);
  e.call = [dim](const std::vector<Tensor>& t) {
    return index_add(t[0], dim, t[1], t[2], Scalar(int64_t(2)));
  };
  e.oracle = [dim](const Inputs& in, const Tensor& out) {
    std::vector<double> y = in.values[0];
    if (in.shapes[0].empty()) {
      y[0] += 2 * in.values[2][0];
      return held(y, out.dtype());
    }
    const Shape& xs = in.shapes[0];
    const Shape& ss = in.shapes[2];
    const size_t d = size_t(wd(dim, xs.size()));
    for (size_t i = 0; i < in.values[2].size(); ++i) {
      Shape p = unravel(int64_t(i), ss);
      p[d] = int64_t(in.values[1][size_t(p[d])]);
      y[size_t(ravel(p, xs))] += 2 * in.values[2][i];
    }
    return held(y, out.dtype());
  };
  e.ulps = 16;
  e.floor = 16;
  e.perf_shapes = {{{1024, 1024}}, ix({1024}, 0, 1024), {{1024, 1024}}};
  return e;
}

KILN_OP_TABLE({
    with_complex_by_parts(with_fp8(gather_entry(-1))),
    with_complex_by_parts(with_fp8(gather_entry(0))),
    with_complex_by_parts(with_fp8(scatter_entry("scatter", -1, false, false))),
    with_complex_by_parts(with_fp8(scatter_entry("scatter", 0, false, false))),
    scatter_entry("scatter", -1, false, true),
    with_complex_by_parts(scatter_entry("scatter_add", -1, true, false)),
    with_complex_by_parts(scatter_entry("scatter_add", 0, true, false)),
    with_complex_by_parts(with_fp8(index_select_entry(-1))),
    with_complex_by_parts(with_fp8(index_select_entry(0))),
    with_complex_by_parts(index_add_entry(-1)),
    with_complex_by_parts(index_add_entry(0)),
});

}  // namespace
}  // namespace op_table
