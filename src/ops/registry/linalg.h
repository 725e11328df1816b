// kiln.linalg ops (include/kiln/linalg.h). The front-ends (src/linalg) have
// checked dtypes (float32/float64/complex64/complex128, one dtype for all
// inputs) and shapes, and broadcast the batch dims to `batch`. A kernel picks
// its algorithm (a batched small-matrix kernel or LAPACK) and with it the
// layout of its results: row-major, or a column-major view (transpose of a
// contiguous buffer) as LAPACK writes them.
#pragma once

#include "kiln/linalg.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// A: [*, n, n]. Returns the inverses ([*, n, n]) and LAPACK getrf's info
// (int32 [*]); a matrix holding a NaN gets an all-NaN inverse and info 0.
using LinalgInv = linalg::InvEx(const Tensor& A);

// A X = B. A: batch-broadcastable to batch + [n, n]; B to batch + [n, m].
// Returns X (batch + [n, m]) and getrf's info (int32, batch); a matrix A
// holding a NaN gets an all-NaN solution and info 0.
using LinalgSolve = linalg::SolveEx(const Tensor& A, const Tensor& B, const Shape& batch);

// A X = B with A upper (else lower) triangular, unit: diagonal taken as ones.
// A: batch-broadcastable to batch + [n, n]; B to batch + [n, m]. Returns X,
// batch + [n, m].
using LinalgSolveTriangular = Tensor(const Tensor& A, const Tensor& B, const Shape& batch, bool upper,
                                     bool unit);

// A: [*, n, n]; out: [*] A's dtype. The determinant (NaN for a matrix holding
// a NaN).
using LinalgDet = void(const Tensor& A, const Tensor& out);
// A: [*, n, n]; sign: [*] A's dtype; logabsdet: [*] A's real dtype.
using LinalgSlogdet = void(const Tensor& A, const Tensor& sign, const Tensor& logabsdet);

// A: [*, m, n]. Returns the LU factors (a column-major view, [*, m, n]), the
// 1-based pivots (int32 [*, min(m, n)]) and getrf's info (int32 [*]); a
// matrix holding a NaN gets all-NaN factors, pivots 1..k and info 0.
using LinalgLuFactor = linalg::LUFactorEx(const Tensor& A);
// A: [*, m, n]; P [*, m, m], L [*, m, k], U [*, k, n] (k = min(m, n)) in A's
// dtype, zero-filled by the front-end.
using LinalgLu = void(const Tensor& A, const Tensor& P, const Tensor& L, const Tensor& U);
// LU: broadcastable to batch + [n, n]; pivots (int32, each in [1, n]) to
// batch + [n]; B: the left-form right-hand sides (B, or B^T when !left),
// broadcastable to batch + [n, m]. Solves op(A) X = B (left) or X op(A) = B
// (op: adjoint or not); returns X (left) or X^T (right), batch + [n, m].
using LinalgLuSolve = Tensor(const Tensor& LU, const Tensor& pivots, const Tensor& B, const Shape& batch,
                             bool left, bool adjoint);

// A: [*, n, n] (the `upper` triangle read). Returns the factor (a column-major
// view, the other triangle zero); info: int32 [*] and nonfinite: uint8 [*],
// zero-filled: potrf's info per matrix, and 1 where that info is the order of
// a leading minor holding a NaN or inf (potrf not called).
using LinalgCholesky = Tensor(const Tensor& A, bool upper, const Tensor& info, const Tensor& nonfinite);
// buf: [*, n, n] contiguous, each matrix column-major and finite in the
// `upper` triangle (the one read); overwritten by the eigenvectors (eigh).
// w: [*, n] real, the eigenvalues (ascending); info: int32 [*], zero-filled.
using LinalgEigh = void(const Tensor& buf, bool upper, const Tensor& w, const Tensor& info);

// A: [*, m, n]; R: [*, r, n] (r = min(m, n), or m in complete mode),
// zero-filled; qbuf: undefined (mode "r") or, zero-filled, the column-major
// buffer of Q (shape [*, q, m], Q = its transpose [*, m, q], q = r).
using LinalgQr = void(const Tensor& A, const Tensor& R, const Tensor& qbuf);
// A: [*, m, n] (m >= n), tau: [*, k] (k <= n), batch-broadcastable to batch.
// Returns the first n columns of H_1 ... H_k, a column-major view, batch +
// [m, n]; all-NaN where tau or the Householder vectors hold a NaN.
using LinalgHouseholderProduct = Tensor(const Tensor& A, const Tensor& tau, const Shape& batch);

