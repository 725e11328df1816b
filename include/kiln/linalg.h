// kiln::linalg — torch.linalg with PyTorch names and semantics.
//
// Inputs are float32, float64, complex64 or complex128 (anything else throws
// TypeError "[linalg.<op>] ..."); matrices are the last two dims and every
// leading dim is a batch dim. Ops taking two matrices broadcast their batch
// dims. Results of LAPACK-backed ops may be column-major views (as torch's).
//
// Singular or failed inputs: the *_ex variants return LAPACK's `info` (int32,
// one per matrix, 0 = success) and raise only when check_errors is true; the
// plain variants raise kiln::Error (Python RuntimeError) "[linalg.<op>] ...",
// naming the batch element, the input's dtype and shape, and what info means
// (e.g. "[linalg.inv] the matrix is singular: U[2, 2] of its LU factorization
// is zero (info 3; input float32 [4, 4])").
//
// Non-finite input (NaN, +-inf), as torch where torch is defined:
// - svd, svdvals, pinv, matrix_rank, matrix_norm / norm with ord 2, -2 or
//   "nuc", eigh, eigvalsh and lstsq (every driver; A or B) raise kiln::Error
//   "[linalg.<op>] the input contains non-finite values (NaN or inf) in batch
//   element k (<dtype> <shape>)" (eigh: only the UPLO triangle is checked).
//   Nothing is printed: LAPACK never sees such a matrix.
// - cholesky / cholesky_ex: a NaN or inf in the read triangle makes the matrix
//   not positive-definite; info = the order of the smallest leading minor
//   holding one.
// - inv, solve, det, slogdet, lu_factor, lu, qr, householder_product: a
//   matrix holding a NaN gives all-NaN results (inverse, solution, det,
//   slogdet's sign and logabsdet, LU with pivots 1..k, Q and R) and info 0,
//   on every path. An inf, and NaN or inf in solve's B, go through the
//   arithmetic as in torch and NumPy (inv([[inf]]) is [[0]]; a zero pivot
//   still reports the matrix singular). solve_triangular and lu_solve compute
//   with whatever they are given.
//
// Small matrices (n <= 16, float32/float64) go through kiln's own batched
// kernel, vectorized across the batch; large ones through LAPACKE/OpenBLAS.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::linalg {

// ---- inverses and general solves ----
struct InvEx {
  Tensor inverse;
  Tensor info;  // int32, batch shape
};
Tensor inv(const Tensor& A);
InvEx inv_ex(const Tensor& A, bool check_errors = false);

struct SolveEx {
  Tensor result;
  Tensor info;
};
// Solves A X = B (left) or X A = B (right). B is a batch of vectors when it is
// 1-D or has A's shape without the last dim (torch's rule); else of matrices.
Tensor solve(const Tensor& A, const Tensor& B, bool left = true);
SolveEx solve_ex(const Tensor& A, const Tensor& B, bool left = true, bool check_errors = false);

// ---- triangular solves ----
// A X = B (left) or X A = B (right) with A upper/lower triangular (the other
// triangle is not read); unitriangular: the diagonal is taken as ones.
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true,
                        bool unitriangular = false);

// ---- LU ----
struct LUFactor {
  Tensor LU;
  Tensor pivots;  // int32, 1-based as LAPACK
};
struct LUFactorEx {
  Tensor LU;
  Tensor pivots;
  Tensor info;
};
struct PLU {
  Tensor P, L, U;
};
// Partial pivoting picks, per column, the first entry of largest |re| + |im|
// (LAPACK's i?amax), so pivots and factors equal LAPACK's / SciPy's.
LUFactor lu_factor(const Tensor& A, bool pivot = true);
LUFactorEx lu_factor_ex(const Tensor& A, bool pivot = true, bool check_errors = false);
PLU lu(const Tensor& A, bool pivot = true);
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true,
                bool adjoint = false);

Tensor det(const Tensor& A);
struct SlogDet {
  Tensor sign;       // A's dtype (unit complex number for complex input)
  Tensor logabsdet;  // real
};
SlogDet slogdet(const Tensor& A);

