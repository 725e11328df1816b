// Derivatives of the kiln.linalg front-ends (real dtypes), written with kiln's
// public ops so that a create_graph backward differentiates them again. The
// front-ends record themselves and call these from their node's formula.
//
// Ops that read one triangle of A (cholesky, eigh, eigvalsh, pinv with
// hermitian=True) return the gradient of the function they compute: the
// symmetric gradient G folded onto the triangle read (off-diagonal entries
// G_ij + G_ji, the diagonal G_ii, zeros in the triangle not read). On a
// symmetric perturbation it agrees with torch's symmetric gradient.
#pragma once

#include "core/autograd_record.h"
#include "kiln/tensor.h"

namespace kiln::linalg::grad {

// NotImplementedError for complex input while recording (the formulas need a
// conjugate, which kiln does not have yet).
void no_complex(const autograd::Record& rec, const Tensor& A, const char* op);

// g, or an undefined tensor when g is all zeros: the engine gives zeros for
// the outputs no one used, and the spectral formulas skip those terms (they
// divide by eigenvalue gaps, which may be zero).
Tensor unless_zero(const Tensor& g);

// [*, n, n] -> gradient of inv, given the inverse.
Tensor inv_backward(const Tensor& g, const Tensor& Ainv);
// [*] grad of det / logabsdet -> [*, n, n] (times det for det).
Tensor det_backward(const Tensor& g, const Tensor& det, const Tensor& A);
Tensor logabsdet_backward(const Tensor& g, const Tensor& A);
// solve(A, B, left) = X: {gA, gB} in the broadcast shapes (engine sums).
std::pair<Tensor, Tensor> solve_backward(const Tensor& g, const Tensor& A, const Tensor& X, bool left,
                                         bool vector_case, bool needA, bool needB);
std::pair<Tensor, Tensor> solve_triangular_backward(const Tensor& g, const Tensor& A, const Tensor& X,
                                                    bool upper, bool left, bool unitriangular, bool needA,
                                                    bool needB);
// L = cholesky(A, upper) (L is U when upper).
Tensor cholesky_backward(const Tensor& g, const Tensor& L, bool upper);
// eigh: gL, gV may be undefined.
Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V, bool upper);
// svd (U: m x k, S, Vh: k x n after narrowing); gU, gS, gVh may be undefined.
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh);
// qr, reduced (Q: m x k, R: k x n); gQ, gR may be undefined.
Tensor qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R);
// pinv of the matrix A (full rank), given P = pinv(A).
Tensor pinv_backward(const Tensor& g, const Tensor& A, const Tensor& P);
// lstsq solution X of full-rank tall A [*, m, n], B [*, m, r] (or vectors).
std::pair<Tensor, Tensor> lstsq_backward(const Tensor& g, const Tensor& A, const Tensor& B, const Tensor& X,
                                         bool vector_case, bool needA, bool needB);

// A = P L U (L: m x k unit lower, U: k x n upper, k = min(m, n)).
Tensor lu_backward(const Tensor& gL, const Tensor& gU, const Tensor& P, const Tensor& L, const Tensor& U);
// lu_solve(LU, pivots, B, left, adjoint) = X: {gLU, gB}.
std::pair<Tensor, Tensor> lu_solve_backward(const Tensor& g, const Tensor& LU, const Tensor& pivots,
                                            const Tensor& X, bool left, bool adjoint, bool needLU,
                                            bool needB);

// The symmetric matrix whose `upper` (or lower) triangle A's is.
Tensor symmetric_from(const Tensor& A, bool upper);
// Folds a gradient G with respect to a symmetric matrix onto its read triangle.
Tensor fold_to_triangle(const Tensor& G, bool upper);

}  // namespace kiln::linalg::grad
