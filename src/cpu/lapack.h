// Type-generic wrappers over LAPACKE/CBLAS (OpenBLAS): one C++ name per LAPACK
// routine, picking s/d/c/z from T. Every matrix is column-major with leading
// dimension `ld`. Return value: LAPACK's info (< 0 bad argument, > 0 the
// routine's failure report, -1010 LAPACKE could not allocate its workspace).
//
// LAPACKE's high-level entry points scan their inputs for NaN and, finding
// one, return -k without computing anything (leaving factors and pivots
// unwritten). The LU and QR routines, which kiln runs on non-finite input
// (NaN propagates into the result, as torch and NumPy), therefore go through
// the LAPACKE_*_work entry points, which call LAPACK directly. The iterative
// routines (SVD, eigensolvers, least squares, Cholesky) keep the high-level
// ones: kiln checks their input is finite before calling them.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

// LAPACKE first, with std::complex as its complex types (OpenBLAS's cblas.h
// would otherwise settle them as C99 _Complex).
#define LAPACK_COMPLEX_CPP
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

namespace kiln::cpu::lapack {

using lint = lapack_int;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <typename T>
struct real_of {
  using type = T;
};
template <typename R>
struct real_of<std::complex<R>> {
  using type = R;
};
template <typename T>
using real_t = typename real_of<T>::type;
template <typename T>
inline constexpr bool is_cplx = !std::is_same_v<T, real_t<T>>;

constexpr int CM = LAPACK_COL_MAJOR;

#define KILN_LAPACK_PICK(T, name, ...)          \
  if constexpr (std::is_same_v<T, float>)       \
    return LAPACKE_s##name(__VA_ARGS__);        \
  else if constexpr (std::is_same_v<T, double>) \
    return LAPACKE_d##name(__VA_ARGS__);        \
  else if constexpr (std::is_same_v<T, c64>)    \
    return LAPACKE_c##name(__VA_ARGS__);        \
  else                                          \
    return LAPACKE_z##name(__VA_ARGS__)

// A LAPACKE_*_work routine with a workspace: call(work, lwork) once as a
// workspace query (lwork = -1), then with the workspace it asked for.
template <typename T, typename F>
lint with_workspace(F&& call) {
  T query{};
  const lint info = call(&query, lint(-1));
  if (info != 0) return info;
  std::vector<T> work(std::max<lint>(1, lint(std::real(query))));
  return call(work.data(), lint(work.size()));
}

template <typename T>
lint getrf(lint m, lint n, T* a, lint ld, lint* ipiv) {
  KILN_LAPACK_PICK(T, getrf_work, CM, m, n, a, ld, ipiv);
}
template <typename T>
lint getri(lint n, T* a, lint ld, const lint* ipiv) {
  return with_workspace<T>(
      [&](T* w, lint lw) -> lint { KILN_LAPACK_PICK(T, getri_work, CM, n, a, ld, ipiv, w, lw); });
}
template <typename T>
lint getrs(char trans, lint n, lint nrhs, const T* a, lint lda, const lint* ipiv, T* b, lint ldb) {
  KILN_LAPACK_PICK(T, getrs_work, CM, trans, n, nrhs, a, lda, ipiv, b, ldb);
}
template <typename T>
lint geqrf(lint m, lint n, T* a, lint ld, T* tau) {
  return with_workspace<T>(
      [&](T* w, lint lw) -> lint { KILN_LAPACK_PICK(T, geqrf_work, CM, m, n, a, ld, tau, w, lw); });
}
// orgqr for real, ungqr for complex.
template <typename T>
lint orgqr(lint m, lint n, lint k, T* a, lint ld, const T* tau) {
  return with_workspace<T>([&](T* w, lint lw) -> lint {
    if constexpr (std::is_same_v<T, float>)
      return LAPACKE_sorgqr_work(CM, m, n, k, a, ld, tau, w, lw);
    else if constexpr (std::is_same_v<T, double>)
      return LAPACKE_dorgqr_work(CM, m, n, k, a, ld, tau, w, lw);
    else if constexpr (std::is_same_v<T, c64>)
      return LAPACKE_cungqr_work(CM, m, n, k, a, ld, tau, w, lw);
    else
      return LAPACKE_zungqr_work(CM, m, n, k, a, ld, tau, w, lw);
  });
}
template <typename T>
lint gesdd(char jobz, lint m, lint n, T* a, lint lda, real_t<T>* s, T* u, lint ldu, T* vt, lint ldvt) {
  KILN_LAPACK_PICK(T, gesdd, CM, jobz, m, n, a, lda, s, u, ldu, vt, ldvt);
}
template <typename T>
lint gesvd(char jobu, char jobvt, lint m, lint n, T* a, lint lda, real_t<T>* s, T* u, lint ldu, T* vt,
           lint ldvt, real_t<T>* superb) {
  KILN_LAPACK_PICK(T, gesvd, CM, jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, superb);
}
template <typename T>
lint potrf(char uplo, lint n, T* a, lint ld) {
  KILN_LAPACK_PICK(T, potrf, CM, uplo, n, a, ld);
}
// syevd for real, heevd for complex.
template <typename T>
lint syevd(char jobz, char uplo, lint n, T* a, lint ld, real_t<T>* w) {
  if constexpr (std::is_same_v<T, float>)
    return LAPACKE_ssyevd(CM, jobz, uplo, n, a, ld, w);
  else if constexpr (std::is_same_v<T, double>)
    return LAPACKE_dsyevd(CM, jobz, uplo, n, a, ld, w);
  else if constexpr (std::is_same_v<T, c64>)
    return LAPACKE_cheevd(CM, jobz, uplo, n, a, ld, w);
  else
    return LAPACKE_zheevd(CM, jobz, uplo, n, a, ld, w);
}
// Eigenvalues of a general matrix (no vectors): w gets them as complex
// numbers. a: finite (the high-level entry point refuses NaN).
template <typename T>
lint geev_values(lint n, T* a, lint ld, std::complex<real_t<T>>* w) {
  if constexpr (is_cplx<T>) {
    KILN_LAPACK_PICK(T, geev, CM, 'N', 'N', n, a, ld, w, nullptr, 1, nullptr, 1);
  } else {
    std::vector<T> wr(size_t(std::max<lint>(n, 1))), wi(size_t(std::max<lint>(n, 1)));
    lint info;
    if constexpr (std::is_same_v<T, float>)
      info = LAPACKE_sgeev(CM, 'N', 'N', n, a, ld, wr.data(), wi.data(), nullptr, 1, nullptr, 1);
    else
      info = LAPACKE_dgeev(CM, 'N', 'N', n, a, ld, wr.data(), wi.data(), nullptr, 1, nullptr, 1);
    for (lint i = 0; i < n; ++i) w[i] = {wr[size_t(i)], wi[size_t(i)]};
    return info;
  }
}
// Bunch-Kaufman LDL^T (sytrf) or, hermitian and complex, LDL^H (hetrf).
template <typename T>
lint sytrf(bool hermitian, char uplo, lint n, T* a, lint ld, lint* ipiv) {
  return with_workspace<T>([&](T* w, lint lw) -> lint {
    if constexpr (std::is_same_v<T, c64>) {
      if (hermitian) return LAPACKE_chetrf_work(CM, uplo, n, a, ld, ipiv, w, lw);
    } else if constexpr (std::is_same_v<T, c128>) {
      if (hermitian) return LAPACKE_zhetrf_work(CM, uplo, n, a, ld, ipiv, w, lw);
    }
    KILN_LAPACK_PICK(T, sytrf_work, CM, uplo, n, a, ld, ipiv, w, lw);
  });
}
template <typename T>
lint gels(char trans, lint m, lint n, lint nrhs, T* a, lint lda, T* b, lint ldb) {
  KILN_LAPACK_PICK(T, gels, CM, trans, m, n, nrhs, a, lda, b, ldb);
}
template <typename T>
lint gelsy(lint m, lint n, lint nrhs, T* a, lint lda, T* b, lint ldb, lint* jpvt, real_t<T> rcond,
           lint* rank) {
  KILN_LAPACK_PICK(T, gelsy, CM, m, n, nrhs, a, lda, b, ldb, jpvt, rcond, rank);
}
template <typename T>
lint gelsd(lint m, lint n, lint nrhs, T* a, lint lda, T* b, lint ldb, real_t<T>* s, real_t<T> rcond,
           lint* rank) {
  KILN_LAPACK_PICK(T, gelsd, CM, m, n, nrhs, a, lda, b, ldb, s, rcond, rank);
}
template <typename T>
lint gelss(lint m, lint n, lint nrhs, T* a, lint lda, T* b, lint ldb, real_t<T>* s, real_t<T> rcond,
           lint* rank) {
  KILN_LAPACK_PICK(T, gelss, CM, m, n, nrhs, a, lda, b, ldb, s, rcond, rank);
}
#undef KILN_LAPACK_PICK

// C = alpha op(A) op(B) + beta C, column-major. op: 'N', 'T' or 'C'.
template <typename T>
void gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  auto op = [](char t) { return t == 'N' ? CblasNoTrans : t == 'T' ? CblasTrans : CblasConjTrans; };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasColMajor, op(ta), op(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else if constexpr (std::is_same_v<T, c64>)
    cblas_cgemm(CblasColMajor, op(ta), op(tb), m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  else
    cblas_zgemm(CblasColMajor, op(ta), op(tb), m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

// Triangular solve with many right-hand sides, column-major: side 'L' solves
// op(A) X = alpha B, 'R' solves X op(A) = alpha B; B is overwritten by X.
template <typename T>
void trsm(char side, char uplo, char trans, char diag, int64_t m, int64_t n, T alpha, const T* a, int64_t lda,
          T* b, int64_t ldb) {
  const auto s = side == 'L' ? CblasLeft : CblasRight;
  const auto u = uplo == 'U' ? CblasUpper : CblasLower;
  const auto t = trans == 'N' ? CblasNoTrans : trans == 'T' ? CblasTrans : CblasConjTrans;
  const auto d = diag == 'U' ? CblasUnit : CblasNonUnit;
  if constexpr (std::is_same_v<T, float>)
    cblas_strsm(CblasColMajor, s, u, t, d, m, n, alpha, a, lda, b, ldb);
  else if constexpr (std::is_same_v<T, double>)
    cblas_dtrsm(CblasColMajor, s, u, t, d, m, n, alpha, a, lda, b, ldb);
  else if constexpr (std::is_same_v<T, c64>)
    cblas_ctrsm(CblasColMajor, s, u, t, d, m, n, &alpha, a, lda, b, ldb);
  else
    cblas_ztrsm(CblasColMajor, s, u, t, d, m, n, &alpha, a, lda, b, ldb);
}

}  // namespace kiln::cpu::lapack
