// Shared front-end helpers for kiln.linalg: dtype and shape checks, batch
// broadcasting, column-major working copies for LAPACK, non-finite input
// checks, and kiln's messages for LAPACK's info codes.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/linalg.h"
#include "kiln/tensor.h"

namespace kiln::linalg::detail {

inline constexpr DTypeSet kLinalgSet =
    bit(DType::Float32) | bit(DType::Float64) | bit(DType::Complex64) | bit(DType::Complex128);

// Throws TypeError unless A is float32/float64/complex64/complex128.
void check_dtype(const Tensor& A, const char* op);
// Throws ValueError unless A has >= 2 dims (and is square when `square`).
void check_matrix(const Tensor& A, const char* op, bool square);
// Throws TypeError unless a and b share a dtype.
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);

// A's batch dims (all but the last two).
Shape batch_shape(const Tensor& A);
// Broadcast of two batch shapes (torch rules); ValueError when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// `batch` + {rows, cols}.
Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols);
int64_t numel_of(const Shape& s);

// A fresh contiguous tensor of shape batch + {n, m} holding A^T row-major, i.e.
// every matrix of A (batch + {m, n}) column-major with leading dim m. A is
// broadcast to `batch` first (empty `batch`: A's own).
Tensor colmajor_copy(const Tensor& A, const Shape& batch = {});
// The m x n view of a column-major buffer from colmajor_copy (or laid out so).
inline Tensor colmajor_view(const Tensor& buf) { return buf.transpose(-2, -1); }
// An uninitialized column-major batch of m x n matrices: the returned buffer
// has shape batch + {n, m}; colmajor_view(buf) is the matrix view.
Tensor colmajor_empty(const Shape& batch, int64_t m, int64_t n, DType dtype, Device device);

// What a positive LAPACK info means, by the routine that reported it.
enum class InfoKind {
  LU,        // getrf: U[k-1, k-1] is exactly zero (inv, solve)
  LUFactor,  // getrf for lu_factor (the message points at lu_factor_ex)
  Cholesky,  // potrf: the leading minor of order k is not positive-definite
  Converge,  // gesdd/gesvd, syevd/heevd, gelsd/gelss: no convergence
  FullRank,  // gels: R[k-1, k-1] is exactly zero
};
// Raises kiln::Error "[op] ..." for the first matrix whose info is nonzero.
// info: int32, the batch shape (0-dim: one matrix, no batch element named).
// A: the input, named by dtype and shape. info < 0 (LAPACK rejected an
// argument) is an internal error, -1010 LAPACKE's out-of-memory report.
// nonfinite (Cholesky, may be null): per matrix, nonzero when its info is the
// order of a leading minor holding a NaN or inf rather than potrf's report.
void check_infos(const Tensor& info, const char* op, InfoKind kind, const Tensor& A,
                 const uint8_t* nonfinite = nullptr);

// ---- NaN input ----

// n NaNs at p (complex: NaN + NaN i): the LU/QR family's result for a matrix
// holding a NaN (see linalg.h).
template <typename T>
void fill_nan(T* p, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    std::fill(p, p + n, std::numeric_limits<T>::quiet_NaN());
  } else {
    using R = typename T::value_type;
    std::fill(p, p + n, T(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN()));
  }
}

// True when any of the n values at p is NaN (complex: either part).
bool any_nan(const float* p, int64_t n);
bool any_nan(const double* p, int64_t n);
template <typename T>
bool any_nan(const std::complex<T>* p, int64_t n) {
  return any_nan(reinterpret_cast<const T*>(p), 2 * n);
}

// ---- non-finite input ----
// The iterative routines (SVD, eigensolvers, least squares) must not see a
// NaN or inf: LAPACKE refuses NaN with a negative info, and an inf makes
// LAPACK's scaling call xerbla (which prints to stdout) or loop forever.

// True when any of the n values at p is NaN or +-inf. Branch-free (vectorizes).
bool any_nonfinite(const float* p, int64_t n);
bool any_nonfinite(const double* p, int64_t n);
template <typename T>
bool any_nonfinite(const std::complex<T>* p, int64_t n) {
  return any_nonfinite(reinterpret_cast<const T*>(p), 2 * n);
}

// The order (1-based) of the smallest leading minor of the n x n column-major
// matrix `a` whose `uplo` triangle ('L' or 'U', the part LAPACK's Hermitian
// routines read; complex: not the imaginary part of the diagonal) holds a NaN
// or inf; 0 when that triangle is finite.
template <typename T>
int64_t nonfinite_minor(const T* a, int64_t n, char uplo);

// Zeroes the imaginary part of the diagonal of a complex n x n matrix (a
// no-op for real T). LAPACK's Hermitian routines ignore it, but LAPACKE's
// NaN scan does not: a NaN there would be refused although never read.
template <typename T>
void real_diagonal(T* a, int64_t n) {
  if constexpr (!std::is_floating_point_v<T>)
    for (int64_t j = 0; j < n; ++j) a[j * n + j] = T(a[j * n + j].real(), 0);
}

// Raises "[op] <what> contains non-finite values (NaN or inf)[ in batch element
// b] (<dtype> <shape>)" for the first of the `count` matrices of `buf` (a
// contiguous batch, e.g. from colmajor_copy) holding one. shown: the tensor
// named in the message; batched: whether to name the batch element.
void check_finite(const Tensor& buf, int64_t count, const char* op, const char* what, const Tensor& shown,
                  bool batched);
// The same for Hermitian input, of which only the `uplo` triangle is read
// (see nonfinite_minor). buf: a contiguous batch of n x n column-major matrices.
void check_finite_hermitian(const Tensor& buf, int64_t n, char uplo, const char* op, const Tensor& shown);

// The epsilon of A's real dtype.
double eps_of(DType d);

// svd, svdvals and eigh/eigvalsh with `op` naming, in their messages, the
// public op that called them (pinv, matrix_rank, matrix_norm).
SVD svd_for(const Tensor& A, bool full_matrices, const char* op);
Tensor svdvals_for(const Tensor& A, const char* op);
Eigh eigh_for(const Tensor& A, const std::string& UPLO, bool vectors, const char* op);

}  // namespace kiln::linalg::detail
