// quantize_fp8 / dequantize: amax-based FP8 scales per tensor, row or
// 128x128 block; saturating casts; the inverse.
#include "kiln/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kiln/error.h"
#include "ops/linear_common.h"
#include "ops/registry/all.h"

namespace kiln {

QuantGranularity granularity_from_name(const std::string& n) {
  if (n == "tensor") return QuantGranularity::Tensor;
  if (n == "row") return QuantGranularity::Row;
  if (n == "block") return QuantGranularity::Block;
  throw ValueError("[quantize_fp8] granularity must be \"tensor\", \"row\" or \"block\", got \"" + n + "\"");
}

float fp8_max(DType d) {
  KILN_CHECK(is_fp8(d), TypeError, "[fp8_max] not an FP8 dtype: " << name(d));
  return d == DType::Float8_e4m3fn ? 448.0f : 57344.0f;
}

bool fp8_has_nan_code(const Tensor& w) {
  if (!w.defined() || w.dtype() != DType::Float8_e4m3fn || w.numel() == 0) return false;
  return ops::fp8_has_nan_code(common_device("fp8_has_nan_code", {&w}), w);
}

Fp8Subnormals fp8_find_subnormals(const Tensor& w) {
  KILN_CHECK(
      w.defined() && w.dim() >= 2 && w.dtype() == DType::Float8_e4m3fn, TypeError,
      "[fp8_find_subnormals] weight must be a float8_e4m3fn tensor of 2 or more dims, got "
          << (w.defined() ? name(w.dtype()) + std::string(" ") + w.shape_str() : std::string("undefined")));
  const int64_t N = w.size(-2), K = w.size(-1);
  KILN_CHECK(K <= std::numeric_limits<int32_t>::max() && N <= std::numeric_limits<int32_t>::max(), ValueError,
             "[fp8_find_subnormals] a [" << N << ", " << K << "] weight has a side longer than 2^31 - 1");
  Fp8Subnormals s;
  ops::fp8_find_subnormals(common_device("fp8_find_subnormals", {&w}), w, s);
  return s;
}

namespace detail {
void check_subnormal_list(const Fp8Subnormals& s, DType w_dtype, int64_t E, int64_t N, int64_t K,
                          const char* op) {
  KILN_CHECK(
      w_dtype == DType::Float8_e4m3fn, TypeError,
      "[" << op << "] subnormal codes are listed for float8_e4m3fn weights only, got " << name(w_dtype));
  const size_t n = s.col.size();
  KILN_CHECK(s.matrices == E && s.rows == N && s.cols == K && s.row_start.size() == size_t(E * N) + 1 &&
                 s.row_start.front() == 0 && s.row_start.back() == int64_t(n) && s.row.size() == n &&
                 s.code.size() == n,
             ValueError,
             "[" << op << "] the subnormal list is of " << s.matrices << " matrices [" << s.rows << ", "
                 << s.cols << "] (" << n << " codes), not of this weight's " << E << " [" << N << ", " << K
                 << "]");
}
}  // namespace detail

namespace {

constexpr int64_t kB = ops::kScaleBlock;

// The layout of w [E..., N, K] for a granularity: E batch matrices of N x K
// (a 1-D w is one row; a 0-d w one element).
struct Mat {
  int64_t E, N, K;
};
Mat mat_of(std::span<const int64_t> s) {
  if (s.empty()) return {1, 1, 1};
  if (s.size() == 1) return {1, 1, s[0]};
  int64_t e = 1;
  for (size_t i = 0; i + 2 < s.size(); ++i) e *= s[i];
  return {e, s[s.size() - 2], s[s.size() - 1]};
}

// What every entry checks, in this order: the codes' dtype, the input's, and
// the ranks the granularity needs.
void check_args(const Tensor& w, QuantGranularity g, DType dtype) {
  KILN_CHECK(is_fp8(dtype), TypeError,
             "[quantize_fp8] dtype must be float8_e4m3fn or float8_e5m2, got " << name(dtype));
  KILN_CHECK(is_floating(w.dtype()) && !is_fp8(w.dtype()), TypeError,
             "[quantize_fp8] input must be float32, float64, bfloat16 or float16, got " << name(w.dtype()));
  KILN_CHECK(g != QuantGranularity::Row || w.dim() >= 1, ValueError,
             "[quantize_fp8] row granularity needs at least 1 dim, got a 0-d tensor");
  KILN_CHECK(g != QuantGranularity::Block || w.dim() >= 2, ValueError,
             "[quantize_fp8] block granularity needs at least 2 dims, got shape " << w.shape_str());
}

// The scale's shape for w's shape and a granularity (see quantize.h).
Shape scale_shape(const Tensor& w, QuantGranularity g) {
  Shape ss = w.sizes();
  if (g == QuantGranularity::Tensor) return {};
  if (g == QuantGranularity::Row) {
    ss.back() = 1;
  } else {
    ss[ss.size() - 2] = (ss[ss.size() - 2] + kB - 1) / kB;
    ss[ss.size() - 1] = (ss[ss.size() - 1] + kB - 1) / kB;
  }
  return ss;
}

}  // namespace

std::pair<Tensor, Tensor> quantize_fp8(const Tensor& w, QuantGranularity g, DType dtype) {
  KILN_CHECK(w.defined(), ValueError, "[quantize_fp8] input must be defined");
  check_args(w, g, dtype);
  Tensor q = empty(w.sizes(), dtype, w.device());
  Tensor scale = empty(scale_shape(w, g), DType::Float32, w.device());
  quantize_fp8_into(w, g, q, scale);
  return {q, scale};
}

void quantize_fp8_into(const Tensor& w, QuantGranularity g, const Tensor& q, const Tensor& scale) {
  KILN_CHECK(w.defined() && q.defined() && scale.defined(), ValueError,
             "[quantize_fp8] input, codes and scale must be defined");
  const DType dtype = q.dtype();
  check_args(w, g, dtype);
  KILN_CHECK(q.sizes() == w.sizes() && q.is_contiguous(), ValueError,
             "[quantize_fp8] codes must be contiguous of shape " << w.shape_str() << ", got " << q.shape_str());
  KILN_CHECK(scale.dtype() == DType::Float32 && scale.is_contiguous() && scale.sizes() == scale_shape(w, g),
             ValueError,
             "[quantize_fp8] scale must be contiguous float32 of shape "
                 << shape_to_string(scale_shape(w, g)) << ", got " << name(scale.dtype()) << " "
                 << scale.shape_str());
  ops::quantize_fp8(common_device("quantize_fp8", {&w, &q, &scale}), w, g, q, scale);
}

Tensor dequantize(const Tensor& q, const Tensor& scale, DType out_dtype) {
  KILN_CHECK(q.defined() && scale.defined(), ValueError, "[dequantize] input and scale must be defined");
  KILN_CHECK(is_floating(q.dtype()), TypeError,
             "[dequantize] input must be a float type, got " << name(q.dtype()));
  KILN_CHECK(is_floating(out_dtype) && !is_fp8(out_dtype), TypeError,
             "[dequantize] out dtype must be float32, float64, bfloat16 or float16, got " << name(out_dtype));
  const Tensor qf = detail::f32_contiguous(q);
  const Tensor sf = detail::f32_contiguous(scale);
  const Mat m = mat_of(q.shape());
  const auto qs = q.shape();
  const auto ss = scale.shape();
  ops::ScaleLayout layout = ops::ScaleLayout::Tensor;
  if (scale.numel() != 1) {
    const bool lead_match =
        ss.size() + 1 >= qs.size() && qs.size() >= 1 && std::equal(qs.begin(), qs.end() - 1, ss.begin());
    const bool row = qs.size() >= 1 && lead_match &&
                     (ss.size() == qs.size() - 1 || (ss.size() == qs.size() && ss.back() == 1));
    const int64_t nb = (m.N + kB - 1) / kB, kb = (m.K + kB - 1) / kB;
    const bool block = qs.size() >= 2 && ss.size() == qs.size() &&
                       std::equal(qs.begin(), qs.end() - 2, ss.begin()) && ss[ss.size() - 2] == nb &&
                       ss.back() == kb;
    KILN_CHECK(row || block, ValueError,
               "[dequantize] scale of shape " << scale.shape_str() << " fits no layout for input "
                                              << q.shape_str()
                                              << " (one element, per row [..., N, 1], or per "
                                              << "128x128 block [..., " << nb << ", " << kb << "])");
    layout = row ? ops::ScaleLayout::Row : ops::ScaleLayout::Block;
  }
  Tensor out = empty(q.sizes(), DType::Float32, q.device());
  ops::dequantize(common_device("dequantize", {&qf, &sf, &out}), qf, sf, layout, out);
  return out.to(out_dtype);
}

}  // namespace kiln
