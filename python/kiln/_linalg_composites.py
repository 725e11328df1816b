"""torch's older linalg names (torch.svd returns V, not Vh; torch.det, inverse,
pinverse, cholesky_inverse, matrix_exp) and the kiln.linalg functions written in
Python over kiln's own linalg ops (cond, tensorinv, matrix_sqrth, polar, vander)."""

import math

from . import _C


def det(input):
    return _C.linalg_det(input)


def slogdet(input):
    return _C.linalg_slogdet(input)


def logdet(input):
    # log(det) of a real matrix: NaN for a negative determinant, -inf for zero.
    sign, logabs = _C.linalg_slogdet(input)
    if input.is_complex():
        return logabs + _C.log(sign)
    return _C.where(sign < 0, float("nan"), logabs)


def inverse(input):
    return _C.linalg_inv(input)


def pinverse(input, rcond=1e-15):
    return _C.linalg_pinv(input, rtol=rcond)


def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V = Vh^H; some=False gives the full U and V;
    compute_uv=False gives zero-filled U and V."""
    U, S, Vh = _C.linalg_svd(input, full_matrices=not some)
    V = Vh.transpose(-2, -1)
    if V.is_complex():
        V = _C.conj(V)
    if not compute_uv:
        U, V = _C.zeros_like(U), _C.zeros_like(V)
    return U, S, V


def cholesky_inverse(L, upper=False):
    """The inverse of A from its Cholesky factor (A = L L^H, or U^H U)."""
    n = L.size(-1)
    eye = _C.eye(n, dtype=L.dtype).expand(list(L.shape))
    Linv = _C.linalg_solve_triangular(L, eye, upper=upper)
    LinvH = Linv.transpose(-2, -1)
    if LinvH.is_complex():
        LinvH = _C.conj(LinvH)
    return LinvH @ Linv if not upper else Linv @ LinvH


def matrix_exp(A):
    """e^A by scaling and squaring with a degree-18 Taylor polynomial evaluated
    in Horner form (float64 error ~1e-15 relative for ||A / 2^s|| <= 1/2)."""
    if A.dim() < 2 or A.size(-1) != A.size(-2):
        raise ValueError(f"[matrix_exp] expected a tensor of square matrices, got {list(A.shape)}")
    n = A.size(-1)
    if A.numel() == 0:
        return A.clone()
    norm = float(_C.amax(_C.linalg_matrix_norm(A.detach(), 1)).item()) if A.dim() > 2 else \
        float(_C.linalg_matrix_norm(A.detach(), 1).item())
    s = max(0, int(math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0) if math.isfinite(norm) else 0
    X = A / (2.0 ** s)
    eye = _C.eye(n, dtype=A.dtype).expand(list(A.shape))
    R = eye
    for k in range(18, 0, -1):
        R = eye + (X @ R) / float(k)
    for _ in range(s):
        R = R @ R
    return R


def linalg_vander(x, *, N=None):
    """torch.linalg.vander: [*, n] -> [*, n, N], columns x^0 ... x^(N-1)."""
    n = x.size(-1) if N is None else N
    if n <= 1:
        raise ValueError("N must be greater than 1.")
    cols = [_C.ones_like(x)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    return _C.stack(cols, -1)


def linalg_cond(A, p=None):
    """torch.linalg.cond: sigma_max / sigma_min for p None or 2 (-2: the
    inverse), else norm(A, p) * norm(inv(A), p)."""
    if p is None or p in (2, -2):
        s = _C.linalg_svdvals(A)
        hi, lo = s.narrow(-1, 0, 1).squeeze(-1), s.narrow(-1, s.size(-1) - 1, 1).squeeze(-1)
        return hi / lo if p != -2 else lo / hi
    return _C.linalg_matrix_norm(A, p) * _C.linalg_matrix_norm(_C.linalg_inv(A), p)


def linalg_tensorinv(A, ind=2):
    """torch.linalg.tensorinv: the inverse of A seen as a matrix
    [prod(A.shape[:ind]), prod(A.shape[ind:])]."""
    if ind <= 0:
        raise ValueError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = list(A.shape[:ind]), list(A.shape[ind:])
    n, m = math.prod(out_shape), math.prod(in_shape)
    if n != m:
        raise ValueError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]),"
                         f" but got {m} != {n}")
    return _C.linalg_inv(A.reshape([n, m])).reshape(in_shape + out_shape)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) of lu_factor's compact LU [*, m, n] and 1-based pivots [*, k]:
    A = P @ L @ U, L unit lower triangular [*, m, k], U upper [*, k, n]. The
    pivots are LAPACK's row interchanges, applied in order."""
    from collections import namedtuple

    m, n = LU_data.size(-2), LU_data.size(-1)
    k = min(m, n)
    L = U = P = None
    if unpack_data:
        eye = _C.eye(m, k, dtype=LU_data.dtype)
        L = _C.tril(LU_data.narrow(-1, 0, k), -1) + eye
        U = _C.triu(LU_data.narrow(-2, 0, k))
    if unpack_pivots:
        piv = LU_pivots.reshape([-1, LU_pivots.size(-1)]).to(_C.int64).numpy()
        perms = []
        for row in piv:
            perm = list(range(m))
            for i, p in enumerate(row[:k]):
                j = int(p) - 1
                perm[i], perm[j] = perm[j], perm[i]
            perms.append(perm)
        # (P^T A)[i] = A[perm[i]]: P[perm[i], i] = 1.
        idx = _C.tensor(perms, dtype=_C.int64).reshape(list(LU_pivots.shape[:-1]) + [m])
        P = _C.zeros(list(LU_pivots.shape[:-1]) + [m, m], dtype=LU_data.dtype)
        P = P.scatter(-2, idx.unsqueeze(-2), 1.0) if m else P
    return namedtuple("lu_unpack", ["P", "L", "U"])(P, L, U)


def linalg_matrix_sqrth(A):
    """The principal square root of a Hermitian positive semi-definite matrix
    (batches too): V diag(sqrt(w)) V^H from eigh. A negative eigenvalue gives
    NaN entries, as sqrt does."""
    w, V = _C.linalg_eigh(A)
    VH = V.transpose(-2, -1)
    if VH.is_complex():
        VH = _C.conj(VH)
    return (V * _C.sqrt(w).unsqueeze(-2).to(V.dtype)) @ VH


def linalg_polar(A, *, side="right"):
    """The polar decomposition from the SVD A = W S V^H: (U, P) with U = W V^H
    unitary and P positive semi-definite, A = U P (side="right") or A = P U
    (side="left"), as scipy.linalg.polar."""
    if side not in ("right", "left"):
        raise ValueError(f"linalg.polar: side must be 'right' or 'left', got {side!r}")
    W, S, Vh = _C.linalg_svd(A, full_matrices=False)

    def h(M):
        Mt = M.transpose(-2, -1)
        return _C.conj(Mt) if Mt.is_complex() else Mt

    U = W @ Vh
    Sd = S.to(A.dtype)
    P = (h(Vh) * Sd.unsqueeze(-2)) @ Vh if side == "right" else (W * Sd.unsqueeze(-2)) @ h(W)
    return U, P


__all__ = [n for n in dir() if not n.startswith("_") and n != "math" and not n.startswith("linalg_")]
# kiln.linalg.<name>: set on kiln.linalg where _C has no such function.
LINALG = {"vander": linalg_vander, "matrix_exp": matrix_exp, "cond": linalg_cond, "tensorinv": linalg_tensorinv,
          "matrix_sqrth": linalg_matrix_sqrth, "polar": linalg_polar}
