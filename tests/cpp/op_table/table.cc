// The op table's machinery: the entry list, input recipes and the helpers
// entries are written with.
#include "op_table/table.h"

#include <algorithm>
#include <cmath>

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

}  // namespace op_table
