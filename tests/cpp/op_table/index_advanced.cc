// Op table entries of Python-style indexing, index and index_put
// (ops/registry/index.h): x[:, i], x[i0, i1], x[i0, :, i1] (non-adjacent: the
// index dims go first), x[mask], and x[1:4] += v (basic indices only).
#include "kiln/index.h"
#include "op_table/index_util.h"

namespace op_table {
namespace {

using namespace kiln;
using namespace index_util;
using L = InputSpec::Layout;

// Broadcast of two shapes (right-aligned), as the oracles need it.
Shape bshape(const Shape& a, const Shape& b) {
  Shape s(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t i = s.size() - 1 - k;
    const int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1, y = k < b.size() ? b[b.size() - 1 - k] : 1;
    s[i] = x == 1 ? y : x;
  }
  return s;
}

// ---- x[:, i]: x [R, C], i wraps in [-C, C); out [R, *I] -------------------

std::vector<InputSpec> col_shapes(ShapeClass c, bool with_value) {
  std::vector<InputSpec> s;
  switch (c) {
    case ShapeClass::Empty:
      s = {{{4, 5}}, ix({0}, 0, 1), {{4, 0}}};
      break;
    case ShapeClass::Scalar:
      s = {{{5, 37}}, ix({}, -37, 37), {{5}}};
      break;
    case ShapeClass::Odd:
      s = {{{5, 37}}, ix({7, 3}, -37, 37), {{7, 3}}};  // the value broadcasts over R
      break;
    case ShapeClass::NonContiguous:
      s = {{{5, 37}, L::Transposed}, ix({4, 9}, -37, 37, L::Transposed), {{5, 4, 9}, L::Transposed}};
      break;
    case ShapeClass::Broadcast:
      s = {{{5, 37}, L::Expanded, {1, 37}},
           ix({6, 4}, -37, 37, L::Expanded, {6, 1}),
           {{5, 6, 4}, L::Expanded, {5, 1, 4}}};
      break;
  }
  if (!with_value) s.pop_back();
  return s;
}

// Calls f(y position in x, out position) for each out position of x[:, i], row-major.
template <typename F>
void walk_cols(const Inputs& in, F f) {
  const Shape& xs = in.shapes[0];
  Shape os = in.shapes[1];
  os.insert(os.begin(), xs[0]);
  for (int64_t o = 0; o < count(os); ++o) {
    const Shape p = unravel(o, os);
    const int64_t b = count(in.shapes[1]) ? o % count(in.shapes[1]) : 0;
    f(p[0] * xs[1] + wrap(in.values[1][size_t(b)], xs[1]), p);
  }
}

Entry index_cols() {
  Entry e;
  e.op = "index";
  e.dtypes = kFloatsAndInts;
  e.shapes = [](ShapeClass c) { return col_shapes(c, false); };
  e.call = [](const std::vector<Tensor>& t) { return index(t[0], {Slice{}, t[1]}); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> y;
    walk_cols(in, [&](int64_t xi, const Shape&) { y.push_back(in.values[0][size_t(xi)]); });
    return y;
  };
  e.perf_shapes = {{{1024, 1024}}, ix({512}, 0, 1024)};
  return e;
}

Entry index_put_cols(bool accumulate) {
  Entry e;
  e.op = "index_put";
  e.dtypes = kFloatsAndInts;
  e.shapes = [](ShapeClass c) { return col_shapes(c, true); };
  e.call = [accumulate](const std::vector<Tensor>& t) {
    return index_put(t[0], {Slice{}, t[1]}, t[2], accumulate);
  };
  e.oracle = [accumulate](const Inputs& in, const Tensor& out) {
    std::vector<double> y = in.values[0];
    walk_cols(in, [&](int64_t xi, const Shape& p) {
      const double v = at(in.values[2], in.shapes[2], p);
      y[size_t(xi)] = accumulate ? y[size_t(xi)] + v : v;  // row-major: the last write wins
    });
    return held(y, out.dtype());
  };
  if (accumulate) {
    e.ulps = 16;
    e.floor = 16;
  }
  e.perf_shapes = {{{1024, 1024}}, ix({512}, 0, 1024), {{1024, 512}}};
  return e;
}

// ---- x[i0, i1] on x [5, 37]: out B = broadcast(i0, i1) --------------------

std::vector<InputSpec> pair_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{4, 5}}, ix({0}, 0, 1), ix({1}, -5, 5)};
    case ShapeClass::Scalar:
      return {{{5, 37}}, ix({}, -5, 5), ix({}, -37, 37)};
    case ShapeClass::Odd:
      return {{{5, 37}}, ix({6, 1}, -5, 5), ix({1, 4}, -37, 37)};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, L::Transposed}, ix({3, 4}, -5, 5, L::Transposed), ix({4}, -37, 37, L::Strided)};
    case ShapeClass::Broadcast:
      return {{{5, 37}, L::Expanded, {1, 37}}, ix({3, 4}, -5, 5, L::Expanded, {3, 1}), ix({4}, -37, 37)};
  }
  return {};
}

