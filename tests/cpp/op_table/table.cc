// The op table's machinery: the entry list, input recipes and the helpers
// entries are written with.
#include "op_table/table.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace op_table {

const char* name(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return "empty";
    case ShapeClass::Scalar:
      return "scalar";
    case ShapeClass::Odd:
      return "odd";
    case ShapeClass::NonContiguous:
      return "non-contiguous";
    case ShapeClass::Broadcast:
      return "broadcast";
  }
  return "?";
}

std::vector<Entry>& entries() {
  static std::vector<Entry> all;
  return all;
}

bool add_entries(std::vector<Entry> es) {
  for (Entry& e : es) entries().push_back(std::move(e));
  return true;
}

std::vector<InputSpec> unary_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}};
    case ShapeClass::Scalar:
      return {{{}}};
    case ShapeClass::Odd:
      return {{{5, 37}}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{5, 37}, InputSpec::Expanded, {1, 37}}};
  }
  return {};
}

std::function<std::vector<double>(const Inputs&, const Tensor&)> elementwise(double (*f)(double)) {
  return [f](const Inputs& in, const Tensor&) {
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(in.values[0][i]);
    return y;
  };
}

std::function<std::vector<InputSpec>(ShapeClass)> reduce_shapes(std::vector<int> dims) {
  return [dims](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Scalar && dims.size() > 1) return {};
    return unary_shapes(c);
  };
}

Reduction reduce_groups(const std::vector<double>& x, const Shape& shape, const std::vector<int>& dims,
                        bool keepdim) {
  const int nd = int(shape.size());
  std::vector<bool> red(shape.size(), dims.empty());
  for (int d : dims)
    if (nd > 0) red[size_t(d < 0 ? d + nd : d)] = true;
  Reduction r;
  int64_t n_out = 1;
  for (int d = 0; d < nd; ++d) {
    if (red[d]) {
      r.zero_size_dim |= shape[d] == 0;
      if (keepdim) r.out_shape.push_back(1);
    } else {
      n_out *= shape[d];
      r.out_shape.push_back(shape[d]);
    }
  }
  r.groups.assign(size_t(n_out), {});
  // Element i of x: its kept coordinates give the output, its reduced ones
  // the place in the group; both row-major, so groups fill in order.
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rem = int64_t(i), o = 0, o_scale = 1;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t c = rem % shape[d];
      rem /= shape[d];
      if (!red[d]) {
        o += c * o_scale;
        o_scale *= shape[d];
      }
    }
    r.groups[size_t(o)].push_back(x[i]);
  }
  return r;
}

void expect_shape(const Tensor& out, const Shape& want) {
  if (out.sizes() == want) return;
  std::string w = "[";
  for (size_t i = 0; i < want.size(); ++i) w += (i ? ", " : "") + std::to_string(want[i]);
  throw std::runtime_error("output shape " + out.shape_str() + ", want " + w + "]");
}

std::function<std::vector<double>(const Inputs&, const Tensor&)> reduction(std::vector<int> dims,
                                                                           bool keepdim, GroupFn f,
                                                                           std::optional<Raises> on_empty) {
  return [=](const Inputs& in, const Tensor& out) {
    const Reduction r = reduce_groups(in.values[0], in.shapes[0], dims, keepdim);
    if (on_empty && r.zero_size_dim) throw *on_empty;
    if (out.defined()) expect_shape(out, r.out_shape);
    std::vector<double> y;
    for (const std::vector<double>& g : r.groups) y.push_back(f(g));
    return y;
  };
}

std::vector<InputSpec> binary_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}, {{5}}};
    case ShapeClass::Scalar:
      return {{{}}, {{}}};
    case ShapeClass::Odd:
      return {{{5, 37}}, {{5, 37}}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}, {{5, 37}, InputSpec::Strided}};
    case ShapeClass::Broadcast:
      return {{{5, 1}}, {{1, 37}}};
  }
  return {};
}

std::vector<InputSpec> ternary_shapes(ShapeClass c) {
  std::vector<InputSpec> s = binary_shapes(c);
  switch (c) {
    case ShapeClass::Empty:
      s.push_back({{0, 5}});
      break;
    case ShapeClass::Scalar:
      s.push_back({{}});
      break;
    case ShapeClass::Odd:
    case ShapeClass::NonContiguous:
      s.push_back({{5, 37}});
      break;
    case ShapeClass::Broadcast:
      s.push_back({{37}});
      break;
  }
  return s;
}

std::function<std::vector<double>(const Inputs&, const Tensor&)> broadcast_elementwise(ElementFn f) {
  return [f](const Inputs& in, const Tensor& out) {
    // The broadcast shape: inputs aligned at their last dim, size 1 stretches.
    size_t nd = 0;
    for (const Shape& s : in.shapes) nd = std::max(nd, s.size());
    Shape shape(nd, 1);
    for (const Shape& s : in.shapes)
      for (size_t k = 0; k < s.size(); ++k) {
        int64_t& d = shape[nd - s.size() + k];
        if (s[k] != 1) d = s[k];
      }
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<double> y(n), args(in.shapes.size());
    Shape idx(nd);
    for (int64_t i = 0; i < n; ++i) {
      int64_t r = i;
      for (size_t k = nd; k-- > 0;) {
        idx[k] = r % shape[k];
        r /= shape[k];
      }
      for (size_t j = 0; j < in.shapes.size(); ++j) {
        const Shape& s = in.shapes[j];
        int64_t off = 0;
        for (size_t k = 0; k < s.size(); ++k) off = off * s[k] + (s[k] == 1 ? 0 : idx[nd - s.size() + k]);
        args[j] = in.values[j][off];
      }
      y[i] = f(args, out);
    }
    return y;
  };
}

std::vector<double> map_lines(const std::vector<double>& x, const Shape& shape, int dim, const LineFn& f) {
  const int nd = int(shape.size());
  const int d = nd == 0 ? 0 : (dim < 0 ? dim + nd : dim);
  int64_t n = nd ? shape[d] : 1, inner = 1;
  for (int k = d + 1; k < nd; ++k) inner *= shape[k];
  const int64_t outer = n * inner == 0 ? 0 : int64_t(x.size()) / (n * inner);
  std::vector<double> y;
  std::vector<std::vector<double>> lines;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double> line(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) line[j] = x[(o * n + j) * inner + i];
      lines.push_back(f(line));
    }
  const int64_t m = lines.empty() ? 0 : int64_t(lines[0].size());
  y.resize(size_t(outer * m * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t j = 0; j < m; ++j) y[(o * m + j) * inner + i] = lines[o * inner + i][j];
  return y;
}

}  // namespace op_table
