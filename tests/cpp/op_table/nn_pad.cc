// Op table entries of pad and pad_backward (ops/registry/pad.h): every mode,
// 1-, 2- and 3-d pads of batched and unbatched inputs with negative pads
// (crops), against float64 loops written from each mode's definition: the
// forward reads each output element's source, the backward scatter-adds each
// gradient element onto its source.
#include <cmath>

#include "kiln/pad.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// The source of output position o in a dim of size n padded by (l, r), or -1
// for the fill: walked out by the mode's definition.
int64_t source_of(int64_t o, int64_t n, int64_t l, int64_t r, PadMode mode) {
  int64_t i = o - l;  // position relative to the input's start
  switch (mode) {
    case PadMode::Constant:
      return (i < 0 || i >= n) ? -1 : i;
    case PadMode::Replicate:
      return i < 0 ? 0 : (i >= n ? n - 1 : i);
    case PadMode::Reflect:
      // Mirror about the first and last elements (edges not repeated).
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
      return i;
    case PadMode::Circular: {
      // Crop first, then tile the cropped input around its own start.
      const int64_t lo = l < 0 ? -l : 0, hi = r < 0 ? n + r : n, len = hi - lo;
      int64_t k = o - (l > 0 ? l : 0);
      while (k < 0) k += len;
      while (k >= len) k -= len;
      return lo + k;
    }
  }
  return -1;
}

// The padded shape of `in` (pad pairs from the last dim).
Shape padded(const Shape& in, const std::vector<int64_t>& pad) {
  Shape s = in;
  for (size_t k = 0; k < pad.size() / 2; ++k) s[s.size() - 1 - k] += pad[2 * k] + pad[2 * k + 1];
  return s;
}

// For each element of the padded shape (row-major), its row-major source in
// `in`, or -1.
std::vector<int64_t> sources(const Shape& in, const std::vector<int64_t>& pad, PadMode mode) {
  const Shape out = padded(in, pad);
  const size_t R = in.size(), K = pad.size() / 2;
  int64_t total = 1;
  for (int64_t m : out) total *= m;
  std::vector<int64_t> src;
  std::vector<int64_t> idx(R, 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t rem = e, flat = 0, mul = 1;
    bool fill = false;
    for (size_t d = R; d-- > 0;) {
      const int64_t o = rem % out[d];
      rem /= out[d];
      const size_t k = R - 1 - d;
      const int64_t i = k < K ? source_of(o, in[d], pad[2 * k], pad[2 * k + 1], mode) : o;
      if (i < 0) fill = true;
      flat += i * mul;
      mul *= in[d];
    }
    src.push_back(fill ? -1 : flat);
  }
  return src;
}

double cast_fill(double v, DType d) {
  if (d == DType::Bool) return v != 0 ? 1.0 : 0.0;
  return v;  // 2.0 and 0.0: exact in every dtype walked
}

// `base`: the odd shape; empty: its batch made 0 (an unbatched input, one
// dim more than the pad's or fewer, gets a zero batch in front); transposed and
// expanded forms.
std::function<std::vector<InputSpec>(ShapeClass)> pad_shapes(Shape base, size_t pad_len) {
  return [base, pad_len](ShapeClass c) -> std::vector<InputSpec> {
    Shape empty = base, one = base;
    if (base.size() <= pad_len / 2 + 1)
      empty.insert(empty.begin(), 0);
    else
      empty[0] = 0;
    one[0] = 1;
    switch (c) {
      case ShapeClass::Empty:
        return {{empty}};
      case ShapeClass::Scalar:
        return {};
      case ShapeClass::Odd:
        return {{base}};
      case ShapeClass::NonContiguous:
        return {{base, InputSpec::Transposed}};
      case ShapeClass::Broadcast:
        return {{base, InputSpec::Expanded, one}};
    }
    return {};
  };
}

Entry pad_entry(PadMode mode, Shape base, std::vector<int64_t> pads, double value = 0.0,
                std::vector<DType> dtypes = kFloats) {
  Entry e;
  e.op = "pad";
  e.dtypes = std::move(dtypes);
  e.shapes = pad_shapes(base, pads.size());
  e.call = [mode, pads, value](const std::vector<Tensor>& x) {
    return mode == PadMode::Constant ? pad(x[0], pads, mode, value) : pad(x[0], pads, mode);
  };
  e.oracle = [mode, pads, value](const Inputs& in, const Tensor& out) {
    const Shape& s = in.shapes[0];
    if (out.defined()) expect_shape(out, padded(s, pads));
    const double fill = cast_fill(value, in.tensors[0].dtype());
    std::vector<double> y;
    for (int64_t i : sources(s, pads, mode)) y.push_back(i < 0 ? fill : in.values[0][size_t(i)]);
    return y;
  };
  e.ulps = 0;
  Shape big = base;
  big.back() = 4096;
  e.perf_shapes = {{big}};
  return e;
}