Entry index_pair() {
  Entry e;
  e.op = "index";
  e.dtypes = kFloatsAndInts;
  e.shapes = pair_shapes;
  e.call = [](const std::vector<Tensor>& t) { return index(t[0], {t[1], t[2]}); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape& xs = in.shapes[0];
    const Shape B = bshape(in.shapes[1], in.shapes[2]);
    std::vector<double> y;
    for (int64_t o = 0; o < count(B); ++o) {
      const Shape p = unravel(o, B);
      const int64_t r = wrap(at(in.values[1], in.shapes[1], p), xs[0]);
      const int64_t c = wrap(at(in.values[2], in.shapes[2], p), xs[1]);
      y.push_back(in.values[0][size_t(r * xs[1] + c)]);
    }
    return y;
  };
  return e;
}

// ---- x[i0, :, i1] on x [3, M, 7]: out [B, M] -----------------------------

std::vector<InputSpec> apart_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:  // out is empty, B is not: the indices are still checked
      return {{{3, 0, 7}}, ix({2}, -3, 3), ix({2}, -7, 7)};
    case ShapeClass::Scalar:
      return {{{3, 5, 7}}, ix({}, -3, 3), ix({}, -7, 7)};
    case ShapeClass::Odd:
      return {{{3, 5, 7}}, ix({4, 1}, -3, 3), ix({3}, -7, 7)};
    case ShapeClass::NonContiguous:
      return {{{3, 5, 7}, L::Transposed}, ix({2, 3}, -3, 3, L::Transposed), ix({3}, -7, 7, L::Strided)};
    case ShapeClass::Broadcast:
      return {{{3, 5, 7}, L::Expanded, {1, 5, 7}}, ix({2, 3}, -3, 3, L::Expanded, {2, 1}), ix({3}, -7, 7)};
  }
  return {};
}

Entry index_apart() {
  Entry e;
  e.op = "index";
  e.dtypes = kFloatsAndInts;
  e.shapes = apart_shapes;
  e.call = [](const std::vector<Tensor>& t) { return index(t[0], {t[1], Slice{}, t[2]}); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape& xs = in.shapes[0];
    const Shape B = bshape(in.shapes[1], in.shapes[2]);
    std::vector<double> y;
    for (int64_t o = 0; o < count(B); ++o) {
      const Shape p = unravel(o, B);
      const int64_t a = wrap(at(in.values[1], in.shapes[1], p), xs[0]);
      const int64_t c = wrap(at(in.values[2], in.shapes[2], p), xs[2]);
      for (int64_t m = 0; m < xs[1]; ++m) y.push_back(in.values[0][size_t((a * xs[1] + m) * xs[2] + c)]);
    }
    return y;
  };
  return e;
}

