// linalg.svd / svdvals through LAPACK gesdd (divide and conquer), falling back
// to gesvd (QR iteration) for a matrix on which gesdd fails or whose gesdd
// workspace would not fit LAPACK's 32-bit integers. LAPACK scales matrices
// whose norm is near underflow or overflow, so singular values around 1e-30
// and 1e30 come out right in float32 too.
//
// Non-finite input raises (as torch): LAPACKE refuses a NaN, and an inf sends
// gesdd's scaling into xerbla (printing) or its iteration into an endless loop.
#include <cstring>
#include <vector>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

namespace {

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

void fill_eye(Tensor& t) {
  t.fill_(0);
  const int64_t r = t.size(-2), c = t.size(-1);
  for (int64_t i = 0; i < std::min(r, c); ++i) t.select(-1, i).select(-1, i).fill_(1);
}

}  // namespace

namespace detail {

SVD svd_for(const Tensor& A, bool full_matrices, const char* op) {
  check_dtype(A, op);
  check_matrix(A, op, false);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  const Tensor a = colmajor_copy(A);
  check_finite(a, count, op, "the input", A, A.dim() > 2);
  Shape sb = batch;
  sb.push_back(k);
  Tensor S = empty(sb, to_real(A.dtype()));
  Tensor ub = colmajor_empty(batch, m, ucols, A.dtype());
  Tensor vb = colmajor_empty(batch, vrows, n, A.dtype());
  Tensor info = zeros(batch, DType::Int32);
  if (k == 0) {
    Tensor U = colmajor_view(ub), Vh = colmajor_view(vb);
    fill_eye(U);
    fill_eye(Vh);
    return {U, S, Vh};
  }
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
  check_infos(info, op, InfoKind::Converge, A);
  return {colmajor_view(ub), S, colmajor_view(vb)};
}

Tensor svdvals_for(const Tensor& A, const char* op) {
  check_dtype(A, op);
  check_matrix(A, op, false);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const Tensor a = colmajor_copy(A);
  check_finite(a, count, op, "the input", A, A.dim() > 2);
  Shape sb = batch;
  sb.push_back(k);
  Tensor S = empty(sb, to_real(A.dtype()));
  Tensor info = zeros(batch, DType::Int32);
  if (k == 0) return S;
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    const T* ap = a.data<T>();
    R* sp = S.data<R>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, std::max(m, n), [&](int64_t b) {
      ip[b] = svd_one<T>('N', m, n, ap + b * m * n, sp + b * k, nullptr, nullptr, 1);
    });
  });
  check_infos(info, op, InfoKind::Converge, A);
  return S;
}

}  // namespace detail

SVD svd(const Tensor& A, bool full_matrices) { return svd_for(A, full_matrices, "linalg.svd"); }
Tensor svdvals(const Tensor& A) { return svdvals_for(A, "linalg.svdvals"); }

namespace {

// torch's tolerance rule: rtol defaults to eps * max(m, n) unless atol is
// given and positive (then 0).
double default_rtol(DType d, int64_t m, int64_t n, std::optional<double> atol, std::optional<double> rtol) {
  if (rtol) return *rtol;
  if (atol && *atol > 0) return 0.0;
  return eps_of(d) * double(std::max(m, n));
}

}  // namespace

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  const char* op = "linalg.pinv";
  check_dtype(A, op);
  check_matrix(A, op, hermitian);
  const Shape batch = batch_shape(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  const double rt = default_rtol(A.dtype(), m, n, atol, rtol), at = atol.value_or(0.0);
  Tensor out = colmajor_empty(batch, n, m, A.dtype());  // n x m, column-major
  if (count == 0 || m == 0 || n == 0) {
    out.fill_(0);
    return colmajor_view(out);
  }
  // A = U diag(s) Vh (Hermitian: A = Q diag(w) Q^H, s = |w|, U = Q sign(w)).
  Tensor U, S, Vh;
  if (hermitian) {
    Eigh e = eigh_for(A, "L", true, op);
    U = e.eigenvectors;
    S = e.eigenvalues;
    Vh = e.eigenvectors;  // used as V (= Q) below
  } else {
    SVD s = svd_for(A, false, op);
    U = s.U, S = s.S, Vh = s.Vh;
  }
  const Tensor ub = U.transpose(-2, -1).contiguous();   // column-major m x k
  const Tensor vb = Vh.transpose(-2, -1).contiguous();  // column-major: Vh (k x n, ld k) or Q (n x n, ld n)
  const Tensor sc = S.contiguous();
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
  return colmajor_view(out);
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  const char* op = "linalg.matrix_rank";
  check_dtype(A, op);
  check_matrix(A, op, hermitian);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  const Tensor S = (hermitian ? eigh_for(A, "L", false, op).eigenvalues : svdvals_for(A, op)).contiguous();
  const double rt = default_rtol(A.dtype(), m, n, atol, rtol), at = atol.value_or(0.0);
  const Shape batch = batch_shape(A);
  Tensor out = empty(batch, DType::Int64);
  const int64_t count = numel_of(batch);
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
  return out;
}

}  // namespace kiln::linalg
