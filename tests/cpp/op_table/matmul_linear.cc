// Op table entries of linear, scaled_mm and grouped_mm (ops/registry/matmul.h):
// float and narrow weights, FP8 weights with scales per tensor, row and
// 128x128 block, against float64 products of the values as stored.
#include <cmath>

#include "cpu/gemv.h"  // kLinearGemvMaxRows
#include "cpu/ops/grouped_linear.h"
#include "kiln/bf16_gemm.h"
#include "kiln/grouped_mm.h"
#include "kiln/linear.h"
#include "kiln/scaled_mm.h"
#include "op_table/matmul_ref.h"

namespace op_table {
namespace {

using namespace kiln;

const std::vector<DType> kActF32 = {DType::Float32};
const std::vector<DType> kActNarrow = {DType::BFloat16, DType::Float16};

// float32 output sums K products in float32; bfloat16/float16 round once.
void set_tolerance(Entry& e, bool narrow) {
  e.ulps = narrow ? 2 : 64;
  e.floor = narrow ? 1 : 4;
}

int64_t blocks(int64_t n) { return (n + 127) / 128; }

// ---- linear ----------------------------------------------------------------

// How an entry's weight is stored and scaled. Inputs: x, w, then scale (when
// scaled), then bias (when biased).
struct LinearCase {
  DType w_dtype;  // Float32: the activation dtype itself (w drawn as x)
  enum Scale { None, PerTensor, PerRow, PerBlock } scale;
  bool bias;
};

// Logical shapes: x [..., K], w [N, K] (or [K]).
std::vector<InputSpec> linear_specs(const LinearCase& lc, std::vector<InputSpec> xw) {
  const Shape& w = xw[1].shape;
  const int64_t N = w.size() == 2 ? w[0] : 1, K = w.back();
  if (lc.scale == LinearCase::PerTensor) xw.push_back({{}});
  if (lc.scale == LinearCase::PerRow) xw.push_back({{N}});
  if (lc.scale == LinearCase::PerBlock) xw.push_back({{blocks(N), blocks(K)}});
  if (lc.bias) xw.push_back({{N}});
  return xw;
}

Entry linear_entry(LinearCase lc, bool narrow) {
  Entry e;
  e.op = "linear";
  e.dtypes = narrow ? kActNarrow : kActF32;
  e.lo = -1;
  e.hi = 1;
  const bool big = lc.scale == LinearCase::PerBlock;  // blocks need N, K past 128
  e.shapes = [lc, big](ShapeClass c) -> std::vector<InputSpec> {
    const int64_t N = big ? 130 : 7, K = big ? 200 : 37;
    switch (c) {
      case ShapeClass::Empty:
        return linear_specs(lc, {{{0, K}}, {{N, K}}});
      case ShapeClass::Scalar:  // one row, 1-D
        return linear_specs(lc, {{{K}}, {{N, K}}});
      case ShapeClass::Odd:  // the matrix-vector path (<= 6 rows) and the GEMM (9 rows)
        return big ? linear_specs(lc, {{{3, K}}, {{N, K}}}) : linear_specs(lc, {{{3, 3, K}}, {{N, K}}});
      case ShapeClass::NonContiguous:
        return linear_specs(lc, {{{5, K}, InputSpec::Transposed}, {{N, K}, InputSpec::Strided}});
      case ShapeClass::Broadcast:
        return linear_specs(lc, {{{2, 4, K}, InputSpec::Expanded, {1, 4, K}}, {{N, K}}});
    }
    return {};
  };
  e.call = [lc](const std::vector<Tensor>& t) {
    const Tensor w = lc.w_dtype == DType::Float32 ? t[1] : t[1].to(lc.w_dtype);
    const Tensor s = lc.scale != LinearCase::None ? t[2].to(DType::Float32) : Tensor();
    const Tensor b = lc.bias ? t.back() : Tensor();
    return linear(t[0], w, b, s);
  };
  e.oracle = [lc](const Inputs& in, const Tensor&) {
    const Shape& ws = in.shapes[1];
    const int64_t N = ws[0], K = ws[1], M = int64_t(in.values[0].size()) / K;
    std::vector<double> w = in.values[1];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        double& v = w[size_t(n * K + k)];
        if (lc.w_dtype != DType::Float32) v = stored(v, lc.w_dtype);
        const std::vector<double>* s = lc.scale != LinearCase::None ? &in.values[2] : nullptr;
        if (lc.scale == LinearCase::PerTensor) v *= (*s)[0];
        if (lc.scale == LinearCase::PerRow) v *= (*s)[size_t(n)];
        if (lc.scale == LinearCase::PerBlock) v *= (*s)[size_t((n / 128) * blocks(K) + k / 128)];
      }
    // Past the matrix-vector rows, the AVX512-BF16 GEMM (where active) rounds
    // x to bf16 for bf16, f16 and FP8 weights, whatever their scales (a
    // float32 entry's weight has the walk's dtype).
    const DType wd = lc.w_dtype == DType::Float32 ? in.tensors[1].dtype() : lc.w_dtype;
    const bool rounds_x = bf16_gemm_active() && M > kLinearGemvMaxRows && wd != DType::Float32;
    std::vector<double> x = in.values[0];
    if (rounds_x)
      for (double& v : x) v = stored(v, DType::BFloat16);
    std::vector<double> y = ref_linear(x, w, M, N, K);
    if (lc.bias)
      for (size_t i = 0; i < y.size(); ++i) y[i] += in.values.back()[i % size_t(N)];
    return y;
  };
  set_tolerance(e, narrow);
  e.perf_shapes = linear_specs(lc, {{{1, 4096}}, {{4096, 4096}}});
  return e;
}

// ---- scaled_mm -------------------------------------------------------------

// Inputs: a [M, K], b [K, N] (made float8_e4m3fn), scale_a, scale_b; or,
// when `fp8`, a drawn in the walk's FP8 dtype and b in float8_e4m3fn (not
// both e5m2), the scales float32.
Entry scaled_mm_entry(LinearCase::Scale scheme, bool fp8 = false) {
  Entry e;
  e.op = "scaled_mm";
  e.dtypes = fp8 ? kFp8 : kActF32;
  e.lo = -1;
  e.hi = 1;
  e.shapes = [scheme, fp8](ShapeClass c) -> std::vector<InputSpec> {
    const bool block = scheme == LinearCase::PerBlock;
    const int64_t K = block ? 200 : 37, N = block ? 130 : 7;
    auto with_scales = [&](int64_t M, InputSpec a, InputSpec b) -> std::vector<InputSpec> {
      std::vector<InputSpec> s = {a, b, {{}}, {{}}};
      if (scheme == LinearCase::PerRow) s = {a, b, {{M, 1}}, {{1, N}}};
      if (scheme == LinearCase::PerBlock) s = {a, b, {{M, blocks(K)}}, {{blocks(K), blocks(N)}}};
      if (fp8) {
        s[1].held = DType::Float8_e4m3fn;
        s[2].held = s[3].held = DType::Float32;
      }
      return s;
    };
    switch (c) {
      case ShapeClass::Empty:
        return with_scales(0, {{0, K}}, {{K, N}});
      case ShapeClass::Odd:  // the matrix-vector path
        return with_scales(5, {{5, K}}, {{K, N}});
      case ShapeClass::NonContiguous:  // B column-major (B = W.t()), the GEMM
        return with_scales(9, {{9, K}}, {{K, N}, InputSpec::Transposed});
      default:
        return {};
    }
  };
  e.call = [fp8](const std::vector<Tensor>& t) {
    if (fp8) return scaled_mm(t[0], t[1], t[2], t[3], Tensor(), Tensor(), DType::Float32);
    return scaled_mm(t[0].to(DType::Float8_e4m3fn), t[1].to(DType::Float8_e4m3fn), t[2].to(DType::Float32),
                     t[3].to(DType::Float32), Tensor(), Tensor(), DType::Float32);
  };
  // FP8 inputs hold their values already; float32 ones are rounded to e4m3.
  e.oracle = [scheme, fp8](const Inputs& in, const Tensor&) {
    auto as_e4m3 = [fp8](double v) { return fp8 ? v : op_table::as_e4m3(v); };
    const int64_t M = in.shapes[0][0], K = in.shapes[0][1], N = in.shapes[1][1];
    const auto &sa = in.values[2], &sb = in.values[3];
    std::vector<double> x(static_cast<size_t>(M * K)), w(size_t(N * K));  // w = B^T
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        const double s = scheme == LinearCase::PerTensor ? sa[0]
                         : scheme == LinearCase::PerRow  ? sa[size_t(m)]
                                                         : sa[size_t(m * blocks(K) + k / 128)];
        x[size_t(m * K + k)] = as_e4m3(in.values[0][size_t(m * K + k)]) * s;
      }
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        const double s = scheme == LinearCase::PerTensor ? sb[0]
                         : scheme == LinearCase::PerRow  ? sb[size_t(n)]
                                                         : sb[size_t((k / 128) * blocks(N) + n / 128)];
        w[size_t(n * K + k)] = as_e4m3(in.values[1][size_t(k * N + n)]) * s;
      }
    return ref_linear(x, w, M, N, K);
  };
  set_tolerance(e, false);
  return e;
}

