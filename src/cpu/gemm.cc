// Prefill GEMM dispatch (see gemm.h): kiln's packed GEMM, or OpenBLAS's
// threaded sgemm for plain float32 weights once x outgrows L2, unless OpenBLAS
// runs narrower vectors than kiln.
#include "cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <string_view>

#include "cpu/convert.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

void sgemm(bool b_trans, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_trans ? CblasTrans : CblasNoTrans, blasint(M), blasint(N),
              blasint(K), alpha, A, blasint(std::max<int64_t>(lda, 1)), B, blasint(std::max<int64_t>(ldb, 1)),
              beta, C, blasint(std::max<int64_t>(ldc, 1)));
}

void dgemm(bool b_trans, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
           const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, b_trans ? CblasTrans : CblasNoTrans, blasint(M), blasint(N),
              blasint(K), alpha, A, blasint(std::max<int64_t>(lda, 1)), B, blasint(std::max<int64_t>(ldb, 1)),
              beta, C, blasint(std::max<int64_t>(ldc, 1)));
}

bool openblas_runs_avx512() {
  const std::string_view core = openblas_get_corename();
  return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
}

namespace {
// Whether kiln dispatches AVX-512 while OpenBLAS runs narrower kernels (its
// AVX2 "Haswell" set: Debian's 0.3.21 on a Zen 5, or OPENBLAS_CORETYPE set so).
// There the packed GEMM is ~1.6x faster than sgemm (M = 512, 4096 x 4096 on
// a Zen 5: 51-55 against 84-90 ms; OpenBLAS's SkylakeX kernels: 48 ms).
bool openblas_narrower() {
  static const bool narrower = [] {
    const std::string_view target = simd_target_name();
    return target.substr(0, 4) == "AVX3" && !openblas_runs_avx512();
  }();
  return narrower;
}
}  // namespace

void gemm(DType w_dtype, const GemvArgs& a) {
  if (a.M <= 0 || a.N <= 0) return;
  const bool plain_f32 = w_dtype == DType::Float32 && a.scale_kind == ScaleKind::None;
  if (!plain_f32 || a.K == 0 || double(a.M) * double(a.K) * 4.0 <= double(2 << 20) || openblas_narrower()) {
    gemm_packed(w_dtype, a);
    return;
  }
  float* y = static_cast<float*>(a.y);
  sgemm(true, a.M, a.N, a.K, 1.0f, a.x, a.ldx, static_cast<const float*>(a.w), a.ldw, a.accumulate ? 1.0f : 0.0f,
        y, a.ldy);
  if (a.bias) {
    parallel_for(0, a.M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, a.N)), [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        float* row = y + m * a.ldy;
        for (int64_t n = 0; n < a.N; ++n) row[n] += a.bias[n];
      }
    });
  }
}

}  // namespace kiln::cpu
