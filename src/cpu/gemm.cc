// Prefill GEMM (see gemm.h): while x fits in L2, slices of W's rows on kiln's
// pool, each one OpenBLAS sgemm on one thread; beyond, OpenBLAS's own threads
// over the whole (widened) matrix.
#include "cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/convert.h"
#include "kiln/allocator.h"
#include "kiln/float_types.h"
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

void widen_weight_rows(DType w_dtype, const GemvArgs& a, int64_t n0, int64_t n1, float* dst) {
  const size_t isz = itemsize(w_dtype);
  for (int64_t n = n0; n < n1; ++n) {
    float* d = dst + (n - n0) * a.K;
    const void* src = static_cast<const char*>(a.w) + n * a.ldw * int64_t(isz);
    if (w_dtype == DType::Float32)
      std::memcpy(d, src, size_t(a.K) * 4);
    else
      convert_contiguous(src, w_dtype, d, DType::Float32, a.K);
    switch (a.scale_kind) {
      case ScaleKind::None:
        break;
      case ScaleKind::Tensor:
      case ScaleKind::Row: {
        const float s = a.scale_kind == ScaleKind::Tensor ? a.scale[0] : a.scale[n];
        for (int64_t k = 0; k < a.K; ++k) d[k] *= s;
        break;
      }
      case ScaleKind::Block: {
        const float* srow = a.scale + (n / kScaleBlock) * a.scale_ld;
        for (int64_t kb = 0; kb < a.K; kb += kScaleBlock) {
          const float s = srow[kb / kScaleBlock];
          const int64_t ke = std::min(a.K, kb + kScaleBlock);
          for (int64_t k = kb; k < ke; ++k) d[k] *= s;
        }
        break;
      }
    }
  }
}

namespace {

// x fits in L2 (the caller checks): each thread multiplies slices of W's rows
// with a one-thread sgemm, so OpenBLAS's threads never spin against kiln's
// and repacking x per slice is cheap; weights other than plain float32 are
// first widened into the thread's own panel, which stays in L2, so the
// widened copy never goes to memory.
void gemm_slices(DType w_dtype, const GemvArgs& a, float beta) {
  float* y = static_cast<float*>(a.y);
  const bool direct = w_dtype == DType::Float32 && a.scale_kind == ScaleKind::None;
  const int64_t slice =
      std::max<int64_t>(64, ((int64_t(512) << 10) / std::max<int64_t>(1, a.K * 4)) / 16 * 16);
  const int64_t slices = (a.N + slice - 1) / slice;
  const int prev_threads = openblas_get_num_threads();
  if (prev_threads != 1) openblas_set_num_threads(1);
  try {
    parallel_for(0, slices, 1, [&](int64_t s0, int64_t s1) {
      thread_local std::vector<float> panel;
      for (int64_t s = s0; s < s1; ++s) {
        const int64_t n0 = s * slice, n1 = std::min(a.N, n0 + slice);
        if (direct) {
          sgemm(true, a.M, n1 - n0, a.K, 1.0f, a.x, a.ldx, static_cast<const float*>(a.w) + n0 * a.ldw, a.ldw,
                beta, y + n0, a.ldy);
          continue;
        }
        if (panel.size() < size_t((n1 - n0) * a.K)) panel.resize(size_t(slice * a.K));
        widen_weight_rows(w_dtype, a, n0, n1, panel.data());
        sgemm(true, a.M, n1 - n0, a.K, 1.0f, a.x, a.ldx, panel.data(), a.K, beta, y + n0, a.ldy);
      }
    });
  } catch (...) {
    if (prev_threads != 1) openblas_set_num_threads(prev_threads);
    throw;
  }
  if (prev_threads != 1) openblas_set_num_threads(prev_threads);
}

}  // namespace

void gemm(DType w_dtype, const GemvArgs& a) {
  if (a.M <= 0 || a.N <= 0) return;
  float* y = static_cast<float*>(a.y);
  const float beta = a.accumulate ? 1.0f : 0.0f;
  if (a.K == 0) {
    if (!a.accumulate)
      for (int64_t m = 0; m < a.M; ++m) std::fill(y + m * a.ldy, y + m * a.ldy + a.N, 0.0f);
  } else if (double(a.M) * double(a.K) * 4.0 <= double(2 << 20)) {
    gemm_slices(w_dtype, a, beta);
  } else if (w_dtype == DType::Float32 && a.scale_kind == ScaleKind::None) {
    sgemm(true, a.M, a.N, a.K, 1.0f, a.x, a.ldx, static_cast<const float*>(a.w), a.ldw, beta, y, a.ldy);
  } else {
    // Panels of up to 256 MiB of float32 weights (the whole matrix for most
    // layers): OpenBLAS's threads keep spinning for a while after each sgemm and
    // would slow the widening that follows, so alternate between the two as
    // rarely as memory allows.
    const int64_t rows = std::min<int64_t>(
        a.N, std::max<int64_t>(64, ((int64_t(256) << 20) / std::max<int64_t>(1, a.K * 4)) / 16 * 16));
    const size_t bytes = size_t(rows * a.K) * sizeof(float);
    float* panel = static_cast<float*>(allocate(bytes));
    for (int64_t n0 = 0; n0 < a.N; n0 += rows) {
      const int64_t n1 = std::min(a.N, n0 + rows);
      parallel_for(n0, n1, 8, [&](int64_t b, int64_t e) {
        widen_weight_rows(w_dtype, a, b, e, panel + (b - n0) * a.K);
      });
      sgemm(true, a.M, n1 - n0, a.K, 1.0f, a.x, a.ldx, panel, a.K, beta, y + n0, a.ldy);
    }
    deallocate(panel, bytes);
  }
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
