#include "linalg/grad.h"

#include "kiln/binary.h"
#include "kiln/complex.h"
#include "kiln/error.h"
#include "kiln/linalg.h"
#include "kiln/matmul.h"
#include "kiln/reduce.h"
#include "kiln/shape.h"
#include "kiln/unary.h"

namespace kiln::linalg::grad {

namespace {

Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }
// The conjugate transpose (mT for real x): complex gradients are conjugated,
// torch's convention, so inv, det, solve use A^H where the real formula has A^T.
Tensor mH(const Tensor& x) { return is_complex(x.dtype()) ? conj(mT(x)) : mT(x); }
Tensor mmul(const Tensor& a, const Tensor& b) { return matmul(a, b); }
// [*] -> [*, 1, 1]
Tensor as_matrix(const Tensor& x) { return x.unsqueeze(-1).unsqueeze(-1); }
Tensor eye_of(int64_t n, const Tensor& like) { return eye(n, n, like.dtype(), like.device()); }
Tensor diag_of(const Tensor& x) { return diagonal(x, 0, -2, -1); }

}  // namespace

Tensor unless_zero(const Tensor& g) {
  if (!g.defined()) return g;
  autograd::NoGradGuard no_grad;
  return any(g).item<bool>() ? g : Tensor();
}

void no_complex(const autograd::Record& rec, const Tensor& A, const char* op) {
  if (rec && is_complex(A.dtype()))
    throw NotImplementedError(std::string("[") + op + "] complex gradients are not implemented in kiln yet");
}

Tensor symmetric_from(const Tensor& A, bool upper) {
  return upper ? add(triu(A), mT(triu(A, 1))) : add(tril(A), mT(tril(A, -1)));
}

Tensor fold_to_triangle(const Tensor& G, bool upper) {
  const Tensor both = add(G, mT(G));
  return sub(upper ? triu(both) : tril(both), diag_embed(diag_of(G)));
}

Tensor inv_backward(const Tensor& g, const Tensor& Ainv) {
  // d(A^-1) = -A^-1 dA A^-1
  return neg(mmul(mmul(mH(Ainv), g), mH(Ainv)));
}

Tensor det_backward(const Tensor& g, const Tensor& det, const Tensor& A) {
  // d det = det tr(A^-1 dA)
  return mul(as_matrix(mul(g, is_complex(det.dtype()) ? conj(det) : det)), mH(inv(A)));
}

Tensor logabsdet_backward(const Tensor& g, const Tensor& A) { return mul(as_matrix(g), mH(inv(A))); }

std::pair<Tensor, Tensor> solve_backward(const Tensor& g, const Tensor& A, const Tensor& X, bool left,
                                         bool vector_case, bool needA, bool needB) {
  // left: X = A^-1 B, gB = A^-H g, gA = -gB X^H; right: X = B A^-1, gB = g A^-H,
  // gA = -X^H gB (^H: ^T for real dtypes). solve's vector rule classifies g (shaped as X) as it did B.
  const Tensor gB = solve(mH(A), g, left);
  Tensor gA;
  if (needA) {
    if (vector_case)
      gA = neg(mmul(gB.unsqueeze(-1), mH(X.unsqueeze(-1))));
    else
      gA = neg(left ? mmul(gB, mH(X)) : mmul(mH(X), gB));
  }
  return {gA, needB ? gB : Tensor()};
}

std::pair<Tensor, Tensor> solve_triangular_backward(const Tensor& g, const Tensor& A, const Tensor& X,
                                                    bool upper, bool left, bool unitriangular, bool needA,
                                                    bool needB) {
  const Tensor gB = solve_triangular(mH(A), g, !upper, left, unitriangular);
  Tensor gA;
  if (needA) {
    const Tensor full = neg(left ? mmul(gB, mH(X)) : mmul(mH(X), gB));
    // Only A's triangle (without its diagonal when unitriangular) is read.
    const int64_t off = unitriangular ? 1 : 0;
    gA = upper ? triu(full, off) : tril(full, -off);
  }
  return {gA, needB ? gB : Tensor()};
}

Tensor cholesky_backward(const Tensor& g, const Tensor& Lout, bool upper) {
  // A = L L^T: dL = L Phi(L^-1 dA L^-T), Phi = lower triangle with the diagonal
  // halved; so G = L^-T Phi(L^T gL) L^-1.
  const Tensor L = upper ? mT(Lout) : Lout;
  const Tensor gL = upper ? mT(g) : g;
  const Tensor P = tril(mmul(mT(L), gL));
  const Tensor phi = sub(P, mul(diag_embed(diag_of(P)), 0.5));
  const Tensor left = solve_triangular(mT(L), phi, /*upper=*/true, /*left=*/true);
  const Tensor G = solve_triangular(L, left, /*upper=*/false, /*left=*/false);
  return fold_to_triangle(mul(add(G, mT(G)), 0.5), upper);
}

