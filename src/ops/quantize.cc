// quantize_fp8 / dequantize: amax-based FP8 scales per tensor, row or
// 128x128 block; saturating casts; the inverse.
#include "kiln/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "cpu/gemv.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"
#include "ops/linear_common.h"
#include "ops/quantize.h"

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
  const Tensor c = w.contiguous();
  const uint8_t* b = static_cast<const uint8_t*>(c.data_ptr());
  const int64_t n = c.numel();
  // Bit 7 of (b & 0x7F) + 1 is set exactly for S.1111.111; OR-ed over 64 KiB
  // blocks (a loop the compiler vectorizes), stopping at the first hit.
  constexpr int64_t kStep = int64_t(1) << 16;
  for (int64_t lo = 0; lo < n; lo += kStep) {
    const int64_t hi = std::min(n, lo + kStep);
    uint8_t seen = 0;
    for (int64_t i = lo; i < hi; ++i) seen |= uint8_t((b[i] & 0x7F) + 1);
    if (seen & 0x80) return true;
  }
  return false;
}

Fp8Subnormals fp8_find_subnormals(const Tensor& w) {
  KILN_CHECK(
      w.defined() && w.dim() >= 2 && w.dtype() == DType::Float8_e4m3fn, TypeError,
      "[fp8_find_subnormals] weight must be a float8_e4m3fn tensor of 2 or more dims, got "
          << (w.defined() ? name(w.dtype()) + std::string(" ") + w.shape_str() : std::string("undefined")));
  const int64_t N = w.size(-2), K = w.size(-1), E = N * K == 0 ? 0 : w.numel() / (N * K);
  KILN_CHECK(K <= std::numeric_limits<int32_t>::max() && N <= std::numeric_limits<int32_t>::max(), ValueError,
             "[fp8_find_subnormals] a [" << N << ", " << K << "] weight has a side longer than 2^31 - 1");
  const Tensor c = w.contiguous();
  const uint8_t* b = static_cast<const uint8_t*>(c.data_ptr());
  Fp8Subnormals s;
  s.matrices = E;
  s.rows = N;
  s.cols = K;
  s.row_start.assign(size_t(E * N) + 1, 0);
  for (int64_t en = 0; en < E * N; ++en) {
    const int64_t n = en % N;
    const uint8_t* r = b + en * K;
    // Rows with none (most) are passed over 64 codes at a time: a code is
    // subnormal exactly when (code & 0x78) == 0 and (code & 0x07) != 0.
    for (int64_t k0 = 0; k0 < K; k0 += 64) {
      const int64_t k1 = std::min(K, k0 + 64);
      bool any = false;
      for (int64_t k = k0; k < k1; ++k) any |= (r[k] & 0x78) == 0 && (r[k] & 0x07) != 0;
      if (!any) continue;
      for (int64_t k = k0; k < k1; ++k)
        if ((r[k] & 0x78) == 0 && (r[k] & 0x07) != 0) {
          s.col.push_back(int32_t(k));
          s.row.push_back(int32_t(n));
          s.code.push_back(r[k]);
        }
    }
    s.row_start[size_t(en) + 1] = int64_t(s.col.size());
  }
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

constexpr int64_t kB = cpu::kScaleBlock;

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

uint8_t encode_sat(float v, DType d, float mx) {
  v = std::min(std::max(v, -mx), mx);
  return d == DType::Float8_e4m3fn ? float_to_e4m3fn_bits(v) : float_to_e5m2_bits(v);
}

// The rows of w (flattened to [rows, K], contiguous) in float32, a group of
// rows at a time: w itself where it is float32, else a chunk widened into one
// buffer, so quantizing a bf16 checkpoint tensor never holds a float32 copy of
// the whole of it (a Qwen3-30B-A3B expert stack would be 1.6 GB).
class F32Rows {
 public:
  F32Rows(const Tensor& w, int64_t K) : w_(w.contiguous()), K_(K) {}
  // rows [r0, r0 + n) as n * K floats; valid until the next call.
  const float* get(int64_t r0, int64_t n) {
    static const float kNone = 0.0f;
    if (n * K_ == 0) return &kNone;
    if (w_.dtype() == DType::Float32) return w_.data<float>() + r0 * K_;
    if (buf_.numel() < n * K_) buf_ = empty({n * K_}, DType::Float32);
    Tensor dst = buf_.narrow(0, 0, n * K_);
    dst.copy_(w_.view({-1}).narrow(0, r0 * K_, n * K_));
    return dst.data<float>();
  }

 private:
  Tensor w_, buf_;
  int64_t K_;
};

void check_finite(const float* src, int64_t n, int64_t flat0, const Tensor& w) {
  for (int64_t i = 0; i < n; ++i)
    KILN_CHECK(std::isfinite(src[i]), ValueError,
               "[quantize_fp8] input of shape " << w.shape_str() << " holds NaN or inf at flat index "
                                                << flat0 + i);
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

int64_t quantize_chunk_rows(int64_t K) { return std::max<int64_t>(1, (int64_t(2) << 20) / std::max<int64_t>(K, 1)); }

std::pair<Tensor, Tensor> quantize_fp8(const Tensor& w, QuantGranularity g, DType dtype) {
  KILN_CHECK(w.defined(), ValueError, "[quantize_fp8] input must be defined");
  check_args(w, g, dtype);
  Tensor q = empty(w.sizes(), dtype);
  Tensor scale = empty(scale_shape(w, g), DType::Float32);
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
  const float mx = fp8_max(dtype);
  const Mat m = mat_of(w.shape());
  const int64_t rows = m.E * m.N, K = m.K;
  F32Rows f32(w, K);
  uint8_t* dst = static_cast<uint8_t*>(q.data_ptr());
  // amax / mx underflows to 0 for amax below ~6e-43: the smallest positive
  // float keeps the scale usable (0 would turn every code into 0/0).
  auto scale_of = [mx](float amax) {
    return amax > 0.0f ? std::max(amax / mx, std::numeric_limits<float>::denorm_min()) : 1.0f;
  };
  const int64_t G = quantize_chunk_rows(K);

  if (g == QuantGranularity::Tensor) {
    // Two passes: the amax of everything, then the codes.
    float amax = 0.0f;
    for (int64_t r0 = 0; r0 < rows; r0 += G) {
      const int64_t n = std::min(G, rows - r0);
      const float* src = f32.get(r0, n);
      check_finite(src, n * K, r0 * K, w);
      for (int64_t i = 0; i < n * K; ++i) amax = std::max(amax, std::fabs(src[i]));
    }
    const float s = scale_of(amax);
    *scale.data<float>() = s;
    for (int64_t r0 = 0; r0 < rows; r0 += G) {
      const int64_t n = std::min(G, rows - r0);
      const float* src = f32.get(r0, n);
      uint8_t* out = dst + r0 * K;
      parallel_for(0, n * K, 1 << 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = encode_sat(src[i] / s, dtype, mx);
      });
    }
  } else if (g == QuantGranularity::Row) {
    float* sp = scale.data<float>();
    for (int64_t r0 = 0; r0 < rows; r0 += G) {
      const int64_t n = std::min(G, rows - r0);
      const float* src = f32.get(r0, n);
      check_finite(src, n * K, r0 * K, w);
      parallel_for(0, n, std::max<int64_t>(1, 16384 / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const float* x = src + r * K;
          float amax = 0.0f;
          for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[k]));
          const float s = scale_of(amax);
          sp[r0 + r] = s;
          uint8_t* out = dst + (r0 + r) * K;
          for (int64_t k = 0; k < K; ++k) out[k] = encode_sat(x[k] / s, dtype, mx);
        }
      });
    }
  } else {
    // One row of 128 x 128 blocks at a time.
    const int64_t nb = (m.N + kB - 1) / kB, kb = (m.K + kB - 1) / kB;
    float* sp = scale.data<float>();
    for (int64_t ei = 0; ei < m.E; ++ei) {
      for (int64_t bi = 0; bi < nb; ++bi) {
        const int64_t n0 = bi * kB, n1 = std::min(m.N, n0 + kB);
        const int64_t r0 = ei * m.N + n0;
        const float* src = f32.get(r0, n1 - n0);
        check_finite(src, (n1 - n0) * K, r0 * K, w);
        uint8_t* out = dst + r0 * K;
        float* srow = sp + (ei * nb + bi) * kb;
        parallel_for(0, kb, 1, [&](int64_t b, int64_t e) {
          for (int64_t bj = b; bj < e; ++bj) {
            const int64_t k0 = bj * kB, k1 = std::min(m.K, k0 + kB);
            float amax = 0.0f;
            for (int64_t n = 0; n < n1 - n0; ++n)
              for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(src[n * K + k]));
            const float s = scale_of(amax);
            srow[bj] = s;
            for (int64_t n = 0; n < n1 - n0; ++n)
              for (int64_t k = k0; k < k1; ++k) out[n * K + k] = encode_sat(src[n * K + k] / s, dtype, mx);
          }
        });
      }
    }
  }
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
  const float* s = sf.data<float>();
  const float* x = qf.data<float>();
  Tensor out = empty(q.sizes(), DType::Float32);
  float* o = out.data<float>();
  const int64_t total = q.numel();
  if (scale.numel() == 1) {
    for (int64_t i = 0; i < total; ++i) o[i] = x[i] * s[0];
    return out.to(out_dtype);
  }
  const bool lead_match =
      ss.size() + 1 >= qs.size() && qs.size() >= 1 && std::equal(qs.begin(), qs.end() - 1, ss.begin());
  const bool row = qs.size() >= 1 && lead_match &&
                   (ss.size() == qs.size() - 1 || (ss.size() == qs.size() && ss.back() == 1));
  if (row) {
    for (int64_t i = 0; i < total; ++i) o[i] = x[i] * s[i / m.K];
    return out.to(out_dtype);
  }
  const int64_t nb = (m.N + kB - 1) / kB, kb = (m.K + kB - 1) / kB;
  const bool block = qs.size() >= 2 && ss.size() == qs.size() &&
                     std::equal(qs.begin(), qs.end() - 2, ss.begin()) && ss[ss.size() - 2] == nb &&
                     ss.back() == kb;
  KILN_CHECK(block, ValueError,
             "[dequantize] scale of shape " << scale.shape_str() << " fits no layout for input "
                                            << q.shape_str() << " (one element, per row [..., N, 1], or per "
                                            << "128x128 block [..., " << nb << ", " << kb << "])");
  for (int64_t e = 0; e < m.E; ++e)
    for (int64_t n = 0; n < m.N; ++n)
      for (int64_t k = 0; k < m.K; ++k) {
        const int64_t i = (e * m.N + n) * m.K + k;
        o[i] = x[i] * s[(e * nb + n / kB) * kb + k / kB];
      }
  return out.to(out_dtype);
}

}  // namespace kiln