// ---- x[mask] (mask of x's shape) and x[mask] = v (v 0-d) -------------------

std::vector<InputSpec> mask_shapes(ShapeClass c, bool with_value) {
  std::vector<InputSpec> s;
  switch (c) {
    case ShapeClass::Empty:
      s = {{{0, 5}}, mask({0, 5})};
      break;
    case ShapeClass::Scalar:
      s = {{{}}, mask({})};
      break;
    case ShapeClass::Odd:
      s = {{{5, 37}}, mask({5, 37})};
      break;
    case ShapeClass::NonContiguous:
      s = {{{5, 37}, L::Transposed}, mask({5, 37}, L::Strided)};
      break;
    case ShapeClass::Broadcast:
      s = {{{5, 37}, L::Expanded, {1, 37}}, mask({5, 37}, L::Expanded, {5, 1})};
      break;
  }
  if (with_value) s.push_back({{}});
  return s;
}

Entry index_mask() {
  Entry e;
  e.op = "index";
  e.dtypes = kFloatsAndInts;
  e.shapes = [](ShapeClass c) { return mask_shapes(c, false); };
  e.call = [](const std::vector<Tensor>& t) { return index(t[0], {t[1]}); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> y;
    for (size_t i = 0; i < in.values[0].size(); ++i)
      if (in.values[1][i] != 0) y.push_back(in.values[0][i]);
    return y;
  };
  return e;
}

Entry index_put_mask() {
  Entry e;
  e.op = "index_put";
  e.dtypes = kFloatsAndInts;
  e.shapes = [](ShapeClass c) { return mask_shapes(c, true); };
  e.call = [](const std::vector<Tensor>& t) { return index_put(t[0], {t[1]}, t[2]); };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> y = in.values[0];
    for (size_t i = 0; i < y.size(); ++i)
      if (in.values[1][i] != 0) y[i] = in.values[2][0];
    return y;
  };
  return e;
}

// ---- x[1:4] += v: basic indices only ----------------------------------------

std::vector<InputSpec> rows_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}, {{5}}};
    case ShapeClass::Scalar:
      return {{{5}}, {{}}};
    case ShapeClass::Odd:
      return {{{5, 37}}, {{37}}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, L::Transposed}, {{3, 37}, L::Transposed}};
    case ShapeClass::Broadcast:
      return {{{5, 37}, L::Expanded, {1, 37}}, {{3, 37}, L::Expanded, {3, 1}}};
  }
  return {};
}

Entry index_put_rows() {
  Entry e;
  e.op = "index_put";
  e.dtypes = kFloatsAndInts;
  e.shapes = rows_shapes;
  e.call = [](const std::vector<Tensor>& t) { return index_put(t[0], {Slice{1, 4}}, t[1], true); };
  e.oracle = [](const Inputs& in, const Tensor& out) {
    std::vector<double> y = in.values[0];
    const Shape& xs = in.shapes[0];
    for (int64_t i = 0; i < count(xs); ++i) {
      Shape p = unravel(i, xs);
      if (p[0] < 1 || p[0] >= 4) continue;
      p[0] -= 1;
      y[size_t(i)] += at(in.values[1], in.shapes[1], p);
    }
    return held(y, out.dtype());
  };
  e.ulps = 16;
  e.floor = 16;
  return e;
}

KILN_OP_TABLE({
    with_complex_by_parts(with_fp8(index_cols())),
    with_complex_by_parts(with_fp8(index_pair())),
    with_complex_by_parts(with_fp8(index_apart())),
    with_complex_by_parts(with_fp8(index_mask())),
    with_complex_by_parts(with_fp8(index_put_cols(false))),
    with_complex_by_parts(index_put_cols(true)),
    with_complex_by_parts(with_fp8(index_put_mask())),
    with_complex_by_parts(with_fp8(index_put_rows())),
});

}  // namespace
}  // namespace op_table
