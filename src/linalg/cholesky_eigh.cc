// linalg.cholesky / cholesky_ex (LAPACK potrf) and eigh / eigvalsh (syevd /
// heevd, divide and conquer). Only the named triangle of A is read.
//
// Non-finite input: cholesky reports a matrix whose triangle holds a NaN or
// inf as not positive-definite, with info = the order of the smallest leading
// minor holding one (potrf is not called on it); eigh / eigvalsh raise.
#include <vector>

#include "kiln/linalg.h"
#include "linalg/common.h"
#include "linalg/lapack.h"

namespace kiln::linalg {
using namespace detail;

CholeskyEx cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  const char* op = "linalg.cholesky";
  check_dtype(A, op);
  check_matrix(A, op, true);
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  const char uplo = upper ? 'U' : 'L';
  Tensor buf = colmajor_copy(A);
  Tensor info = zeros(batch, DType::Int32);
  std::vector<uint8_t> nonfinite(count, 0);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    T* ap = buf.data<T>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      T* a = ap + b * n * n;
      if (const int64_t k = nonfinite_minor(a, n, uplo); k > 0) {
        ip[b] = int32_t(k);
        nonfinite[b] = 1;
      } else if (n > 0) {
        real_diagonal(a, n);
        ip[b] = lapack::potrf<T>(uplo, n, a, n);
      }
      for (int64_t j = 0; j < n; ++j)  // zero the other triangle
        for (int64_t i = 0; i < n; ++i)
          if (upper ? i > j : i < j) a[j * n + i] = T(0);
    });
  });
  if (check_errors) check_infos(info, op, InfoKind::Cholesky, A, nonfinite.data());
  return {colmajor_view(buf), info};
}

Tensor cholesky(const Tensor& A, bool upper) { return cholesky_ex(A, upper, true).L; }

namespace detail {

Eigh eigh_for(const Tensor& A, const std::string& UPLO, bool vectors, const char* op) {
  check_dtype(A, op);
  check_matrix(A, op, true);
  KILN_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u", ValueError,
             "[" << op << "] Expected UPLO argument to be 'L' or 'U', but got " << UPLO);
  const char uplo = (UPLO == "U" || UPLO == "u") ? 'U' : 'L';
  const Shape batch = batch_shape(A);
  const int64_t n = A.size(-1), count = numel_of(batch);
  Tensor buf = colmajor_copy(A);
  check_finite_hermitian(buf, n, uplo, op, A);
  Shape wb = batch;
  wb.push_back(n);
  Tensor w = empty(wb, to_real(A.dtype()));
  Tensor info = zeros(batch, DType::Int32);
  dispatch<kLinalgSet>(A.dtype(), op, [&]<typename T>() {
    using R = lapack::real_t<T>;
    T* ap = buf.data<T>();
    R* wp = w.data<R>();
    int32_t* ip = info.data<int32_t>();
    for_each_matrix(count, n, [&](int64_t b) {
      T* a = ap + b * n * n;
      real_diagonal(a, n);
      if (n > 0) ip[b] = lapack::syevd<T>(vectors ? 'V' : 'N', uplo, n, a, n, wp + b * n);
    });
  });
  check_infos(info, op, InfoKind::Converge, A);
  return {w, vectors ? colmajor_view(buf) : Tensor()};
}

}  // namespace detail

Eigh eigh(const Tensor& A, const std::string& UPLO) { return eigh_for(A, UPLO, true, "linalg.eigh"); }
Tensor eigvalsh(const Tensor& A, const std::string& UPLO) {
  return eigh_for(A, UPLO, false, "linalg.eigvalsh").eigenvalues;
}

}  // namespace kiln::linalg