Tensor eigh_backward(const Tensor& gL, const Tensor& gV, const Tensor& L, const Tensor& V, bool upper) {
  // G = V (diag(gL) + (V^T gV) / E) V^T, E_ij = L_j - L_i (off the diagonal).
  Tensor inner;
  if (gV.defined()) {
    const int64_t n = L.size(-1);
    const Tensor I = eye_of(n, L);
    const Tensor E = add(sub(L.unsqueeze(-2), L.unsqueeze(-1)), I);  // diagonal 1: not divided by
    inner = mul(div(mmul(mT(V), gV), E), sub(1.0, I));
  }
  if (gL.defined()) inner = inner.defined() ? add(inner, diag_embed(gL)) : diag_embed(gL);
  if (!inner.defined()) return Tensor();
  return fold_to_triangle(mmul(mmul(V, inner), mT(V)), upper);
}

Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh) {
  const int64_t m = U.size(-2), n = Vh.size(-1), k = S.size(-1);
  if (!gU.defined() && !gVh.defined()) {
    if (!gS.defined()) return Tensor();
    return mmul(mul(U, gS.unsqueeze(-2)), Vh);  // U diag(gS) Vh
  }
  const Tensor V = mT(Vh);
  const Tensor gV = gVh.defined() ? mT(gVh) : Tensor();
  const Tensor Srow = S.unsqueeze(-2), Scol = S.unsqueeze(-1);
  const Tensor S2 = mul(S, S);
  const Tensor I = eye_of(k, S);
  // E_ij = S_j^2 - S_i^2, 1 on the diagonal (whose terms are zero: skew).
  const Tensor E = add(sub(S2.unsqueeze(-2), S2.unsqueeze(-1)), I);
  Tensor inner = gS.defined() ? diag_embed(gS) : Tensor();
  Tensor UhgU, VhgV;
  if (gU.defined()) {
    UhgU = mmul(mT(U), gU);
    const Tensor t = div(mul(sub(UhgU, mT(UhgU)), Srow), E);
    inner = inner.defined() ? add(inner, t) : t;
  }
  if (gV.defined()) {
    VhgV = mmul(Vh, gV);
    const Tensor t = div(mul(Scol, sub(VhgV, mT(VhgV))), E);
    inner = inner.defined() ? add(inner, t) : t;
  }
  Tensor gA = mmul(mmul(U, inner), Vh);
  // The components outside the spans of U and V.
  if (gU.defined() && m > k) gA = add(gA, mmul(div(sub(gU, mmul(U, UhgU)), Srow), Vh));
  if (gV.defined() && n > k) gA = add(gA, mmul(U, mT(div(sub(gV, mmul(V, VhgV)), Srow))));
  return gA;
}

namespace {

// Square or tall A = Q R (Q: m x n, R: n x n):
// gA = [gQ + Q copyltu(triu(gR R^T - Q^T gQ))] R^-T.
Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  Tensor M;
  if (gR.defined()) M = mmul(gR, mT(R));
  if (gQ.defined()) M = M.defined() ? sub(M, mmul(mT(Q), gQ)) : neg(mmul(mT(Q), gQ));
  const Tensor T = triu(M);
  Tensor gA = mmul(Q, sub(add(T, mT(T)), diag_embed(diag_of(T))));
  if (gQ.defined()) gA = add(gA, gQ);
  return solve_triangular(mT(R), gA, /*upper=*/false, /*left=*/false);
}

}  // namespace

Tensor qr_backward(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  if (!gQ.defined() && !gR.defined()) return Tensor();
  const int64_t m = Q.size(-2), n = R.size(-1);
  if (m >= n) return qr_backward_tall(gQ, gR, Q, R);
  // Wide: A = [A1 | A2] with A1 = Q R1 (square) and R2 = Q^T A2.
  const Tensor R1 = R.narrow(-1, 0, m), R2 = R.narrow(-1, m, n - m);
  const Tensor gR1 = gR.defined() ? gR.narrow(-1, 0, m) : Tensor();
  Tensor gQ1 = gQ;
  Tensor gA2;
  if (gR.defined()) {
    const Tensor gR2 = gR.narrow(-1, m, n - m);
    const Tensor A2 = mmul(Q, R2);
    const Tensor t = mmul(A2, mT(gR2));
    gQ1 = gQ1.defined() ? add(gQ1, t) : t;
    gA2 = mmul(Q, gR2);
  } else {
    gA2 = zeros_like(R2);
  }
  const Tensor parts[2] = {qr_backward_tall(gQ1, gR1, Q, R1), gA2};
  return cat(parts, -1);
}

