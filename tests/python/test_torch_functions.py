"""The torch.<name> functions kiln writes in Python (kiln/_torch_functions.py and the
_composites, _statistics, _linalg_composites and _tensor_methods it gathers)
against NumPy/SciPy (and torch when installed): torch's argument orders, the
older linalg names, the composites and the Tensor methods and aliases."""

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

import kiln
import kiln.nn.functional as F

RNG = np.random.default_rng(77)


def r(*shape):
    return RNG.uniform(-2, 2, shape)


def t(a, **k):
    return kiln.tensor(a, **k)


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(got.numpy() if hasattr(got, "numpy") else got, want, rtol=tol, atol=tol)


def test_functional_under_torch_argument_orders():
    x = t(r(2, 3, 8))
    w, b, rm, rv = t(r(3)), t(r(3)), t(r(3)), t(np.abs(r(3)) + 0.5)
    close(kiln.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True), F.batch_norm(x, rm, rv, w, b, False, 0.1,
                                                                                  1e-5).numpy())
    close(kiln.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
          F.instance_norm(x, None, None, w, b, True, 0.1, 1e-5).numpy())
    close(kiln.layer_norm(x, [8]), F.layer_norm(x, [8]).numpy())
    close(kiln.group_norm(x, 3), F.group_norm(x, 3).numpy())
    emb = t(r(10, 4))
    idx = t(np.array([[1, 9], [0, 3]]))
    close(kiln.embedding(emb, idx), emb.numpy()[idx.numpy()])
    close(kiln.constant_pad_nd(x, [1, 2], 5.0), np.pad(x.numpy(), ((0, 0), (0, 0), (1, 2)), constant_values=5.0))
    assert kiln.dropout(x, 0.5, False) is not None and np.array_equal(kiln.dropout(x, 0.5, False).numpy(), x.numpy())
    vals, ind = kiln.adaptive_max_pool1d(x, 2)
    close(vals, x.numpy().reshape(2, 3, 2, 4).max(-1))
    close(kiln.max_pool1d(x, 2), x.numpy().reshape(2, 3, 4, 2).max(-1))
    w5 = t(r(5, 3, 3))
    close(kiln.conv1d(x, w5), F.conv1d(x, w5).numpy())
    lx, tg = t(r(4, 3)), t(RNG.integers(0, 2, (4, 3)).astype(np.float64))
    close(kiln.binary_cross_entropy_with_logits(lx, tg, None, None, 2),
          F.binary_cross_entropy_with_logits(lx, tg, reduction="sum").numpy())
    close(kiln.kl_div(lx, tg, 0), F.kl_div(lx, tg, reduction="none").numpy())


