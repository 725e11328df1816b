// Op table entries of quantize_fp8, dequantize, fp8_has_nan_code and
// fp8_find_subnormals (ops/registry/matmul.h), with the FP8 formats' rounding
// written from their definitions (op_table/matmul_ref.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "kiln/quantize.h"
#include "op_table/matmul_ref.h"

namespace op_table {
namespace {

using namespace kiln;

const std::vector<DType> kQuantInputs = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16};

// The scale groups of w (logical shape s) for a granularity: each element's
// group index, and the group count.
struct Groups {
  std::vector<int64_t> of;
  int64_t count = 0;
};
Groups groups_of(const Shape& s, QuantGranularity g) {
  const int64_t n = std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>());
  Groups r;
  r.of.resize(size_t(n));
  const int64_t K = s.empty() ? 1 : s.back(), N = s.size() >= 2 ? s[s.size() - 2] : 1;
  const int64_t nb = (N + 127) / 128, kb = (K + 127) / 128;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = i % K, row = i / K, mat = row / N, nrow = row % N;
    r.of[size_t(i)] = g == QuantGranularity::Tensor ? 0
                      : g == QuantGranularity::Row  ? row
                                                    : (mat * nb + nrow / 128) * kb + k / 128;
  }
  const int64_t rows = K ? n / K : 0, mats = N ? rows / N : 0;
  r.count = g == QuantGranularity::Tensor ? 1 : g == QuantGranularity::Row ? rows : mats * nb * kb;
  return r;
}

double as_f32(double v) { return round_format(v, 24, -126); }

// quantize_fp8's (codes as float32, then scales) as kiln/quantize.h defines
// them: w rounded to float32, scale = amax / 448 per group in float32 (1 for
// an all-zero group), codes = e4m3(w / scale) with the quotient in float32.
std::vector<double> quantize_ref(const Inputs& in, QuantGranularity g) {
  std::vector<double> w = in.values[0];
  for (double& v : w) v = as_f32(v);
  const Groups gr = groups_of(in.shapes[0], g);
  std::vector<double> amax(size_t(gr.count), 0.0);
  for (size_t i = 0; i < w.size(); ++i)
    amax[size_t(gr.of[i])] = std::max(amax[size_t(gr.of[i])], std::fabs(w[i]));
  std::vector<double> scale(amax.size());
  for (size_t j = 0; j < amax.size(); ++j) scale[j] = amax[j] > 0 ? as_f32(amax[j] / 448.0) : 1.0;
  std::vector<double> y(w.size());
  for (size_t i = 0; i < w.size(); ++i) y[i] = as_e4m3(as_f32(w[i] / scale[size_t(gr.of[i])]));
  y.insert(y.end(), scale.begin(), scale.end());
  return y;
}

std::vector<InputSpec> quant_shapes(ShapeClass c, QuantGranularity g) {
  const bool block = g == QuantGranularity::Block;
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}};
    case ShapeClass::Scalar:
      return g == QuantGranularity::Tensor ? std::vector<InputSpec>{{{}}} : std::vector<InputSpec>{};
    case ShapeClass::Odd:
      return block ? std::vector<InputSpec>{{{2, 130, 200}}} : std::vector<InputSpec>{{{3, 5, 37}}};
    case ShapeClass::NonContiguous:
      return {{{block ? 130 : 5, 37}, InputSpec::Transposed}};
    case ShapeClass::Broadcast:
      return {{{5, 37}, InputSpec::Expanded, {1, 37}}};
  }
  return {};
}

Entry quantize_entry(QuantGranularity g) {
  Entry e;
  e.op = "quantize_fp8";
  e.dtypes = kQuantInputs;
  e.shapes = [g](ShapeClass c) { return quant_shapes(c, g); };
  e.call = [g](const std::vector<Tensor>& t) {
    const auto [q, s] = quantize_fp8(t[0], g);
    return join({q, s}, DType::Float32);
  };
  e.oracle = [g](const Inputs& in, const Tensor&) { return quantize_ref(in, g); };
  e.ulps = 0;  // codes and scales are float32 arithmetic, followed exactly
  return e;
}

// dequantize(e4m3(w), scale) with a scale of each layout drawn as an input.
Entry dequantize_entry(QuantGranularity g) {
  Entry e;
  e.op = "dequantize";
  e.dtypes = {DType::Float32};
  e.shapes = [g](ShapeClass c) -> std::vector<InputSpec> {
    std::vector<InputSpec> s = quant_shapes(c, g);
    if (s.empty()) return s;
    Shape ss = s[0].shape;
    if (g == QuantGranularity::Tensor) ss = {};
    if (g == QuantGranularity::Row) ss.back() = 1;
    if (g == QuantGranularity::Block) {
      ss[ss.size() - 2] = (ss[ss.size() - 2] + 127) / 128;
      ss.back() = (ss.back() + 127) / 128;
    }
    s.push_back({ss});
    return s;
  };
  e.call = [](const std::vector<Tensor>& t) { return dequantize(t[0].to(DType::Float8_e4m3fn), t[1]); };
  e.oracle = [g](const Inputs& in, const Tensor&) {
    const Groups gr = groups_of(in.shapes[0], g);
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = as_e4m3(in.values[0][i]) * in.values[1][size_t(gr.of[i])];
    return y;
  };
  return e;
}

