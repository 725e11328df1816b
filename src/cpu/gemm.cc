// Prefill GEMM dispatch (see gemm.h): kiln's packed GEMM, or OpenBLAS's sgemm
// (split over kiln's threads) for plain float32 weights once x outgrows L2,
// unless OpenBLAS runs narrower vectors than kiln.
#include "cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <string_view>

#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

BlasThreads::BlasThreads(int n) : prev_(openblas_get_num_threads()) {
  if (n != prev_) openblas_set_num_threads(n);
}
BlasThreads::~BlasThreads() {
  if (openblas_get_num_threads() != prev_) openblas_set_num_threads(prev_);
}

namespace {
// C = alpha * A @ op(B) + beta * C through OpenBLAS's `gemm` (cblas_sgemm or
// cblas_dgemm). A product of at least ~4M multiply-adds is cut into one block
// per kiln thread along the longer of M and N (each call packs the whole of
// the other operand: the smaller one); a smaller one is one call. OpenBLAS
// runs single-threaded either way, so its threads never wake to spin after a
// call. Nested in a parallel region it is one call with OpenBLAS's threads as
// they are set.
template <typename T, typename Gemm>
void blas_gemm(Gemm gemm, bool b_trans, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
               const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  // C[m0:m1, n0:n1]; op(B)'s columns n0..n1 are rows of B [N, K] when
  // transposed, else columns of B [K, N].
  auto block = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    gemm(CblasRowMajor, CblasNoTrans, b_trans ? CblasTrans : CblasNoTrans, blasint(m1 - m0), blasint(n1 - n0),
         blasint(K), alpha, A + m0 * lda, blasint(std::max<int64_t>(lda, 1)), B + (b_trans ? n0 * ldb : n0),
         blasint(std::max<int64_t>(ldb, 1)), beta, C + m0 * ldc + n0, blasint(std::max<int64_t>(ldc, 1)));
  };
  // Nested: the count is global, so another thread's call must not see it change.
  if (in_parallel_region()) return block(0, M, 0, N);
  const BlasThreads one(1);
  const int threads = num_threads();
  if (threads <= 1 || double(M) * double(N) * double(K) < double(1 << 22)) return block(0, M, 0, N);
  const bool along_n = N >= M;
  const int64_t len = along_n ? N : M;
  // Block edges on 16 elements: whole cache lines of C when cut along N.
  const int64_t units = (len + 15) / 16;
  const int64_t parts = std::min<int64_t>(threads, units);
  parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = std::min(len, units * p / parts * 16),
                    e = std::min(len, units * (p + 1) / parts * 16);
      if (e > b) along_n ? block(0, M, b, e) : block(b, e, 0, N);
    }
  });
}
}  // namespace

void sgemm(bool b_trans, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  blas_gemm(cblas_sgemm, b_trans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void dgemm(bool b_trans, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
           const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  blas_gemm(cblas_dgemm, b_trans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
    const std::string_view target = sys::simd_target_name();
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