// ---- QR ----
struct QR {
  Tensor Q, R;  // mode "r": Q is an empty tensor
};
// mode: "reduced" (Q: m x k, R: k x n, k = min(m, n)), "complete" (Q: m x m,
// R: m x n) or "r" (R only). LAPACK geqrf + orgqr/ungqr (blocked Householder
// with compact-WY GEMM updates).
QR qr(const Tensor& A, const std::string& mode = "reduced");
// The first n columns of H_1 ... H_k (A: m x n holds the Householder vectors
// below its diagonal, tau: k <= n scalars), as LAPACK orgqr/ungqr.
Tensor householder_product(const Tensor& A, const Tensor& tau);
// LAPACK geqrf's raw output (torch.geqrf): `a` holds R on and above the
// diagonal and the Householder vectors below it; tau ([*, min(m, n)]) their
// scalars. householder_product(a, tau) is Q.
struct Geqrf {
  Tensor a, tau;
};
Geqrf geqrf(const Tensor& A);

// ---- SVD and least squares ----
struct SVD {
  Tensor U, S, Vh;  // S real, descending
};
SVD svd(const Tensor& A, bool full_matrices = true);
Tensor svdvals(const Tensor& A);
// Pseudo-inverse: singular values <= max(atol, rtol * s_max) are dropped.
// rtol defaults to eps * max(m, n) when neither is given, else to 0.
Tensor pinv(const Tensor& A, std::optional<double> atol = std::nullopt,
            std::optional<double> rtol = std::nullopt, bool hermitian = false);

struct Lstsq {
  Tensor solution, residuals, rank, singular_values;
};
// driver: "gelsy" (default, as torch on the CPU), "gels", "gelsd" or "gelss".
Lstsq lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond = std::nullopt,
            std::optional<std::string> driver = std::nullopt);
Tensor matrix_rank(const Tensor& A, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt, bool hermitian = false);

// ---- Hermitian ----
Tensor cholesky(const Tensor& A, bool upper = false);
struct CholeskyEx {
  Tensor L, info;
};
CholeskyEx cholesky_ex(const Tensor& A, bool upper = false, bool check_errors = false);
struct Eigh {
  Tensor eigenvalues, eigenvectors;  // eigenvalues real, ascending
};
Eigh eigh(const Tensor& A, const std::string& UPLO = "L");
Tensor eigvalsh(const Tensor& A, const std::string& UPLO = "L");
// The eigenvalues of a general square matrix (complex, in LAPACK geev's
// order; complex64 for float32 / complex64 A). Non-finite input raises.
Tensor eigvals(const Tensor& A);

// ---- LDL ----
// Bunch-Kaufman A = L D L^T (L D L^H when hermitian), the lower triangle of A
// read, as LAPACK sytrf / hetrf: LD holds L below the diagonal and the 1x1 /
// 2x2 blocks of D (upper triangle zero); pivots: int32, LAPACK's 1-based
// form (negative for a 2x2 block). info: int32 per matrix, k > 0 when
// D[k-1, k-1] is exactly zero; ldl_factor raises then.
struct LDLFactor {
  Tensor LD, pivots;
};
struct LDLFactorEx {
  Tensor LD, pivots, info;
};
LDLFactor ldl_factor(const Tensor& A, bool hermitian = false);
LDLFactorEx ldl_factor_ex(const Tensor& A, bool hermitian = false, bool check_errors = false);

// ---- norms and friends ----
// ord: a number (2, 1, inf, 0, any real) over `dim` (nullopt: all dims).
Tensor vector_norm(const Tensor& x, double ord = 2.0,
                   const std::optional<std::vector<int>>& dim = std::nullopt, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt);
// ord: "fro", "nuc", or +-1, +-2, +-inf over the two dims `dim`.
using MatrixOrd = std::variant<double, std::string>;
Tensor matrix_norm(const Tensor& A, const MatrixOrd& ord = std::string("fro"),
                   std::pair<int, int> dim = {-2, -1}, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt);
// Cross product of 3-vectors along `dim` (broadcasting the other dims).
Tensor cross(const Tensor& a, const Tensor& b, int dim = -1);

}  // namespace kiln::linalg