def test_old_linalg_names():
    A = r(3, 4, 4) + 4 * np.eye(4)
    close(kiln.det(t(A)), np.linalg.det(A))
    close(kiln.inverse(t(A)), np.linalg.inv(A))
    s, la = kiln.slogdet(t(A))
    close(s, np.linalg.slogdet(A)[0])
    close(la, np.linalg.slogdet(A)[1])
    close(kiln.logdet(t(A)), np.where(np.linalg.det(A) < 0, np.nan, np.log(np.abs(np.linalg.det(A)))))
    B = r(5, 3)
    close(kiln.pinverse(t(B)), np.linalg.pinv(B))
    U, S, V = kiln.svd(t(B))
    assert U.shape == (5, 3) and V.shape == (3, 3)
    close(U @ kiln.diag_embed(S) @ V.t(), B)
    U2, S2, V2 = kiln.svd(t(B), some=False)
    assert U2.shape == (5, 5)
    Spd = B.T @ B + np.eye(3)
    L = np.linalg.cholesky(Spd)
    close(kiln.cholesky_inverse(t(L)), np.linalg.inv(Spd))
    close(kiln.cholesky_inverse(t(L.T.copy()), upper=True), np.linalg.inv(Spd))
    for M in [r(4, 4), 5 * r(3, 3), np.zeros((2, 2)), r(2, 3, 3)]:
        close(kiln.linalg.matrix_exp(t(M)), np.stack([scipy.linalg.expm(m) for m in M.reshape(-1, *M.shape[-2:])])
              .reshape(M.shape), 1e-12 * max(1, np.abs(scipy.linalg.expm(M.reshape(-1, *M.shape[-2:])[0])).max()))
    close(t(A).matrix_exp(), np.stack([scipy.linalg.expm(m) for m in A]), 1e-9)
    close(kiln.linalg.vander(t(np.array([1.0, 2.0, 3.0]))), np.vander([1.0, 2.0, 3.0], increasing=True))
    close(kiln.vander(t(np.array([1, 2, 3]))), np.vander([1, 2, 3]))
    close(kiln.vander(t(np.array([1.0, 2.0])), N=4, increasing=True), np.vander([1.0, 2.0], 4, increasing=True))
    C = r(4, 4) + 3 * np.eye(4)
    close(kiln.linalg.cond(t(C)), np.linalg.cond(C), 1e-9)
    close(kiln.linalg.cond(t(C), "fro"), np.linalg.cond(C, "fro"), 1e-9)
    T4 = r(2, 3, 6)
    close(kiln.linalg.tensorinv(t(T4.reshape(6, 2, 3)), ind=1), np.linalg.tensorinv(T4.reshape(6, 2, 3), ind=1),
          1e-9)
    a, b = r(4, 3), r(4, 3)
    close(kiln.cross(t(a), t(b)), np.cross(a, b))
    close(kiln.cross(t(a.T.copy()), t(b.T.copy())), np.cross(a.T, b.T, axis=0))  # dim None: the first of size 3


