// Many-row linear layers (prefill): y[M, N] = x[M, K] @ (W * scale)^T + bias
// for W in any weight dtype of gemv.h. While x fits in L2: slices of W's rows
// over kiln's threads, each a one-thread OpenBLAS sgemm on W itself (plain
// float32) or on a per-thread panel it was just widened into (scale applied).
// Larger x: one threaded sgemm over W, or over float32 panels of up to 256 MiB.
#pragma once

#include <cstdint>

#include "cpu/gemv.h"

namespace kiln::cpu {

// y must be float32 (a.y_dtype == Float32); a.accumulate adds into it.
void gemm(DType w_dtype, const GemvArgs& a);

// Rows [n0, n1) of W, widened to float32 with the scale applied, into
// dst [n1 - n0, K] (row stride K).
void widen_weight_rows(DType w_dtype, const GemvArgs& a, int64_t n0, int64_t n1, float* dst);

// C[M, N] = alpha * A[M, K] @ op(B) + beta * C, row-major, float32 via OpenBLAS;
// op(B) = B^T (B is [N, K], ldb) when b_trans, else B [K, N].
void sgemm(bool b_trans, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void dgemm(bool b_trans, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
           const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

}  // namespace kiln::cpu