// Codes past 464 in magnitude round to e4m3's NaN (S.1111.111).
Entry has_nan_entry() {
  Entry e;
  e.op = "fp8_has_nan_code";
  e.dtypes = {DType::Float32};
  e.lo = -470;
  e.hi = 470;
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, 5}}};
      case ShapeClass::Scalar:
        return {{{}}};
      case ShapeClass::Odd:
        return {{{3, 7}}};
      case ShapeClass::NonContiguous:
        return {{{40, 37}, InputSpec::Transposed}};
      default:
        return {};
    }
  };
  e.call = [](const std::vector<Tensor>& t) {
    return full({}, fp8_has_nan_code(t[0].to(DType::Float8_e4m3fn)) ? 1.0 : 0.0, DType::Float32, t[0].device());
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    bool nan = false;
    for (double v : in.values[0]) nan |= std::fabs(v) > 464.0;
    return std::vector<double>{nan ? 1.0 : 0.0};
  };
  return e;
}

// The list's row_start, then each entry's column and row.
Entry subnormals_entry() {
  Entry e;
  e.op = "fp8_find_subnormals";
  e.dtypes = {DType::Float32};
  e.lo = -0.03;  // e4m3's subnormals lie below 2^-6
  e.hi = 0.03;
  e.shapes = [](ShapeClass c) -> std::vector<InputSpec> {
    switch (c) {
      case ShapeClass::Empty:
        return {{{0, 5}}};
      case ShapeClass::Odd:
        return {{{2, 3, 150}}};
      case ShapeClass::NonContiguous:
        return {{{5, 37}, InputSpec::Transposed}};
      default:
        return {};
    }
  };
  e.call = [](const std::vector<Tensor>& t) {
    const Fp8Subnormals s =
        fp8_find_subnormals(t[0].dtype() == DType::Float8_e4m3fn ? t[0] : t[0].to(DType::Float8_e4m3fn));
    std::vector<double> v(s.row_start.begin(), s.row_start.end());
    for (size_t i = 0; i < s.col.size(); ++i) v.insert(v.end(), {double(s.col[i]), double(s.row[i])});
    return from_buffer_copy(v.data(), {int64_t(v.size())}, DType::Float64).to(DType::Int64).to(t[0].device());
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    const Shape& s = in.shapes[0];
    const int64_t K = s.back(), N = s[s.size() - 2], rows = K ? int64_t(in.values[0].size()) / K : 0;
    std::vector<double> starts{0}, list;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < K; ++k) {
        const double q = as_e4m3(in.values[0][size_t(r * K + k)]);
        if (q != 0 && std::fabs(q) < std::ldexp(1.0, -6)) list.insert(list.end(), {double(k), double(r % N)});
      }
      starts.push_back(double(list.size() / 2));
    }
    starts.insert(starts.end(), list.begin(), list.end());
    return starts;
  };
  e.ulps = 0;
  return e;
}

// The same ops walking FP8 inputs the table draws as codes (a float32 scale
// beside them): dequantize(w, scale), the NaN-code scan (NaN put at every 7th
// code; only float8_e4m3fn reports one) and e4m3's subnormal list.
Entry dequantize_fp8_entry(QuantGranularity g) {
  Entry e = dequantize_entry(g);
  e.dtypes = kFp8;
  const auto shapes = e.shapes;
  e.shapes = [shapes](ShapeClass c) {
    std::vector<InputSpec> s = shapes(c);
    if (!s.empty()) s[1].held = DType::Float32;
    return s;
  };
  e.call = [](const std::vector<Tensor>& t) { return dequantize(t[0], t[1]); };
  e.oracle = [g](const Inputs& in, const Tensor&) {
    const Groups gr = groups_of(in.shapes[0], g);
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = in.values[0][i] * in.values[1][size_t(gr.of[i])];
    return y;
  };
  return e;
}

Entry has_nan_fp8_entry(bool with_nan) {
  Entry e = has_nan_entry();
  e.dtypes = kFp8;
  if (with_nan) e.specials = {NAN};
  e.call = [](const std::vector<Tensor>& t) {
    return full({}, fp8_has_nan_code(t[0]) ? 1.0 : 0.0, DType::Float32, t[0].device());
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    bool nan = false;
    for (double v : in.values[0]) nan |= std::isnan(v);
    return std::vector<double>{nan && in.tensors[0].dtype() == DType::Float8_e4m3fn ? 1.0 : 0.0};
  };
  return e;
}

Entry subnormals_fp8_entry() {
  Entry e = subnormals_entry();
  e.dtypes = {DType::Float8_e4m3fn};  // its call takes the codes as they are
  return e;
}

std::vector<Entry> all() {
  std::vector<Entry> es;
  for (QuantGranularity g : {QuantGranularity::Tensor, QuantGranularity::Row, QuantGranularity::Block}) {
    es.push_back(quantize_entry(g));
    es.push_back(dequantize_entry(g));
  }
  es.push_back(has_nan_entry());
  es.push_back(subnormals_entry());
  for (QuantGranularity g : {QuantGranularity::Tensor, QuantGranularity::Row, QuantGranularity::Block})
    es.push_back(dequantize_fp8_entry(g));
  es.push_back(has_nan_fp8_entry(false));
  es.push_back(has_nan_fp8_entry(true));
  es.push_back(subnormals_fp8_entry());
  return es;
}

KILN_OP_TABLE(all());

}  // namespace
}  // namespace op_table
