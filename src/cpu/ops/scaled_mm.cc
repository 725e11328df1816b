// CPU kernel of scaled_mm (ops/registry/matmul.h): every scaling scheme
// reduced to one form the linear kernels take: x = A * scale_a widened to
// float32 (the A-side scale folded in per row or per 1x128 block), W = B^T
// [N, K] in FP8 with the B-side scale per tensor, per row of W or per 128x128
// block.
#include <algorithm>
#include <cmath>

#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "cpu/ops/matmul_family.h"
#include "kiln/linear.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using Scheme = ops::ScaleLayout;

void scaled_mm_kernel(const Tensor& a, const Tensor& b, const Tensor& sa, const Tensor& sb, Scheme scheme,
                      const Tensor& bias, const Tensor& scale_result, const Tensor& out) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const DType od = out.dtype();
  // x = A * scale_a in float32, [M, K]. Where the AVX512-BF16 GEMM runs the
  // product, x stays A (its FP8 values are bf16 values, so it rounds
  // nothing) and a tensor or row scale_a multiplies y's rows after it, the
  // bias added then.
  const bool scale_after =
      M > kLinearGemvMaxRows && scheme != Scheme::Block &&
      bf16_gemm_covers(b.dtype(), scheme == Scheme::Tensor ? ScaleKind::Tensor : ScaleKind::Row);
  Tensor x = a.to(DType::Float32).contiguous();
  float* xp = x.data<float>();
  const float* sap = sa.data<float>();
  const int64_t kb = (K + 127) / 128;
  if (!scale_after)
    parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, K)), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        float* row = xp + m * K;
        for (int64_t k = 0; k < K; ++k) {
          const float s = scheme == Scheme::Tensor ? sap[0]
                          : scheme == Scheme::Row  ? sap[m]
                                                   : sap[m * kb + k / 128];
          row[k] *= s;
        }
      }
    });

  // W = B^T [N, K]: B column-major is W row-major already (B = W.t()).
  Tensor w = b.t();
  if (!(w.stride(1) == 1 && (N <= 1 || w.stride(0) >= K))) w = w.contiguous();
  Tensor wscale;  // the B-side scale in the kernel's layout for W
  GemvArgs args;
  if (scheme == Scheme::Tensor) {
    args.scale_kind = ScaleKind::Tensor;
    wscale = sb;
  } else if (scheme == Scheme::Row) {
    args.scale_kind = ScaleKind::Row;
    wscale = sb;
  } else {
    args.scale_kind = ScaleKind::Block;
    wscale = sb.t().contiguous();  // [nb, kb]
    args.scale_ld = kb;
    args.x_exact = true;  // A * scale_a is no longer an FP8 (bf16) value
  }
  args.scale = wscale.data<float>();
  args.w = w.data_ptr();
  args.ldw = N > 1 ? w.stride(0) : K;
  args.N = N;
  args.K = K;
  args.x = xp;
  args.ldx = K;
  args.M = M;
  Tensor bf;
  if (bias.defined()) {
    bf = f32_contiguous(bias.reshape({N}));
    if (!scale_after) args.bias = bf.data<float>();
  }
  const bool direct =
      !scale_after && (od == DType::Float32 || (M <= kLinearGemvMaxRows && od != DType::Float8_e4m3fn));
  Tensor yf = direct ? out : empty({M, N}, DType::Float32);
  args.y = yf.data_ptr();
  args.ldy = N;
  args.y_dtype = yf.dtype();
  if (K == 0) {
    yf.fill_(Scalar(0.0));
    if (bias.defined()) yf.copy_(bias.reshape({1, N}).expand({M, N}));
  } else if (M <= kLinearGemvMaxRows) {
    gemv(w.dtype(), args);  // the few-rows fast path (M <= kLinearGemvMaxRows)
  } else {
    gemm(w.dtype(), args);
  }
  if (scale_after && K > 0) {
    float* p = yf.data<float>();
    const float* bp = bias.defined() ? bf.data<float>() : nullptr;
    parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, N)), [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) {
        const float s = scheme == Scheme::Tensor ? sap[0] : sap[m];
        for (int64_t n = 0; n < N; ++n) p[m * N + n] = p[m * N + n] * s + (bp ? bp[n] : 0.0f);
      }
    });
  }
  if (direct) return;
  if (od == DType::Float8_e4m3fn) {
    // Saturating store, after the output scale (cuBLASLt's D scale: a multiplier).
    const float inv = scale_result.defined() ? scale_result.item<float>() : 1.0f;
    float* p = yf.data<float>();
    for (int64_t i = 0; i < M * N; ++i) {
      const float v = p[i] * inv;
      p[i] = std::isnan(v) ? v : std::min(std::max(v, -448.0f), 448.0f);
    }
  }
  Tensor o = out;
  o.copy_(yf);
}

}  // namespace

void register_scaled_mm_kernels() { ops::scaled_mm.set_kernel(DeviceKind::CPU, scaled_mm_kernel); }

}  // namespace kiln::cpu
