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

double int_as(int64_t v, DType d) {
  switch (d) {
    case DType::Int32:
      return double(int32_t(v));
    case DType::UInt8:
      return double(uint8_t(v));
    default:
      return double(v);
  }
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

ComplexOracle elementwise(cdouble (*f)(cdouble)) {
  return [f](const Inputs& in, const Tensor&) {
    std::vector<cdouble> y(in.cvalues[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = f(in.cvalues[0][i]);
    return y;
  };
}

Entry with_complex(Entry e, ComplexOracle o) {
  e.dtypes.insert(e.dtypes.end(), kComplex.begin(), kComplex.end());
  e.complex_oracle = std::move(o);
  return e;
}

ComplexOracle by_parts(Oracle real) {
  return [real](const Inputs& in, const Tensor& out) {
    Inputs re = in, im = in;
    for (size_t j = 0; j < in.tensors.size(); ++j) {
      if (!kiln::is_complex(in.tensors[j].dtype())) continue;
      for (size_t i = 0; i < in.cvalues[j].size(); ++i) im.values[j][i] = in.cvalues[j][i].imag();
    }
    const std::vector<double> yr = real(re, out), yi = real(im, out);
    std::vector<cdouble> y(yr.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = {yr[i], yi[i]};
    return y;
  };
}

Entry with_complex_by_parts(Entry e) {
  ComplexOracle o = by_parts(e.oracle);
  return with_complex(std::move(e), std::move(o));
}

Entry with_fp8(Entry e) {
  e.dtypes.insert(e.dtypes.end(), kFp8.begin(), kFp8.end());
  return e;
}

double fp8_decode(uint8_t bits, DType d) {
  const bool e4m3 = d == DType::Float8_e4m3fn;
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, emax_field = e4m3 ? 15 : 31;
  const double sign = bits & 0x80 ? -1.0 : 1.0;
  const int exp = (bits & 0x7f) >> mbits, man = bits & ((1 << mbits) - 1);
  if (e4m3 && exp == emax_field && man == (1 << mbits) - 1) return std::nan("");
  if (!e4m3 && exp == emax_field) return man ? std::nan("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(double(man), 1 - bias - mbits);  // subnormal (and +-0)
  return sign * std::ldexp(double((1 << mbits) | man), exp - bias - mbits);
}

std::vector<uint8_t> fp8_codes(DType d, double lo, double hi) {
  std::vector<uint8_t> codes;
  for (int b = 0; b < 256; ++b) {
    const double v = fp8_decode(uint8_t(b), d);
    if (std::isfinite(v) && v >= lo && v <= hi && !(v == 0 && std::signbit(v))) codes.push_back(uint8_t(b));
  }
  std::sort(codes.begin(), codes.end(),
            [d](uint8_t a, uint8_t b) { return fp8_decode(a, d) < fp8_decode(b, d); });
  return codes;
}

std::function<std::vector<InputSpec>(ShapeClass)> reduce_shapes(std::vector<int> dims) {
  return [dims](ShapeClass c) -> std::vector<InputSpec> {
    if (c == ShapeClass::Scalar && dims.size() > 1) return {};
    return unary_shapes(c);
  };
}

template <typename T>
ReductionOf<T> reduce_groups(const std::vector<T>& x, const Shape& shape, const std::vector<int>& dims,
                             bool keepdim) {
  const int nd = int(shape.size());
  std::vector<bool> red(shape.size(), dims.empty());
  for (int d : dims)
    if (nd > 0) red[size_t(d < 0 ? d + nd : d)] = true;
  ReductionOf<T> r;
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

template ReductionOf<double> reduce_groups(const std::vector<double>&, const Shape&, const std::vector<int>&,
                                           bool);
template ReductionOf<cdouble> reduce_groups(const std::vector<cdouble>&, const Shape&,
                                            const std::vector<int>&, bool);

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

ComplexOracle reduction(std::vector<int> dims, bool keepdim, ComplexGroupFn f) {
  return [=](const Inputs& in, const Tensor& out) {
    const ReductionOf<cdouble> r = reduce_groups(in.cvalues[0], in.shapes[0], dims, keepdim);
    if (out.defined()) expect_shape(out, r.out_shape);
    std::vector<cdouble> y;
    for (const std::vector<cdouble>& g : r.groups) y.push_back(f(g));
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

namespace {

// f on the elements of `values` the output index selects (torch's
// broadcasting), row-major over the broadcast shape of `shapes`.
template <typename T, typename F>
std::vector<T> broadcast_map(const std::vector<std::vector<T>>& values, const std::vector<Shape>& shapes,
                             F&& f) {
  // The broadcast shape: inputs aligned at their last dim, size 1 stretches.
  size_t nd = 0;
  for (const Shape& s : shapes) nd = std::max(nd, s.size());
  Shape shape(nd, 1);
  for (const Shape& s : shapes)
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& d = shape[nd - s.size() + k];
      if (s[k] != 1) d = s[k];
    }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<T> y(n), args(shapes.size());
  Shape idx(nd);
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = i;
    for (size_t k = nd; k-- > 0;) {
      idx[k] = r % shape[k];
      r /= shape[k];
    }
    for (size_t j = 0; j < shapes.size(); ++j) {
      const Shape& s = shapes[j];
      int64_t off = 0;
      for (size_t k = 0; k < s.size(); ++k) off = off * s[k] + (s[k] == 1 ? 0 : idx[nd - s.size() + k]);
      args[j] = values[j][off];
    }
    y[i] = f(args);
  }
  return y;
}

// Lines along `dim` of x mapped by f, as map_lines.
template <typename T, typename F>
std::vector<T> map_lines_of(const std::vector<T>& x, const Shape& shape, int dim, const F& f) {
  const int nd = int(shape.size());
  const int d = nd == 0 ? 0 : (dim < 0 ? dim + nd : dim);
  int64_t n = nd ? shape[d] : 1, inner = 1;
  for (int k = d + 1; k < nd; ++k) inner *= shape[k];
  const int64_t outer = n * inner == 0 ? 0 : int64_t(x.size()) / (n * inner);
  std::vector<T> y;
  std::vector<std::vector<T>> lines;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<T> line(static_cast<size_t>(n));
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

}  // namespace

std::function<std::vector<double>(const Inputs&, const Tensor&)> broadcast_elementwise(ElementFn f) {
  return [f](const Inputs& in, const Tensor& out) {
    return broadcast_map(in.values, in.shapes, [&](const std::vector<double>& args) { return f(args, out); });
  };
}

ComplexOracle broadcast_elementwise(ComplexElementFn f) {
  return [f](const Inputs& in, const Tensor&) { return broadcast_map(in.cvalues, in.shapes, f); };
}

std::vector<double> map_lines(const std::vector<double>& x, const Shape& shape, int dim, const LineFn& f) {
  return map_lines_of(x, shape, dim, f);
}

std::vector<cdouble> map_lines(const std::vector<cdouble>& x, const Shape& shape, int dim,
                               const ComplexLineFn& f) {
  return map_lines_of(x, shape, dim, f);
}

}  // namespace op_table
