// Shared front-end helpers for kiln.linalg: dtype and shape checks, batch
// broadcasting, non-finite input checks, and kiln's messages for LAPACK's info
// codes. The batch and column-major layout helpers, which the kernels use too,
// are in core/linalg_layout.h.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/linalg_layout.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/linalg.h"
#include "kiln/tensor.h"

namespace kiln::linalg::detail {

// Throws TypeError unless A is float32/float64/complex64/complex128.
void check_dtype(const Tensor& A, const char* op);
// Throws ValueError unless A has >= 2 dims (and is square when `square`).
void check_matrix(const Tensor& A, const char* op, bool square);
// Throws TypeError unless a and b share a dtype.
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);

// Broadcast of two batch shapes (torch rules); ValueError when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// What a positive LAPACK info means, by the routine that reported it.
enum class InfoKind {
  LU,        // getrf: U[k-1, k-1] is exactly zero (inv, solve)
  LUFactor,  // getrf for lu_factor (the message points at lu_factor_ex)
  Cholesky,  // potrf: the leading minor of order k is not positive-definite
  Converge,  // gesdd/gesvd, syevd/heevd, gelsd/gelss: no convergence
  FullRank,  // gels: R[k-1, k-1] is exactly zero
  LDL,       // sytrf/hetrf: D[k-1, k-1] is exactly zero
};
// Raises kiln::Error "[op] ..." for the first matrix whose info is nonzero.
// info: int32, the batch shape (0-dim: one matrix, no batch element named).
// A: the input, named by dtype and shape. info < 0 (LAPACK rejected an
// argument) is an internal error, -1010 LAPACKE's out-of-memory report.
// nonfinite (Cholesky, may be null): per matrix, nonzero when its info is the
// order of a leading minor holding a NaN or inf rather than potrf's report.
void check_infos(const Tensor& info, const char* op, InfoKind kind, const Tensor& A,
                 const uint8_t* nonfinite = nullptr);

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