Tensor pinv_backward(const Tensor& g, const Tensor& A, const Tensor& P) {
  // P = A^+ of full-rank A; the closed form of d(A^+) (Golub and Pereyra)
  // projected, grouped so the products stay min(m, n) sized.
  const int64_t m = A.size(-2), n = A.size(-1);
  const Tensor Ph = mT(P), gh = mT(g);
  if (m <= n) {
    const Tensor K = mmul(gh, P);
    const Tensor KPh = mmul(K, Ph);
    return add(sub(sub(KPh, mT(mmul(P, K))), mmul(mmul(A, P), KPh)), mmul(mmul(Ph, P), sub(gh, mmul(K, A))));
  }
  const Tensor K = mmul(P, gh);
  const Tensor PhK = mmul(Ph, K);
  return sub(add(sub(mmul(mmul(sub(gh, mmul(A, K)), P), Ph), mT(mmul(K, P))), PhK), mmul(mmul(PhK, P), A));
}

std::pair<Tensor, Tensor> lstsq_backward(const Tensor& g, const Tensor& A, const Tensor& B, const Tensor& X,
                                         bool vector_case, bool needA, bool needB) {
  // X = (A^T A)^-1 A^T B: with Z = (A^T A)^-1 gX, gB = A Z and
  // gA = (B - A X) Z^T - A Z X^T.
  const Tensor gm = vector_case ? g.unsqueeze(-1) : g;
  const Tensor Xm = vector_case ? X.unsqueeze(-1) : X;
  const Tensor Z = solve(mmul(mT(A), A), gm);
  const Tensor AZ = mmul(A, Z);
  Tensor gA, gB;
  if (needA) {
    const Tensor Bm = vector_case ? B.unsqueeze(-1) : B;
    gA = sub(mmul(sub(Bm, mmul(A, Xm)), mT(Z)), mmul(AZ, mT(Xm)));
  }
  if (needB) gB = vector_case ? AZ.squeeze(-1) : AZ;
  return {gA, gB};
}

namespace {

// Square A' = L U (no pivoting): gA' = L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T.
Tensor lu_backward_square(const Tensor& gL, const Tensor& gU, const Tensor& L, const Tensor& U) {
  const Tensor M = add(tril(mmul(mT(L), gL), -1), triu(mmul(gU, mT(U))));
  const Tensor left = solve_triangular(mT(L), M, /*upper=*/true, /*left=*/true, /*unitriangular=*/true);
  return solve_triangular(mT(U), left, /*upper=*/false, /*left=*/false);
}

}  // namespace

Tensor lu_backward(const Tensor& gL, const Tensor& gU, const Tensor& P, const Tensor& L, const Tensor& U) {
  const int64_t m = L.size(-2), n = U.size(-1);
  Tensor gA;  // gradient with respect to P^T A
  if (m == n) {
    gA = lu_backward_square(gL, gU, L, U);
  } else if (m > n) {
    // P^T A = [A1; A2]: A1 = L1 U, and L2 = A2 U^-1.
    const Tensor gA2 = solve_triangular(mT(U), gL.narrow(-2, n, m - n), /*upper=*/false, /*left=*/false);
    const Tensor gU1 = sub(gU, mmul(mT(L.narrow(-2, n, m - n)), gA2));
    const Tensor parts[2] = {lu_backward_square(gL.narrow(-2, 0, n), gU1, L.narrow(-2, 0, n), U), gA2};
    gA = cat(parts, -2);
  } else {
    // P^T A = [A1, A2]: A1 = L U1, and U2 = L^-1 A2.
    const Tensor gA2 = solve_triangular(mT(L), gU.narrow(-1, m, n - m), /*upper=*/true, /*left=*/true,
                                        /*unitriangular=*/true);
    const Tensor gL1 = sub(gL, mmul(gA2, mT(U.narrow(-1, m, n - m))));
    const Tensor parts[2] = {lu_backward_square(gL1, gU.narrow(-1, 0, m), L, U.narrow(-1, 0, m)), gA2};
    gA = cat(parts, -1);
  }
  return mmul(P, gA);
}

std::pair<Tensor, Tensor> lu_solve_backward(const Tensor& g, const Tensor& LU, const Tensor& pivots,
                                            const Tensor& X, bool left, bool adjoint, bool needLU,
                                            bool needB) {
  // gB solves the transposed system; gA is the gradient with respect to
  // A = P L U, carried to the packed factors.
  const Tensor gB = lu_solve(LU, pivots, g, left, !adjoint);
  Tensor gLU;
  if (needLU) {
    const Tensor gA = neg(left ? (adjoint ? mmul(X, mT(gB)) : mmul(gB, mT(X)))
                               : (adjoint ? mmul(mT(gB), X) : mmul(mT(X), gB)));
    const int64_t n = LU.size(-1);
    const Tensor I = eye_of(n, LU);
    // P = P I I^-T: lu_solve with unit factors applies only the row swaps.
    const Tensor P = lu_solve(I, pivots, I, /*left=*/true, /*adjoint=*/true);
    const Tensor L = add(tril(LU, -1), I), U = triu(LU);
    const Tensor PtgA = mmul(mT(P), gA);
    gLU = add(tril(mmul(PtgA, mT(U)), -1), triu(mmul(mT(L), PtgA)));
  }
  return {gLU, needB ? gB : Tensor()};
}

}  // namespace kiln::linalg::grad