def test_composites():
    a, b = r(3), r(4)
    xs, ys = kiln.meshgrid(t(a), t(b), indexing="ij")
    nx, ny = np.meshgrid(a, b, indexing="ij")
    close(xs, nx)
    close(ys, ny)
    xs, ys = kiln.meshgrid(t(a), t(b), indexing="xy")
    nx, ny = np.meshgrid(a, b, indexing="xy")
    close(xs, nx)
    close(ys, ny)
    close(kiln.cartesian_prod(t(a), t(b)), np.array([[i, j] for i in a for j in b]))
    close(kiln.block_diag(t(r(2, 2)) * 0 + 1, t(np.array(3.0)), t(np.array([4.0, 5.0]))),
          scipy.linalg.block_diag(np.ones((2, 2)), [[3.0]], [[4.0, 5.0]]))
    c = kiln.combinations(t(np.array([1.0, 2.0, 3.0, 4.0])), 2)
    close(c, np.array([[1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]], dtype=float))
    assert kiln.combinations(t(np.arange(3.0)), 2, with_replacement=True).shape == (6, 2)
    x = r(3, 7)
    close(kiln.diff(t(x)), np.diff(x))
    close(kiln.diff(t(x), n=2, dim=0), np.diff(x, n=2, axis=0))
    close(kiln.diff(t(x), prepend=t(x[:, :1]), append=t(x[:, :2])), np.diff(x, prepend=x[:, :1], append=x[:, :2]))
    close(kiln.cov(t(x)), np.cov(x))
    close(kiln.cov(t(x), correction=0), np.cov(x, bias=True))
    fw, aw = np.array([1, 2, 1, 3, 1, 1, 2]), RNG.uniform(0.5, 2, 7)
    close(kiln.cov(t(x), fweights=t(fw), aweights=t(aw)), np.cov(x, fweights=fw, aweights=aw))
    close(kiln.corrcoef(t(x)), np.corrcoef(x))
    y, xg = r(4, 6), np.sort(r(6))
    close(kiln.trapezoid(t(y)), np.trapezoid(y))
    close(kiln.trapezoid(t(y), t(xg)), np.trapezoid(y, xg))
    close(kiln.trapezoid(t(y), dx=0.5, dim=0), np.trapezoid(y, dx=0.5, axis=0))

    close(kiln.cumulative_trapezoid(t(y), t(xg)), scipy.integrate.cumulative_trapezoid(y, xg))
    n = x.copy()
    n[0, 2] = n[2, 5] = np.nan
    close(kiln.nansum(t(n)), np.nansum(n))
    close(kiln.nanmean(t(n), 1), np.nanmean(n, 1))
    mn, mx = kiln.aminmax(t(x), dim=1)
    close(mn, x.min(1))
    close(mx, x.max(1))
    close(kiln.logcumsumexp(t(x), 1), np.logaddexp.accumulate(x, 1))
    close(kiln.msort(t(x)), np.sort(x, 0))
    close(kiln.renorm(t(x), 2, 0, 1.5), x * np.minimum(1, 1.5 / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-7)))
    ref = x.copy()
    ref[:, [1, 4]] = -7.0
    close(kiln.index_fill(t(x), 1, t(np.array([1, 4])), -7.0), ref)
    ur = kiln.unravel_index(t(np.array([5, 11, 0])), (3, 4))
    close(ur[0], [1, 2, 0])
    close(ur[1], [1, 3, 0])
    e = np.array([1, 5, 2, 7])
    np.testing.assert_array_equal(kiln.isin(t(e), t(np.array([2, 7]))).numpy(), np.isin(e, [2, 7]))
    np.testing.assert_array_equal(kiln.isin(t(e), t(np.array([2, 7])), invert=True).numpy(), ~np.isin(e, [2, 7]))
    h = r(200)
    close(kiln.histc(t(h), bins=8, min=-2, max=2), np.histogram(h, bins=8, range=(-2, 2))[0])
    close(kiln.take_along_dim(t(x), t(np.argsort(x, 1)), 1), np.take_along_axis(x, np.argsort(x, 1), 1))
    close(kiln.addcdiv(t(x), t(x), t(x + 5), value=0.5), x + 0.5 * x / (x + 5))
    close(kiln.rsub(t(x), 2.0), 2.0 - x)
    close(kiln.dist(t(x), t(x * 0), 3), np.sum(np.abs(x) ** 3) ** (1 / 3))
    z = r(2, 3) + 1j * r(2, 3)
    close(kiln.adjoint(t(z)), z.conj().T)
    close(kiln.conj_physical(t(z)), z.conj())
    assert kiln.resolve_conj(t(z)) is not None
    close(kiln.range(1, 4), [1.0, 2.0, 3.0, 4.0])
    assert kiln.range(0, 1, 0.25).shape == (5,)
    close(kiln.fill(t(x), 2.5), np.full_like(x, 2.5))
    s = kiln.empty_strided((2, 3), (1, 2))
    assert s.shape == (2, 3) and s.stride() == (1, 2)
    assert float(kiln.scalar_tensor(3).item()) == 3.0 and kiln.scalar_tensor(3).dtype == kiln.float32


def test_tensor_methods_and_aliases():
    x = r(3, 4)
    a = t(x.copy())
    assert a.greater_(0.0) is a
    np.testing.assert_array_equal(a.numpy(), (x > 0).astype(float))
    for alias, fn in [("absolute_", np.abs), ("negative_", np.negative)]:
        b = t(x.copy())
        getattr(b, alias)()
        close(b, fn(x))
    b = t(x.copy())
    b.clamp_min_(0.5)
    close(b, np.maximum(x, 0.5))
    b = t(x.copy())
    b.cumsum_(1)
    close(b, np.cumsum(x, 1))
    n = t(x).new_zeros((2, 2))
    assert n.dtype == kiln.float64 and n.shape == (2, 2)
    assert t(x).new_full((3,), 7).numpy().tolist() == [7.0, 7.0, 7.0]
    assert t(x).new_ones(2, dtype=kiln.int32).dtype == kiln.int32
    close(t(x).sum_to_size(1, 4), x.sum(0, keepdims=True))
    close(t(x).sum_to_size(3, 1), x.sum(1, keepdims=True))
    v = np.arange(7.0)
    u = t(v).unfold(0, 3, 2)
    close(u, np.array([[0, 1, 2], [2, 3, 4], [4, 5, 6]], dtype=float))
    m = np.arange(12.0).reshape(3, 4)
    close(t(m).unfold(1, 2, 1), np.lib.stride_tricks.sliding_window_view(m, 2, axis=1))
    close(t(x).addcdiv_(t(x), t(x + 5)), x + x / (x + 5))


