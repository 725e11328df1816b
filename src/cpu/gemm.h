// Many-row linear layers (prefill): y[M, N] = x[M, K] @ (W * scale)^T + bias
// for W in any weight dtype of gemv.h: kiln's packed GEMM, which widens W
// (scale applied) into small float32 panels as it goes; plain float32 weights
// with x beyond L2 (M * K * 4 > 2 MiB) go to OpenBLAS's sgemm (sgemm below),
// which is faster there, except where kiln runs AVX-512 and OpenBLAS its AVX2
// kernels (gemm.cc).
#pragma once

#include <cstdint>

#include "cpu/gemv.h"

namespace kiln::cpu {

// y must be float32 (a.y_dtype == Float32); a.accumulate adds into it. Where
// bf16_gemm_covers(w_dtype, a.scale_kind), y may also be bf16 or f16 (not
// accumulated) and x given as a.x_bf16.
void gemm(DType w_dtype, const GemvArgs& a);

// The packed GEMM with on-the-fly widening (gemm_packed.cc); y float32,
// a.accumulate adds into it. gemm_packed packs x and splits y over N across
// the pool. Grouped work loops pack each group's x once (gemm_pack_x into
// gemm_packed_x_floats floats; the layout is the kernel's own and depends on
// M, K and the weight dtype) and call gemm_packed_rows for rows [n0, n1) of W
// on the calling thread. As for gemv, NaN weight codes give NaN.
void gemm_packed(DType w_dtype, const GemvArgs& a);
int64_t gemm_packed_x_floats(DType w_dtype, int64_t M, int64_t K);
void gemm_pack_x(DType w_dtype, const GemvArgs& a, float* xp);
void gemm_packed_rows(DType w_dtype, const GemvArgs& a, const float* xp, int64_t n0, int64_t n1);

// The packed GEMM's bf16 form (gemm_bf16.cc), which gemm_packed,
// gemm_pack_x and gemm_packed_rows take for bf16, e4m3fn and e5m2 weights
// without block scales when bf16_gemm_active(): x is rounded to bf16 (to
// nearest even; each product off by at most 2^-8 of itself, an x of bf16
// values unchanged) and each pair of products summed in float32, on AMX
// tiles (tdpbf16ps) where amx_tiles_active() (amx.h), else by AVX512-BF16's
// vdpbf16ps (~1.8x the FMA path's flops on a Zen 5). On by default on AMD
// CPUs that have vdpbf16ps and on CPUs with AMX; KILN_BF16_GEMM=on|off (or
// set_bf16_gemm) overrides, and off keeps the products exact to float32.
bool bf16_gemm();
void set_bf16_gemm(bool on);
// bf16_gemm() and this CPU and the dispatch target allow the kernel (decided
// once, after KILN_SIMD_TARGET's cap).
bool bf16_gemm_active();
// bf16_gemm_active() and weights of this dtype and scale layout.
bool bf16_gemm_covers(DType w_dtype, ScaleKind scale_kind);
// Whether gemm takes the product a on the bf16 GEMM: it covers W's dtype
// and scale layout, x need not stay exact (a.x_exact), and a k-major W
// (a.w_kmajor) is bf16. Products it does not take must not be k-major.
bool bf16_gemm_takes(DType w_dtype, const GemvArgs& a);
// Packed x as uint32 bf16 pairs (no more words than gemm_packed_x_floats's
// floats), and rows [n0, n1) of W on the calling thread.
int64_t gemm_bf16_x_words(int64_t M, int64_t K);
void gemm_bf16_pack_x(const GemvArgs& a, uint32_t* xp);
void gemm_bf16_rows(DType w_dtype, const GemvArgs& a, const uint32_t* xp, int64_t n0, int64_t n1);

// C[M, N] = alpha * A[M, K] @ op(B) + beta * C, row-major, float32 via OpenBLAS;
// op(B) = B^T (B is [N, K], ldb) when b_trans, else B [K, N]. Large products
// are split over kiln's threads, one single-threaded OpenBLAS call each, not
// handed to OpenBLAS's own threads: those spin and yield for a while after
// each call and take cores from kiln's next op (Emerald Rapids, 2 cores: the
// bf16 GEMM that follows a threaded sgemm ran 1.10-1.17x slower, thousands of
// involuntary context switches per call; the split sgemm is 0.98x the time of
// OpenBLAS's threaded one).
void sgemm(bool b_trans, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void dgemm(bool b_trans, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
           const double* B, int64_t ldb, double beta, double* C, int64_t ldc);
// OpenBLAS's own thread count for a scope; the previous count comes back at
// its end.
class BlasThreads {
 public:
  explicit BlasThreads(int n);
  ~BlasThreads();
  BlasThreads(const BlasThreads&) = delete;
  BlasThreads& operator=(const BlasThreads&) = delete;

 private:
  int prev_;
};

// Whether OpenBLAS runs its AVX-512 kernel set (SkylakeX, Cooperlake or
// SapphireRapids), chosen by itself or through OPENBLAS_CORETYPE.
bool openblas_runs_avx512();

}  // namespace kiln::cpu