// The gradient of pad(x, pads, mode) for x of shape `base`: grad has the
// padded shape; the input shape is read back from it.
Entry pad_backward_entry(PadMode mode, Shape base, std::vector<int64_t> pads) {
  Entry e;
  e.op = "pad_backward";
  e.dtypes = kFloats;
  e.shapes = pad_shapes(padded(base, pads), pads.size());
  auto input_shape = [pads](Shape s) {
    for (size_t k = 0; k < pads.size() / 2; ++k) s[s.size() - 1 - k] -= pads[2 * k] + pads[2 * k + 1];
    return s;
  };
  e.call = [mode, pads, input_shape](const std::vector<Tensor>& x) {
    return pad_backward(x[0], input_shape(x[0].sizes()), pads, mode);
  };
  e.oracle = [mode, pads, input_shape](const Inputs& in, const Tensor& out) {
    const Shape s = input_shape(in.shapes[0]);
    if (out.defined()) expect_shape(out, s);
    int64_t n = 1;
    for (int64_t v : s) n *= v;
    std::vector<double> gi(size_t(n), 0.0);
    const std::vector<int64_t> src = sources(s, pads, mode);
    for (size_t o = 0; o < src.size(); ++o)
      if (src[o] >= 0) gi[size_t(src[o])] += in.values[0][o];
    return gi;
  };
  e.ulps = 8;
  return e;
}

KILN_OP_TABLE({
    // constant: 2 of 4 dims with a crop, filled with 2; all 3 dims of a 3-d input.
    pad_entry(PadMode::Constant, {2, 3, 5, 7}, {2, -1, 1, 3}, 2.0, kFloatsAndInts),
    with_complex_by_parts(pad_entry(PadMode::Constant, {3, 5, 7}, {1, 2, -1, 0, 2, -3})),
    pad_entry(PadMode::Constant, {3, 5, 7}, {-3, -4}),
    // reflect: 1-d batched, 2-d batched, 2-d unbatched, 3-d batched.
    with_complex_by_parts(pad_entry(PadMode::Reflect, {2, 3, 5}, {4, -2})),
    pad_entry(PadMode::Reflect, {2, 3, 5, 7}, {6, 1, 4, -1}),
    pad_entry(PadMode::Reflect, {3, 5, 7}, {-2, 3, 2, 4}),
    pad_entry(PadMode::Reflect, {2, 2, 3, 4, 5}, {1, 2, 3, 0, -1, 2}),
    // replicate: pads beyond the size, and crops.
    pad_entry(PadMode::Replicate, {3, 5}, {7, -2}),
    pad_entry(PadMode::Replicate, {2, 3, 5, 7}, {-3, 9, 6, 1}),
    pad_entry(PadMode::Replicate, {2, 3, 4, 5}, {2, 1, -1, 3, 5, 0}),
    // circular: a whole period, and wraps within the cropped input.
    pad_entry(PadMode::Circular, {2, 3, 5}, {4, -1}),
    pad_entry(PadMode::Circular, {2, 3, 5, 7}, {5, -2, -1, 4}),
    pad_entry(PadMode::Circular, {2, 2, 3, 4, 5}, {1, 2, 3, 0, -1, 2}),
    pad_backward_entry(PadMode::Constant, {2, 3, 5, 7}, {2, -1, 1, 3}),
    with_complex_by_parts(pad_backward_entry(PadMode::Reflect, {2, 3, 5}, {4, -2})),
    pad_backward_entry(PadMode::Reflect, {2, 3, 5, 7}, {6, 1, 4, -1}),
    pad_backward_entry(PadMode::Reflect, {2, 2, 3, 4, 5}, {1, 2, 3, 0, -1, 2}),
    pad_backward_entry(PadMode::Replicate, {3, 5}, {7, -2}),
    pad_backward_entry(PadMode::Replicate, {2, 3, 5, 7}, {-3, 9, 6, 1}),
    pad_backward_entry(PadMode::Replicate, {2, 3, 4, 5}, {2, 1, -1, 3, 5, 0}),
    pad_backward_entry(PadMode::Circular, {2, 3, 5}, {4, -1}),
    pad_backward_entry(PadMode::Circular, {2, 3, 5, 7}, {5, -2, -1, 4}),
    pad_backward_entry(PadMode::Circular, {2, 2, 3, 4, 5}, {1, 2, 3, 0, -1, 2}),
});

}  // namespace
}  // namespace op_table
