// Op table entries of cat and stack (ops/registry/shape.h): along the first and
// the last dim, over every dtype, with an oracle that lays the inputs' rows
// side by side in row-major order.
#include "kiln/shape.h"

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;
using L = InputSpec;

// Row-major join of xs (shapes[i]) along dim d (wrapped): each input
// contributes its block of shape[d..] per index of the dims before d.
template <typename T>
std::vector<T> join_ref(const std::vector<std::vector<T>>& xs, const std::vector<Shape>& shapes, int d) {
  int64_t outer = 1;
  for (int k = 0; k < d; ++k) outer *= shapes[0][size_t(k)];
  std::vector<T> y;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < xs.size(); ++i) {
      int64_t block = 1;
      for (size_t k = size_t(d); k < shapes[i].size(); ++k) block *= shapes[i][k];
      y.insert(y.end(), xs[i].begin() + o * block, xs[i].begin() + (o + 1) * block);
    }
  return y;
}

int wrap(int dim, size_t nd) { return dim < 0 ? dim + int(nd) : dim; }

// cat of three inputs along `dim` of [5, 37]-like shapes.
std::vector<InputSpec> cat_shapes(ShapeClass c, int dim) {
  auto sh = [dim](int64_t n) { return dim == 0 ? Shape{n, 37} : Shape{5, n}; };
  switch (c) {
    case ShapeClass::Empty:  // a zero-size slab and the legacy [0] input
      return {{sh(0)}, {{0}}, {sh(3)}};
    case ShapeClass::Scalar:  // 0-d inputs raise
      return {{{}}, {{}}};
    case ShapeClass::Odd:
      return {{sh(5)}, {sh(1)}, {sh(7)}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, L::Transposed}, {{5, 37}, L::Strided}, {sh(2)}};
    case ShapeClass::Broadcast:
      return {{{5, 37}, L::Expanded, {1, 37}}, {{5, 37}, L::Expanded, {5, 1}}};
  }
  return {};
}

Entry cat_entry(int dim, std::optional<DType> second) {
  Entry e;
  e.op = "cat";
  e.dtypes = second ? kFloats : kFloatsAndInts;
  e.shapes = [dim, second](ShapeClass c) {
    std::vector<InputSpec> s = cat_shapes(c, dim);
    if (second && s.size() > 1) s[1].held = second;
    return s;
  };
  e.call = [dim](const std::vector<Tensor>& x) { return cat(x, dim); };
  e.oracle = [dim](const Inputs& in, const Tensor&) {
    if (in.shapes[0].empty()) throw raises<ValueError>("ValueError");
    std::vector<std::vector<double>> xs;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < in.values.size(); ++i) {
      if (in.shapes[i] == Shape{0}) continue;  // the legacy empty input
      xs.push_back(in.values[i]);
      shapes.push_back(in.shapes[i]);
    }
    return join_ref(xs, shapes, wrap(dim, shapes[0].size()));
  };
  e.ulps = 0;
  e.perf_shapes = {{{1024, 4096}}, {{1024, 4096}}};
  return second ? e : with_fp8(with_complex_by_parts(e));
}

Entry stack_entry(int dim) {
  Entry e;
  e.op = "stack";
  e.dtypes = kFloatsAndInts;
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, 5}}, {{0, 5}}};
      case ShapeClass::Scalar:
        return {{{}}, {{}}, {{}}};
      case ShapeClass::Odd:
        return {{{5, 37}}, {{5, 37}}, {{5, 37}}};
      case ShapeClass::NonContiguous:
        return {{{5, 37}, L::Transposed}, {{5, 37}, L::Strided}};
      case ShapeClass::Broadcast:
        return {{{5, 37}, L::Expanded, {1, 37}}, {{5, 37}}};
    }
    return {};
  };
  e.call = [dim](const std::vector<Tensor>& x) { return stack(x, dim); };
  e.oracle = [dim](const Inputs& in, const Tensor&) {
    // stack = join along dim of each input viewed with a unit dim there.
    std::vector<Shape> shapes = in.shapes;
    const int nd = int(shapes[0].size()) + 1;
    if (dim >= nd || dim < -nd) throw raises<IndexError>("IndexError");
    const int d = wrap(dim, size_t(nd));
    for (Shape& s : shapes) s.insert(s.begin() + d, 1);
    return join_ref(in.values, shapes, d);
  };
  e.ulps = 0;
  e.perf_shapes = {{{1024, 4096}}, {{1024, 4096}}};
  return with_fp8(with_complex_by_parts(e));
}

KILN_OP_TABLE({
    cat_entry(0, std::nullopt),
    cat_entry(-1, std::nullopt),
    cat_entry(1, DType::Float64),
    stack_entry(0),
    stack_entry(-1),
    stack_entry(1),
});

}  // namespace
}  // namespace op_table
