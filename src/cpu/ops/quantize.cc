// CPU kernels of quantize_fp8, dequantize and the FP8 code scans
// (ops/registry/matmul.h): amax-based FP8 scales per tensor, row or 128x128
// block with saturating casts, a chunk of rows widened at a time; the inverse.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/cast.h"
#include "core/quant_layout.h"  // quantize_chunk_rows: the chunking the loaders share
#include "cpu/ops/matmul_family.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
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
    // (An undefined buf_ counts one element, as a 0-d tensor: test it first.)
    if (!buf_.defined() || buf_.numel() < n * K_) buf_ = empty({n * K_}, DType::Float32);
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
    KILN_CHECK(
        std::isfinite(src[i]), ValueError,
        "[quantize_fp8] input of shape " << w.shape_str() << " holds NaN or inf at flat index " << flat0 + i);
}

void quantize_kernel(const Tensor& w, QuantGranularity g, const Tensor& q, const Tensor& scale) {
  const DType dtype = q.dtype();
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

void dequantize_kernel(const Tensor& q, const Tensor& scale, ops::ScaleLayout layout, const Tensor& out) {
  const Mat m = mat_of(q.shape());
  const float* s = scale.data<float>();
  const float* x = q.data<float>();
  float* o = out.data<float>();
  const int64_t total = q.numel();
  if (layout == ops::ScaleLayout::Tensor) {
    for (int64_t i = 0; i < total; ++i) o[i] = x[i] * s[0];
    return;
  }
  if (layout == ops::ScaleLayout::Row) {
    for (int64_t i = 0; i < total; ++i) o[i] = x[i] * s[i / m.K];
    return;
  }
  const int64_t nb = (m.N + kB - 1) / kB, kb = (m.K + kB - 1) / kB;
  for (int64_t e = 0; e < m.E; ++e)
    for (int64_t n = 0; n < m.N; ++n)
      for (int64_t k = 0; k < m.K; ++k) {
        const int64_t i = (e * m.N + n) * m.K + k;
        o[i] = x[i] * s[(e * nb + n / kB) * kb + k / kB];
      }
}

bool has_nan_code_kernel(const Tensor& w) {
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

void find_subnormals_kernel(const Tensor& w, Fp8Subnormals& s) {
  const int64_t N = w.size(-2), K = w.size(-1), E = N * K == 0 ? 0 : w.numel() / (N * K);
  const Tensor c = w.contiguous();
  const uint8_t* b = static_cast<const uint8_t*>(c.data_ptr());
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
}

}  // namespace

void register_quantize_kernels() {
  ops::quantize_fp8.set_kernel(DeviceKind::CPU, quantize_kernel);
  ops::dequantize.set_kernel(DeviceKind::CPU, dequantize_kernel);
  ops::fp8_has_nan_code.set_kernel(DeviceKind::CPU, has_nan_code_kernel);
  ops::fp8_find_subnormals.set_kernel(DeviceKind::CPU, find_subnormals_kernel);
}

}  // namespace kiln::cpu