// ---- grouped_mm ------------------------------------------------------------

// The group ends an entry uses for a grouped extent of `total` rows/columns
// and G groups: an empty group, an uneven split, and a tail past offs[-1].
std::vector<int32_t> ends_of(int64_t total, int64_t G) {
  std::vector<int32_t> e(static_cast<size_t>(G));
  for (int64_t g = 0; g < G; ++g) e[size_t(g)] = int32_t(g == 0 ? 0 : std::min(total, (total * g) / (G - 1)));
  if (G > 1 && total > 1) e[size_t(G - 1)] = int32_t(total - 1);  // the last row/column is past the end
  return e;
}
Tensor offs_tensor(const std::vector<int32_t>& e, Device device) {
  return from_buffer_copy(e.data(), {int64_t(e.size())}, DType::Int32).to(device);
}

enum class Form { TwoThree, TwoThreeFp8, ThreeTwo, TwoTwo, ThreeThree };

Entry grouped_entry(Form f, bool narrow) {
  Entry e;
  e.op = "grouped_mm";
  e.dtypes = narrow ? kActNarrow : kActF32;
  e.lo = -1;
  e.hi = 1;
  e.shapes = [f](ShapeClass c) -> std::vector<InputSpec> {
    const bool empty = c == ShapeClass::Empty;
    const bool nc = c == ShapeClass::NonContiguous;
    const InputSpec::Layout lay = nc ? InputSpec::Transposed : InputSpec::Contiguous;
    if (c != ShapeClass::Empty && c != ShapeClass::Odd && !nc) return {};
    const int64_t T = empty ? 0 : 23, G = 4, K = 37, N = 7, M = 5;
    switch (f) {
      case Form::TwoThree:  // a [T, K], b [G, K, N], bias [G, N]
        return {{{T, K}}, {{G, K, N}, lay}, {{G, N}}};
      case Form::TwoThreeFp8:  // b_scale [G, N]
        return {{{T, K}}, {{G, K, N}, lay}, {{G, N}}};
      case Form::ThreeTwo:  // a [G, M, K], b [K, T]
        return {{{G, M, K}, lay}, {{K, T}}};
      case Form::TwoTwo:  // a [M, T], b [T, N]
        return {{{M, T}}, {{T, N}, lay}};
      case Form::ThreeThree:
        return {{{G, M, K}}, {{G, K, N}, lay}};
    }
    return {};
  };
  e.call = [f](const std::vector<Tensor>& t) {
    const int64_t G = 4;
    switch (f) {
      case Form::TwoThree:
        return grouped_mm(t[0], t[1], offs_tensor(ends_of(t[0].size(0), G), t[0].device()), t[2]);
      case Form::TwoThreeFp8:
        return grouped_mm(t[0], t[1].to(DType::Float8_e4m3fn),
                          offs_tensor(ends_of(t[0].size(0), G), t[0].device()), Tensor(),
                          t[2].to(DType::Float32));
      case Form::ThreeTwo:
        return grouped_mm(t[0], t[1], offs_tensor(ends_of(t[1].size(1), G), t[0].device()));
      case Form::TwoTwo:
        return grouped_mm(t[0], t[1], offs_tensor(ends_of(t[0].size(1), G), t[0].device()));
      case Form::ThreeThree:
        return grouped_mm(t[0], t[1]);
    }
    return Tensor();
  };
  e.oracle = [f](const Inputs& in, const Tensor&) {
    const auto &a = in.values[0], &b = in.values[1];
    const Shape &sa = in.shapes[0], &sb = in.shapes[1];
    const int64_t G = 4;
    std::vector<double> y;
    if (f == Form::TwoThree || f == Form::TwoThreeFp8) {
      const int64_t T = sa[0], K = sa[1], N = sb[2];
      const std::vector<int32_t> ends = ends_of(T, G);
      // FP8, f16 (and bf16, already bf16 x) groups past the matrix-vector
      // rows take the bf16 GEMM (where active), which rounds x to bf16.
      const DType wd = f == Form::TwoThreeFp8 ? DType::Float8_e4m3fn : in.tensors[1].dtype();
      auto rounds_x = [&](int64_t g) {
        const int64_t rows = ends[size_t(g)] - (g ? ends[size_t(g - 1)] : 0);
        return wd != DType::Float32 && bf16_gemm_active() &&
               rows > cpu::grouped_gemv_max_rows(wd, f == Form::TwoThreeFp8);
      };
      y.assign(size_t(T * N), 0.0);
      for (int64_t g = 0; g < G; ++g)
        for (int64_t t = g ? ends[size_t(g - 1)] : 0; t < ends[size_t(g)]; ++t)
          for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double w = b[size_t((g * K + k) * N + n)];
              const double x =
                  rounds_x(g) ? stored(a[size_t(t * K + k)], DType::BFloat16) : a[size_t(t * K + k)];
              s += x * (f == Form::TwoThreeFp8 ? as_e4m3(w) : w);
            }
            const double extra = in.values[2][size_t(g * N + n)];  // bias, or the FP8 scale
            y[size_t(t * N + n)] = f == Form::TwoThreeFp8 ? s * extra : s + extra;
          }
    } else if (f == Form::ThreeTwo) {
      const int64_t M = sa[1], K = sa[2], T = sb[1];
      const std::vector<int32_t> ends = ends_of(T, G);
      y.assign(size_t(M * T), 0.0);
      for (int64_t g = 0; g < G; ++g)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t t = g ? ends[size_t(g - 1)] : 0; t < ends[size_t(g)]; ++t) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += a[size_t((g * M + m) * K + k)] * b[size_t(k * T + t)];
            y[size_t(m * T + t)] = s;
          }
    } else if (f == Form::TwoTwo) {
      const int64_t M = sa[0], T = sa[1], N = sb[1];
      const std::vector<int32_t> ends = ends_of(T, G);
      y.assign(size_t(G * M * N), 0.0);
      for (int64_t g = 0; g < G; ++g)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t t = g ? ends[size_t(g - 1)] : 0; t < ends[size_t(g)]; ++t)
              s += a[size_t(m * T + t)] * b[size_t(t * N + n)];
            y[size_t((g * M + m) * N + n)] = s;
          }
    } else {
      const int64_t M = sa[1], K = sa[2], N = sb[2];
      y.assign(size_t(G * M * N), 0.0);
      for (int64_t g = 0; g < G; ++g)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += a[size_t((g * M + m) * K + k)] * b[size_t((g * K + k) * N + n)];
            y[size_t((g * M + m) * N + n)] = s;
          }
    }
    return y;
  };
  set_tolerance(e, narrow);
  return e;
}

std::vector<Entry> all() {
  using LC = LinearCase;
  std::vector<Entry> es;
  for (bool narrow : {false, true}) {
    es.push_back(linear_entry({DType::Float32, LC::None, true}, narrow));
    es.push_back(linear_entry({DType::Float8_e4m3fn, LC::PerRow, false}, narrow));
    es.push_back(linear_entry({DType::Float8_e5m2, LC::PerTensor, true}, narrow));
    es.push_back(linear_entry({DType::Float8_e4m3fn, LC::PerBlock, false}, narrow));
    for (Form f : {Form::TwoThree, Form::TwoThreeFp8, Form::ThreeTwo, Form::TwoTwo, Form::ThreeThree})
      es.push_back(grouped_entry(f, narrow));
  }
  es.push_back(linear_entry({DType::BFloat16, LC::PerBlock, true}, false));
  for (LC::Scale s : {LC::PerTensor, LC::PerRow, LC::PerBlock}) {
    es.push_back(scaled_mm_entry(s));
    es.push_back(scaled_mm_entry(s, true));
  }
  return es;
}

KILN_OP_TABLE(all());

}  // namespace
}  // namespace op_table
