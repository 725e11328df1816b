// CPU kernels of linalg.svd / svdvals (ops/registry/linalg.h) through LAPACK
// gesdd (divide and conquer), falling back to gesvd (QR iteration) for a
// matrix on which gesdd fails or whose gesdd workspace would not fit LAPACK's
// 32-bit integers. LAPACK scales matrices whose norm is near underflow or
// overflow, so singular values around 1e-30 and 1e30 come out right in
// float32 too.
#include <algorithm>
#include <vector>

#include "core/linalg_layout.h"
#include "cpu/lapack.h"
#include "cpu/ops/linalg.h"
#include "cpu/ops/linalg_batch.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using namespace kiln::linalg::detail;

// SVD of one column-major m x n matrix `src` (not modified). jobz 'A', 'S' or
// 'N'; u: m x ucols (ld m), vt: vrows x n (ld vrows). Returns info.
template <typename T>
int svd_one(char jobz, int64_t m, int64_t n, const T* src, lapack::real_t<T>* s, T* u, T* vt, int64_t vrows) {
  using R = lapack::real_t<T>;
  const int64_t k = std::min(m, n);
  std::vector<T> a(src, src + m * n);
  const int64_t ldu = std::max<int64_t>(m, 1), ldvt = std::max<int64_t>(vrows, 1);
  T dummy{};
  T* up = jobz == 'N' ? &dummy : u;
  T* vp = jobz == 'N' ? &dummy : vt;
  int info = lapack::gesdd<T>(jobz, m, n, a.data(), std::max<int64_t>(m, 1), s, up, ldu, vp, ldvt);
  if (info == 0) return 0;
  std::copy(src, src + m * n, a.begin());
  std::vector<R> superb(std::max<int64_t>(k, 2));
  return lapack::gesvd<T>(jobz, jobz, m, n, a.data(), std::max<int64_t>(m, 1), s, up, ldu, vp, ldvt,
                          superb.data());
}

void svd_kernel(const Tensor& a, bool full_matrices, const Tensor& S, const Tensor& ub, const Tensor& vb,
                const Tensor& info) {
  const char* op = "linalg.svd";
  const int64_t m = a.size(-1), n = a.size(-2), k = std::min(m, n), count = info.numel();
  const int64_t ucols = ub.size(-2), vrows = vb.size(-1);
  const Tensor& A = a;
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    const T* ap = a.data<T>();
    R* sp = S.data<R>();
    T* up = ub.data<T>();
    T* vp = vb.data<T>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      ip[b] = svd_one<T>(full_matrices ? 'A' : 'S', m, n, ap + b * m * n, sp + b * k, up + b * m * ucols,
                         vp + b * vrows * n, vrows);
    });
  });
}

void svdvals_kernel(const Tensor& a, const Tensor& S, const Tensor& info) {
  const char* op = "linalg.svdvals";
  const int64_t m = a.size(-1), n = a.size(-2), k = std::min(m, n), count = info.numel();
  const Tensor& A = a;
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    const T* ap = a.data<T>();
    R* sp = S.data<R>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      ip[b] = svd_one<T>('N', m, n, ap + b * m * n, sp + b * k, nullptr, nullptr, 1);
    });
  });
}

// ub: [*, k, m] (U column-major); vb: [*, k, n] (Vh column-major) or, when
// hermitian, [*, n, n] (Q column-major); sc: [*, k] real; out: [*, m, n]
// contiguous, pinv column-major.
void pinv_kernel(const Tensor& ub, const Tensor& vb, const Tensor& sc, double at, double rt, bool hermitian,
                 const Tensor& out) {
  const char* op = "linalg.pinv";
  const int64_t m = ub.size(-1), n = out.size(-1), k = sc.size(-1), count = out.numel() / (m * n);
  const Tensor& A = out;
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    const T* up = ub.data<T>();
    const T* vp = vb.data<T>();
    const R* sp = sc.data<R>();
    T* op_ = out.data<T>();
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      const R* s = sp + b * k;
      R smax = 0;
      for (int64_t i = 0; i < k; ++i) smax = std::max<R>(smax, std::abs(s[i]));
      const R tol = std::max<R>(R(at), R(rt) * smax);
      // W = U diag(1 / s) (columns with s <= tol dropped), m x k column-major.
      std::vector<T> w(up + b * m * k, up + (b + 1) * m * k);
      for (int64_t j = 0; j < k; ++j) {
        const R sj = s[j];
        const T f = std::abs(sj) > tol ? T(R(1) / sj) : T(0);
        for (int64_t i = 0; i < m; ++i) w[j * m + i] *= f;
      }
      T* o = op_ + b * n * m;
      if (hermitian)  // pinv = Q diag(1/w) Q^H
        lapack::gemm<T>('N', 'C', n, m, k, T(1), vp + b * n * n, n, w.data(), m, T(0), o, n);
      else  // pinv = Vh^H diag(1/s) U^H
        lapack::gemm<T>('C', 'C', n, m, k, T(1), vp + b * k * n, k, w.data(), m, T(0), o, n);
    });
  });
}

// S: [*, k] real contiguous; out: [*] int64.
void matrix_rank_kernel(const Tensor& S, double at, double rt, const Tensor& out) {
  const char* op = "linalg.matrix_rank";
  const int64_t k = S.size(-1);
  const int64_t count = out.numel();
  int64_t* o = out.data<int64_t>();
  dispatch<bit(DType::Float32) | bit(DType::Float64)>(S.dtype(), op, [&]<typename R>() {
    const R* sp = S.data<R>();
    for (int64_t b = 0; b < count; ++b) {
      R smax = 0;
      for (int64_t i = 0; i < k; ++i) smax = std::max<R>(smax, std::abs(sp[b * k + i]));
      const R tol = std::max<R>(R(at), R(rt) * smax);
      int64_t r = 0;
      for (int64_t i = 0; i < k; ++i) r += std::abs(sp[b * k + i]) > tol;
      o[b] = r;
    }
  });
}

}  // namespace

void register_linalg_svd_kernels() {
  ops::linalg_svd.set_kernel(DeviceKind::CPU, svd_kernel);
  ops::linalg_svdvals.set_kernel(DeviceKind::CPU, svdvals_kernel);
  ops::linalg_pinv.set_kernel(DeviceKind::CPU, pinv_kernel);
  ops::linalg_matrix_rank.set_kernel(DeviceKind::CPU, matrix_rank_kernel);
}

}  // namespace kiln::cpu