// a: [*, n, m] contiguous, each m x n matrix column-major and finite, k =
// min(m, n) > 0. S: [*, k] real; ub: [*, u, m] and vb: [*, n, v] the
// column-major buffers of U [*, m, u] and Vh [*, v, n] (u = m, v = n when
// full_matrices, else k); info: int32 [*], zero-filled: gesdd/gesvd's.
using LinalgSvd = void(const Tensor& a, bool full_matrices, const Tensor& S, const Tensor& ub,
                       const Tensor& vb, const Tensor& info);
// The same, singular values only.
using LinalgSvdvals = void(const Tensor& a, const Tensor& S, const Tensor& info);

// From A = U diag(S) Vh (Hermitian: Q diag(w) Q^H): ub [*, k, m] holds U
// column-major; vb [*, k, n] Vh column-major, or [*, n, n] Q when
// hermitian; S: [*, k] real (k = min(m, n) > 0). Writes pinv(A), singular
// values <= max(atol, rtol * s_max) dropped, into out [*, m, n], contiguous:
// the column-major buffer of the [*, n, m] result.
using LinalgPinv = void(const Tensor& ub, const Tensor& vb, const Tensor& S, double atol, double rtol,
                        bool hermitian, const Tensor& out);
// S: [*, k] real contiguous (singular values or eigenvalues); out: [*] int64,
// the count of |S| > max(atol, rtol * max|S|).
using LinalgMatrixRank = void(const Tensor& S, double atol, double rtol, const Tensor& out);

// lstsq's LAPACK driver (the CPU's; another backend maps it to its own).
enum class LstsqDriver { Gels, Gelsy, Gelsd, Gelss };
// a: [*, n, m], b: [*, r, m] (contiguous batches of the column-major m x n
// A and m x r B, finite); x: [*, r, l] zero-filled, l = max(m, n, 1), the
// column-major buffer of the solution (its first n rows); rank: int64 [*]
// zero-filled (empty for gels); sv: [*, min(m, n)] real zero-filled (gelsd,
// gelss; else empty); info: int32 [*] zero-filled. Returns the squared
// residuals [*, r] (real) when m > n and every matrix has full rank (not for
// gelsy), else an empty tensor.
using LinalgLstsq = Tensor(const Tensor& a, const Tensor& b, LstsqDriver driver, double rcond,
                           const Tensor& x, const Tensor& rank, const Tensor& sv, const Tensor& info);

// A: [*, n, n]; w: [*, n] complex (complex64 for float32 / complex64 A),
// info: int32 [*], zero-filled: geev's (> 0: the QR iteration failed). A
// matrix holding a NaN or inf gets all-NaN eigenvalues and info 0.
using LinalgEigvals = void(const Tensor& A, const Tensor& w, const Tensor& info);
// A: [*, n, n] (the lower triangle read). Bunch-Kaufman: sytrf, or hetrf when
// hermitian (complex A). Returns LD (a column-major view, [*, n, n], the upper
// triangle zero) and writes pivots (int32 [*, n], LAPACK's 1-based form) and
// info (int32 [*]: k > 0 when D(k, k) is exactly zero).
using LinalgLdlFactor = Tensor(const Tensor& A, bool hermitian, const Tensor& pivots, const Tensor& info);
// A: [*, m, n]. Returns geqrf's raw output: the Householder vectors below the
// diagonal and R on and above it (a column-major view, [*, m, n]), and writes
// tau ([*, min(m, n)], A's dtype). A matrix holding a NaN gets all NaN.
using LinalgGeqrf = Tensor(const Tensor& A, const Tensor& tau);

#define KILN_OPS_LINALG(X)                                \
  X(linalg_inv, LinalgInv)                                \
  X(linalg_solve, LinalgSolve)                            \
  X(linalg_solve_triangular, LinalgSolveTriangular)       \
  X(linalg_det, LinalgDet)                                \
  X(linalg_slogdet, LinalgSlogdet)                        \
  X(linalg_lu_factor, LinalgLuFactor)                     \
  X(linalg_lu, LinalgLu)                                  \
  X(linalg_lu_solve, LinalgLuSolve)                       \
  X(linalg_cholesky, LinalgCholesky)                      \
  X(linalg_eigh, LinalgEigh)                              \
  X(linalg_eigvalsh, LinalgEigh)                          \
  X(linalg_qr, LinalgQr)                                  \
  X(linalg_householder_product, LinalgHouseholderProduct) \
  X(linalg_svd, LinalgSvd)                                \
  X(linalg_svdvals, LinalgSvdvals)                        \
  X(linalg_pinv, LinalgPinv)                              \
  X(linalg_matrix_rank, LinalgMatrixRank)                 \
  X(linalg_lstsq, LinalgLstsq)                            \
  X(linalg_eigvals, LinalgEigvals)                        \
  X(linalg_ldl_factor, LinalgLdlFactor)                   \
  X(linalg_geqrf, LinalgGeqrf)

}  // namespace kiln::ops