def test_gradients_flow_through_composites():
    x = t(r(4, 4) * 0.3, requires_grad=True)
    kiln.linalg.matrix_exp(x).sum().backward()
    h = 1e-6
    xn = x.detach().numpy()
    want = np.zeros_like(xn)
    for i in range(4):
        for j in range(4):
            e = np.zeros_like(xn)
            e[i, j] = h
            want[i, j] = (scipy.linalg.expm(xn + e).sum() - scipy.linalg.expm(xn - e).sum()) / (2 * h)
    close(x.grad, want, 1e-6)
    y = t(r(3, 5), requires_grad=True)
    kiln.cov(y).sum().backward()
    assert y.grad.shape == (3, 5)


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    x = r(3, 5)
    for name, kf, tf in [
        ("cov", lambda v: kiln.cov(t(v)), lambda v: torch.cov(torch.tensor(v))),
        ("corrcoef", lambda v: kiln.corrcoef(t(v)), lambda v: torch.corrcoef(torch.tensor(v))),
        ("logcumsumexp", lambda v: kiln.logcumsumexp(t(v), 1), lambda v: torch.logcumsumexp(torch.tensor(v), 1)),
        ("renorm", lambda v: kiln.renorm(t(v), 2, 0, 1.0), lambda v: torch.renorm(torch.tensor(v), 2, 0, 1.0)),
        ("vander", lambda v: kiln.linalg.vander(t(v)), lambda v: torch.linalg.vander(torch.tensor(v))),
        ("matrix_exp", lambda v: kiln.linalg.matrix_exp(t(v[:, :3])),
         lambda v: torch.linalg.matrix_exp(torch.tensor(v[:, :3]))),
        ("histc", lambda v: kiln.histc(t(v), 5), lambda v: torch.histc(torch.tensor(v), 5)),
        ("svd V", lambda v: kiln.svd(t(v))[1], lambda v: torch.svd(torch.tensor(v))[1]),
    ]:
        close(kf(x), tf(x).numpy(), 1e-9)


def test_histograms_distances_and_memory_sharing():
    import scipy.spatial.distance as sd

    x = RNG.standard_normal(1000)
    h, e = kiln.histogram(t(x), 10)
    nh, ne = np.histogram(x, 10)
    close(h, nh)
    close(e, ne)
    h, e = kiln.histogram(t(x), 7, range=(-1, 2), density=True, weight=t(np.abs(x)))
    close(h, np.histogram(x, 7, range=(-1, 2), density=True, weights=np.abs(x))[0])
    d = RNG.standard_normal((500, 2))
    h, es = kiln.histogramdd(t(d), [3, 4])
    close(h, np.histogramdd(d, [3, 4])[0])
    a, b = RNG.uniform(size=(30, 3)), RNG.uniform(size=(40, 3))
    close(kiln.cdist(t(a), t(b)), sd.cdist(a, b), 1e-9)  # the matrix-product path
    close(kiln.cdist(t(a[:5]), t(b[:4])), sd.cdist(a[:5], b[:4]))
    close(kiln.cdist(t(a[:5]), t(b[:4]), 1.0), sd.cdist(a[:5], b[:4], "cityblock"))
    close(kiln.cdist(t(a[:5]), t(b[:4]), float("inf")), sd.cdist(a[:5], b[:4], "chebyshev"))
    arr = np.arange(4.0)
    shared = kiln.asarray(arr)
    arr[0] = 9.0
    assert float(shared[0].item()) == 9.0
    assert float(kiln.asarray(arr, copy=True)[0].item()) == 9.0
    buf = bytearray(b"\x01\x02\x03\x04")
    fb = kiln.frombuffer(buf, dtype=kiln.uint8, offset=1)
    buf[1] = 7
    assert fb.numpy().tolist() == [7, 3, 4]
    assert type(kiln.to_dlpack(kiln.ones(2))).__name__ == "PyCapsule"


def test_index_copy_masked_scatter_fill_diagonal():
    z = t(np.zeros((3, 4)))
    z.index_copy_(1, t(np.array([0, 2])), t(np.arange(6.0).reshape(3, 2)))
    ref = np.zeros((3, 4))
    ref[:, [0, 2]] = np.arange(6.0).reshape(3, 2)
    close(z, ref)
    close(kiln.index_copy(t(np.zeros(4)), 0, t(np.array([3, 1])), t(np.array([5.0, 6.0]))), [0, 6, 0, 5])
    mask = np.array([[True, False, True], [False, True, False]])
    q = t(np.zeros((2, 3)))
    q.masked_scatter_(t(mask), t(np.arange(1.0, 10.0)))
    ref = np.zeros((2, 3))
    ref[mask] = [1, 2, 3]
    close(q, ref)
    m = t(np.zeros((5, 3)))
    m.fill_diagonal_(2.0, wrap=True)
    close(m, [[2, 0, 0], [0, 2, 0], [0, 0, 2], [0, 0, 0], [2, 0, 0]])
    c = t(np.zeros((3, 3, 3)))
    c.fill_diagonal_(1.0)
    assert float(c.sum().item()) == 3.0 and float(c[2, 2, 2].item()) == 1.0


def test_matrix_sqrth_and_polar():
    A = r(2, 4, 4)
    S = A @ A.transpose(0, 2, 1) + np.eye(4)
    root = kiln.linalg.matrix_sqrth(t(S)).numpy()
    close(root @ root, S, 1e-12)
    close(root, np.stack([scipy.linalg.sqrtm(s).real for s in S]), 1e-12)
    for side in ("right", "left"):
        U, P = kiln.linalg.polar(t(A[0]), side=side)
        su, sp_ = scipy.linalg.polar(A[0], side=side)
        close(U, su, 1e-12)
        close(P, sp_, 1e-12)
        close(U @ P if side == "right" else P @ U, A[0], 1e-12)
    with pytest.raises(ValueError, match="side"):
        kiln.linalg.polar(t(A[0]), side="up")


def test_lu_unpack_affine_grid_embedding_bag():
    for shape in [(4, 4), (2, 5, 3), (3, 5)]:
        A = r(*shape)
        LU, piv = kiln.linalg.lu_factor(t(A))
        P, L, U = kiln.lu_unpack(LU, piv)
        close(P @ L @ U, A, 1e-12)
        k = min(shape[-2:])
        assert L.shape[-2:] == (shape[-2], k) and U.shape[-2:] == (k, shape[-1])
        if len(shape) == 2:
            sp_, sl, su = scipy.linalg.lu(A)
            close(P, sp_)
            close(L, sl, 1e-12)
            close(U, su, 1e-12)
    # affine_grid: the base grid's (x, y, 1) times theta^T.
    theta = r(2, 2, 3)
    for ac in (False, True):
        g = F.affine_grid(t(theta), (2, 1, 3, 4), align_corners=ac).numpy()
        xs = np.linspace(-1, 1, 4) * (1 if ac else 3 / 4)
        ys = np.linspace(-1, 1, 3) * (1 if ac else 2 / 3)
        base = np.stack(list(np.meshgrid(xs, ys)) + [np.ones((3, 4))], -1)  # [H, W, 3]
        close(g, np.einsum("hwk,njk->nhwj", base, theta), 1e-12)
    # embedding_bag: per-bag sums, means and maxima of the gathered rows.
    w = r(10, 3)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    off = np.array([0, 4, 4, 6])
    bags = [idx[a:b] for a, b in zip(off, list(off[1:]) + [len(idx)])]
    for mode, red in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        want = np.stack([red(w[b], 0) if len(b) else np.zeros(3) for b in bags])
        close(F.embedding_bag(t(idx), t(w), t(off), mode=mode), want, 1e-12)
    want = np.stack([w[b[b != 4]].sum(0) for b in bags])
    close(F.embedding_bag(t(idx), t(w), t(off), mode="sum", padding_idx=4), want, 1e-12)
    close(F.embedding_bag(t(idx.reshape(2, 4)), t(w), mode="mean"), w[idx.reshape(2, 4)].mean(1), 1e-12)
