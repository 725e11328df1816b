"""The added kiln.nn.functional activations, distance / pooling helpers and losses
against NumPy/SciPy references written here (float64, from the same input values):
float32 and float64, non-contiguous and empty inputs, exact thresholds and large |x|,
every reduction, float64 central-difference gradients, argument errors, and a
value/gradient comparison with torch that runs only where torch is installed."""
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import xlogy

import kiln
import kiln.nn.functional as F

DTYPES = [np.float32, np.float64]
TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12)}


def R(seed=0):
    return np.random.default_rng(seed)


def kt(a, grad=False):
    return kiln.tensor(np.ascontiguousarray(a), requires_grad=grad)


def check(out, ref, dtype, shape=None):
    got = out.detach().numpy()
    assert got.dtype == np.dtype(dtype)
    assert got.shape == (np.shape(ref) if shape is None else shape)
    assert_allclose(got.astype(np.float64), ref, **TOL[np.dtype(dtype)])


# ----------------------------------------------------------------- references
def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0.0, beta * x) / beta)


def logsig(x):
    return -np.logaddexp(0.0, -x)


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def pnorm(d, p, axis=-1, keepdims=False):
    return (np.abs(d) ** p).sum(axis, keepdims=keepdims) ** (1.0 / p)


def cos_ref(a, b, axis=1, eps=1e-8):
    na = np.maximum(np.sqrt((a * a).sum(axis)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(axis)), eps)
    return (a * b).sum(axis) / (na * nb)


def pdist_ref(x, p):
    n = x.shape[0]
    return np.array([pnorm(x[i] - x[j], p) for i in range(n) for j in range(i + 1, n)]).reshape(-1)


def windows(shape, k, s, p=0, ceil=False):
    """Per output position, the input slices of a pooling window (clipped to the input)."""
    outs = []
    for L in shape:
        o = ((L + 2 * p - k + (s - 1 if ceil else 0)) // s) + 1
        if ceil and (o - 1) * s >= L + p:
            o -= 1
        outs.append(o)
    for pos in np.ndindex(*outs):
        yield pos, tuple(slice(max(q * s - p, 0), min(q * s - p + k, L)) for q, L in zip(pos, shape)), outs


def lp_pool_ref(x, norm, k, s=None, ceil=False):
    # torch: (avg_pool(x**p) * prod(kernel)) ** (1/p); avg_pool's divisor is the window
    # clipped to the input (padding 0), which matters only for ceil_mode's last window
    nd = x.ndim - 2
    s = s or k
    res = None
    for pos, sl, outs in windows(x.shape[2:], k, s, ceil=ceil):
        if res is None:
            res = np.zeros(x.shape[:2] + tuple(outs))
        w = x[(Ellipsis,) + sl] ** norm
        cnt = np.prod([t.stop - t.start for t in sl])
        res[(Ellipsis,) + pos] = (w.reshape(x.shape[:2] + (-1,)).sum(-1) / cnt * k ** nd) ** (1.0 / norm)
    return res


def unpool_ref(x, k, s, p, out_sp=None):
    sp = x.shape[2:]
    pooled = [(L + 2 * p - k) // s + 1 for L in sp]
    out_sp = tuple(out_sp or [(o - 1) * s - 2 * p + k for o in pooled])
    out = np.zeros(x.shape[:2] + out_sp)
    flat = out.reshape(x.shape[0], x.shape[1], -1)
    for nc in np.ndindex(*x.shape[:2]):
        for _, sl, _ in windows(sp, k, s, p):
            win = x[nc + sl]
            j = np.unravel_index(np.argmax(win), win.shape)
            pos = tuple(t.start + q for t, q in zip(sl, j))
            flat[nc + (np.ravel_multi_index(pos, sp),)] = x[nc + pos]
    return out


def lrn_ref(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    div = sum(sq[:, i:i + c] for i in range(size)) / size
    return x / (k + alpha * div) ** beta


# ------------------------------------------------------------------ activations
# id, kiln call, reference, half-range of random inputs, edge values
ACTS = [
    ("hardtanh", lambda t: F.hardtanh(t), lambda x: np.clip(x, -1, 1), 3, [-1.0, 1.0, -1.5, 1.5]),
    ("hardtanh_m2_3", lambda t: F.hardtanh(t, -2.0, 3.0), lambda x: np.clip(x, -2, 3), 4, [-2.0, 3.0]),
    ("relu6", lambda t: F.relu6(t), lambda x: np.clip(x, 0, 6), 8, [0.0, -0.0, 6.0, 1e30]),
    ("hardsigmoid", lambda t: F.hardsigmoid(t), lambda x: np.clip(x / 6 + 0.5, 0, 1), 5, [-3.0, 3.0, 0.0]),
    ("hardswish", lambda t: F.hardswish(t), lambda x: x * np.clip(x + 3, 0, 6) / 6, 5, [-3.0, 3.0, 0.0]),
    ("hardshrink", lambda t: F.hardshrink(t), lambda x: np.where(np.abs(x) > 0.5, x, 0.0), 2, [-0.5, 0.5]),
    ("hardshrink_1.25", lambda t: F.hardshrink(t, 1.25), lambda x: np.where(np.abs(x) > 1.25, x, 0.0), 3,
     [-1.25, 1.25]),
    ("softshrink", lambda t: F.softshrink(t), lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0)),
     2, [-0.5, 0.5]),
    ("softshrink_0", lambda t: F.softshrink(t, 0.0), lambda x: x, 2, [0.0]),
    ("tanhshrink", lambda t: F.tanhshrink(t), lambda x: x - np.tanh(x), 4, [0.0, 50.0, -50.0]),
    ("softsign", lambda t: F.softsign(t), lambda x: x / (1 + np.abs(x)), 10, [0.0, 50.0, -50.0]),
    ("softplus", lambda t: F.softplus(t), softplus_ref, 30, [-50.0, 50.0, 20.0, -20.0, 0.0, -1000.0]),
    ("softplus_b2_t5", lambda t: F.softplus(t, beta=2.0, threshold=5.0), lambda x: softplus_ref(x, 2.0, 5.0), 5,
     [2.5, 2.5009765625, -50.0, 50.0]),
    ("logsigmoid", lambda t: F.logsigmoid(t), logsig, 30, [-50.0, 50.0, -1000.0, 1000.0, 0.0]),
    ("mish", lambda t: F.mish(t), lambda x: x * np.tanh(softplus_ref(x)), 10, [-50.0, 50.0, 0.0, -1000.0]),
    ("threshold", lambda t: F.threshold(t, 0.25, -2.0), lambda x: np.where(x > 0.25, x, -2.0), 2, [0.25]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,call,ref,scale,edges", ACTS, ids=[a[0] for a in ACTS])
def test_activation_values(name, call, ref, scale, edges, dtype):
    a = R(1).uniform(-scale, scale, (4, 5)).astype(dtype)
    check(call(kt(a)), ref(a.astype(np.float64)), dtype)
    nc = kiln.tensor(a.T.copy()).t()
    assert not nc.is_contiguous()
    check(call(nc), ref(a.astype(np.float64)), dtype)
    e = np.array(edges, dtype=dtype)
    with np.errstate(over="ignore"):
        check(call(kt(e)), ref(e.astype(np.float64)), dtype)
    check(call(kt(np.zeros((0, 3), dtype))), np.zeros((0, 3)), dtype)


@pytest.mark.parametrize("name,kw,ref", [
    ("hardtanh", dict(min_val=-0.5, max_val=0.75), lambda x: np.clip(x, -0.5, 0.75)),
    ("relu6", {}, lambda x: np.clip(x, 0, 6)), ("hardsigmoid", {}, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("hardswish", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6), ("mish", {}, lambda x: x * np.tanh(softplus_ref(x))),
    ("threshold", dict(threshold=0.25, value=9.0), lambda x: np.where(x > 0.25, x, 9.0))],
    ids=lambda v: v if isinstance(v, str) else None)
def test_activation_inplace(name, kw, ref):
    a = R(2).uniform(-8, 8, (3, 4))
    x = kt(a)
    y = getattr(F, name)(x, inplace=True, **kw)
    check(x, ref(a), np.float64)
    check(y, ref(a), np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmin(dtype):
    a = R(3).normal(0, 3, (3, 4, 5)).astype(dtype)
    for d in (0, 1, 2, -1):
        check(F.softmin(kt(a), dim=d), softmax_ref(-a.astype(np.float64), d), dtype)
    check(F.softmin(kt(a), dim=1, dtype=kiln.float64), softmax_ref(-a.astype(np.float64), 1), np.float64)
    with warnings.catch_warnings():  # implicit dim: 0 for 0/1/3-d input, else 1 (torch)
        warnings.simplefilter("ignore")
        check(F.softmin(kt(a[0])), softmax_ref(-a[0].astype(np.float64), 1), dtype)
        check(F.softmin(kt(a)), softmax_ref(-a.astype(np.float64), 0), dtype)
    check(F.softmin(kiln.tensor(a[0].T.copy()).t(), dim=0), softmax_ref(-a[0].astype(np.float64), 0), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_normalize(dtype):
    a = R(4).normal(size=(3, 4)).astype(dtype)
    a[1] = 0  # zero row: norm clamped at eps -> zeros
    x = a.astype(np.float64)
    check(F.normalize(kt(a)), x / np.maximum(pnorm(x, 2, 1, True), 1e-12), dtype)
    check(F.normalize(kt(a), p=1.0, dim=0), x / np.maximum(pnorm(x, 1, 0, True), 1e-12), dtype)
    b = R(5).normal(size=(2, 3, 4)).astype(dtype)
    check(F.normalize(kt(b), p=3, dim=-1, eps=0.5), b / np.maximum(pnorm(b.astype(np.float64), 3, -1, True), 0.5),
          dtype)


def test_one_hot():
    idx = np.array([[0, 3], [2, 1], [3, 3]], dtype=np.int64)
    out = F.one_hot(kt(idx))
    assert out.dtype == kiln.int64
    assert_allclose(out.numpy(), np.eye(4, dtype=np.int64)[idx])
    assert_allclose(F.one_hot(kt(idx), num_classes=6).numpy(), np.eye(6, dtype=np.int64)[idx])
    assert F.one_hot(kt(np.zeros(0, np.int64)), 3).numpy().shape == (0, 3)
    with pytest.raises((ValueError, RuntimeError, IndexError)):
        F.one_hot(kt(idx), num_classes=3)
    with pytest.raises((ValueError, RuntimeError, IndexError)):
        F.one_hot(kt(np.array([1, -1])), num_classes=3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cosine_similarity_pairwise_pdist(dtype):
    r = R(6)
    a, b = (r.normal(size=(5, 4)).astype(dtype) for _ in range(2))
    a[2] = 0
    x, y = a.astype(np.float64), b.astype(np.float64)
    check(F.cosine_similarity(kt(a), kt(b)), cos_ref(x, y), dtype)
    check(F.cosine_similarity(kt(a), kt(b[:1])), cos_ref(x, y[:1]), dtype)  # broadcast
    check(F.cosine_similarity(kt(a), kiln.tensor(b.T.copy()).t(), dim=0, eps=0.5), cos_ref(x, y, 0, 0.5), dtype)
    for p in (1.0, 2.0, 3.0):
        check(F.pairwise_distance(kt(a), kt(b), p=p), pnorm(x - y + 1e-6, p), dtype)
        check(F.pdist(kt(a), p=p), pdist_ref(x, p), dtype)
    check(F.pairwise_distance(kt(a), kt(b), keepdim=True, eps=0.1), pnorm(x - y + 0.1, 2, keepdims=True), dtype)
    check(F.pairwise_distance(kt(a), kt(b[0])), pnorm(x - y[0] + 1e-6, 2), dtype)
    check(F.pairwise_distance(kt(a[0]), kt(b[0])), pnorm(x[0] - y[0] + 1e-6, 2), dtype)
    check(F.pdist(kt(a), p=3.5), pdist_ref(x, 3.5), dtype)
    check(F.pdist(kt(a[:1])), np.zeros(0), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_channel_shuffle_bilinear_lrn(dtype):
    r = R(7)
    a = r.normal(size=(2, 6, 3, 2)).astype(dtype)
    ref = a.reshape(2, 3, 2, 3, 2).transpose(0, 2, 1, 3, 4).reshape(a.shape)
    check(F.channel_shuffle(kt(a), 3), ref, dtype)
    check(F.channel_shuffle(kt(a[..., 0]), 2), a[..., 0].reshape(2, 2, 3, 3).transpose(0, 2, 1, 3).reshape(2, 6, 3),
          dtype)
    x1, x2 = r.normal(size=(2, 4, 3)).astype(dtype), r.normal(size=(2, 4, 5)).astype(dtype)
    w, bias = r.normal(size=(6, 3, 5)).astype(dtype), r.normal(size=6).astype(dtype)
    ref = np.einsum("bni,oij,bnj->bno", *(v.astype(np.float64) for v in (x1, w, x2)))
    check(F.bilinear(kt(x1), kt(x2), kt(w), kt(bias)), ref + bias, dtype)
    check(F.bilinear(kt(x1[0]), kt(x2[0]), kt(w)), ref[0], dtype)
    for shape, size, alpha, beta, k in [((2, 7, 5), 3, 1e-4, 0.75, 1.0), ((2, 7, 3, 4), 4, 0.05, 0.6, 2.0),
                                        ((1, 5, 2, 3, 2), 2, 0.1, 0.75, 1.0)]:
        x = r.normal(0, 2, shape).astype(dtype)
        ref = lrn_ref(x.astype(np.float64), size, alpha, beta, k)
        check(F.local_response_norm(kt(x), size, alpha, beta, k), ref, dtype)
        if alpha == 1e-4:
            check(F.local_response_norm(kt(x), size), ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lp_pool(dtype):
    r = R(8)
    x1 = r.normal(size=(2, 3, 9)).astype(dtype)
    check(F.lp_pool1d(kt(x1), 2, 3), lp_pool_ref(x1.astype(np.float64), 2, 3), dtype)
    p1 = np.abs(x1) + 0.1
    check(F.lp_pool1d(kt(p1), 3.0, 2, stride=1), lp_pool_ref(p1.astype(np.float64), 3.0, 2, 1), dtype)
    p1 = p1[..., :8]
    check(F.lp_pool1d(kt(p1), 1.5, 3, ceil_mode=True), lp_pool_ref(p1.astype(np.float64), 1.5, 3, ceil=True), dtype)
    x2 = np.abs(r.normal(size=(2, 2, 5, 6))).astype(dtype)
    check(F.lp_pool2d(kt(x2), 2, 2), lp_pool_ref(x2.astype(np.float64), 2, 2), dtype)
    check(F.lp_pool2d(kt(x2), 3, 3, stride=2), lp_pool_ref(x2.astype(np.float64), 3, 3, 2), dtype)
    check(F.lp_pool2d(kt(x2), 2, 2, ceil_mode=True), lp_pool_ref(x2.astype(np.float64), 2, 2, ceil=True), dtype)
    x3 = np.abs(r.normal(size=(1, 2, 4, 4, 5))).astype(dtype)
    check(F.lp_pool3d(kt(x3), 2, 2), lp_pool_ref(x3.astype(np.float64), 2, 2), dtype)


@pytest.mark.parametrize("nd,shape,k,s,p,out", [
    (1, (2, 3, 8), 2, 2, 0, None), (1, (1, 2, 9), 3, 2, 1, None), (2, (2, 3, 4, 6), 2, 2, 0, None),
    (2, (1, 2, 5, 5), 2, 2, 0, (5, 5)), (2, (1, 2, 5, 5), 3, 2, 1, None), (2, (1, 1, 5, 5), 2, 1, 0, None),
    (3, (1, 2, 4, 4, 6), 2, 2, 0, None), (3, (1, 1, 5, 4, 4), 2, 2, 0, (5, 4, 5))])
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_unpool_round_trip(nd, shape, k, s, p, out, dtype):
    x = R(9).normal(size=shape).astype(dtype)
    pooled, idx = getattr(F, f"max_pool{nd}d")(kt(x), k, stride=s, padding=p, return_indices=True)
    got = getattr(F, f"max_unpool{nd}d")(pooled, idx, k, stride=s, padding=p, output_size=out)
    check(got, unpool_ref(x.astype(np.float64), k, s, p, out), dtype)
    if out is not None:  # output_size may also carry the (N, C) dims
        got = getattr(F, f"max_unpool{nd}d")(pooled, idx, k, stride=s, padding=p, output_size=shape[:2] + out)
        check(got, unpool_ref(x.astype(np.float64), k, s, p, out), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gumbel_softmax(dtype):
    logits = kt(R(10).normal(size=(6, 5)).astype(dtype))
    for dim in (-1, 0):
        y = F.gumbel_softmax(logits, tau=0.5, dim=dim).numpy()
        assert y.shape == (6, 5) and y.dtype == dtype and np.all((y >= 0) & (y <= 1))
        assert_allclose(y.sum(dim), 1.0, rtol=1e-5)
        h = F.gumbel_softmax(logits, tau=2.0, hard=True, dim=dim).numpy()
        assert h.shape == (6, 5) and h.dtype == dtype
        onehot = np.moveaxis(np.eye(h.shape[dim])[np.argmax(h, dim)], -1, dim % 2)
        assert_allclose(h, onehot, atol=1e-6)


# ----------------------------------------------------------------------- losses
def mlm_ref(x, y):
    out = []
    for xi, yi in zip(x, y):
        t = list(yi[:list(yi).index(-1)] if -1 in list(yi) else yi)
        others = [i for i in range(len(xi)) if i not in t]
        out.append(sum(max(0.0, 1 - (xi[j] - xi[i])) for j in t for i in others) / len(xi))
    return np.array(out)


def mm_ref(x, y, p=1, margin=1.0, w=None):
    n, c = x.shape
    xy = x[np.arange(n), y][:, None]
    z = np.maximum(0.0, margin - xy + x) ** p
    if w is not None:
        z = z * w[y][:, None]
    z[np.arange(n), y] = 0
    return z.sum(1) / c


def cos_emb_ref(a, b, y, margin):
    c = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    return np.where(y == 1, 1 - c, np.maximum(0.0, c - margin))


def gnll_ref(x, t, v, full=False, eps=1e-6):
    if v.ndim == x.ndim - 1:
        v = v[..., None]
    v = np.maximum(v, eps)
    return 0.5 * (np.log(v) + (x - t) ** 2 / v) + (0.5 * np.log(2 * np.pi) if full else 0.0)


def pnll_ref(x, t, log_input=True, full=False, eps=1e-8):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        st = t * np.log(np.where(t > 1, t, 1)) - t + 0.5 * np.log(2 * np.pi * np.where(t > 1, t, 1))
        loss = loss + np.where(t > 1, st, 0.0)
    return loss


def triplet_ref(a, p, n, margin, dist, swap):
    dan = dist(a, n)
    if swap:
        dan = np.minimum(dan, dist(p, n))
    return np.maximum(dist(a, p) - dan + margin, 0.0)


def bce_ref(x, y, w=1.0):
    with np.errstate(divide="ignore"):
        return -w * (y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log(1 - x), -100))


def bcel_ref(x, y, w=1.0, pw=1.0):
    return w * (pw * y * -logsig(x) + (1 - y) * -logsig(-x))


def _loss_cases():
    r = R(11)
    n, c = 4, 5
    A, B, C = (r.normal(size=(n, c)) for _ in range(3))
    U, V = r.uniform(0.02, 0.98, (n, c)), r.uniform(0, 1, (n, c))
    pos = r.uniform(0.1, 2.0, (n, c))
    cnt = r.poisson(2.0, (n, c)).astype(np.float64)
    Y = r.integers(0, c, n)
    # after the first -1 ignored; no target; all targets; a repeated target counts twice (torch)
    ML = np.array([[3, 0, -1, 2, 1], [-1, 1, 2, 3, 4], [0, 1, 2, 3, 4], [4, 2, 4, -1, -1]], dtype=np.int64)
    T = softmax_ref(r.normal(size=(n, c)), 1)
    T[0, 1] = 0.0  # xlogy(0, 0) = 0
    w_c, w_n1 = r.uniform(0.5, 2, c), r.uniform(0.5, 2, (n, 1))
    pm = r.choice([-1.0, 1.0], (n, c))
    return [  # id, name, arrays, kwargs, reference of the unreduced loss
        ("l1", "l1_loss", [A, B], {}, lambda a, b: np.abs(a - b)),
        ("smooth_l1", "smooth_l1_loss", [A, B], {},
         lambda a, b: np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5)),
        ("smooth_l1_b0.5", "smooth_l1_loss", [A, B], dict(beta=0.5),
         lambda a, b: np.where(np.abs(a - b) < 0.5, (a - b) ** 2, np.abs(a - b) - 0.25)),
        ("smooth_l1_b0", "smooth_l1_loss", [A, B], dict(beta=0.0), lambda a, b: np.abs(a - b)),
        ("huber", "huber_loss", [A, B], {},
         lambda a, b: np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5)),
        ("huber_d2.5", "huber_loss", [2 * A, 2 * B], dict(delta=2.5),
         lambda a, b: np.where(np.abs(a - b) < 2.5, 0.5 * (a - b) ** 2, 2.5 * (np.abs(a - b) - 1.25))),
        ("kl_div", "kl_div", [A, T], {}, lambda x, t: xlogy(t, t) - t * x),
        ("kl_div_logt", "kl_div", [A, B], dict(log_target=True), lambda x, t: np.exp(t) * (t - x)),
        ("bce", "binary_cross_entropy", [U, V], {}, bce_ref),
        ("bce_w", "binary_cross_entropy", [U, V, w_c], {}, lambda x, y, w: bce_ref(x, y, w)),
        ("bce_logits", "binary_cross_entropy_with_logits", [3 * A, V], {}, bcel_ref),
        ("bce_logits_w_pw", "binary_cross_entropy_with_logits", [3 * A, V, w_n1, w_c], {}, bcel_ref),
        ("soft_margin", "soft_margin_loss", [3 * A, pm], {}, lambda x, y: np.logaddexp(0, -y * x)),
        ("margin_ranking", "margin_ranking_loss", [A[:, 0], B[:, 0], pm[:, 0]], {},
         lambda a, b, y: np.maximum(0.0, -y * (a - b))),
        ("margin_ranking_m", "margin_ranking_loss", [A, B, pm], dict(margin=0.3),
         lambda a, b, y: np.maximum(0.0, -y * (a - b) + 0.3)),
        ("hinge_emb", "hinge_embedding_loss", [A, pm], {}, lambda x, y: np.where(y == 1, x, np.maximum(0, 1 - x))),
        ("hinge_emb_m", "hinge_embedding_loss", [A, pm], dict(margin=0.5),
         lambda x, y: np.where(y == 1, x, np.maximum(0, 0.5 - x))),
        ("cos_emb", "cosine_embedding_loss", [A, B, pm[:, 0]], {}, lambda a, b, y: cos_emb_ref(a, b, y, 0.0)),
        ("cos_emb_m", "cosine_embedding_loss", [A, B, pm[:, 0]], dict(margin=-0.2),
         lambda a, b, y: cos_emb_ref(a, b, y, -0.2)),
        ("poisson", "poisson_nll_loss", [A, cnt], {}, pnll_ref),
        ("poisson_full", "poisson_nll_loss", [A, cnt], dict(full=True), lambda x, t: pnll_ref(x, t, full=True)),
        ("poisson_lin", "poisson_nll_loss", [pos, cnt], dict(log_input=False, eps=1e-3),
         lambda x, t: pnll_ref(x, t, False, eps=1e-3)),
        ("gaussian", "gaussian_nll_loss", [A, B, pos], {}, gnll_ref),
        ("gaussian_v1_full", "gaussian_nll_loss", [A, B, pos[:, :1]], dict(full=True),
         lambda x, t, v: gnll_ref(x, t, v, True)),
        ("gaussian_vn_eps", "gaussian_nll_loss", [A, B, pos[:, 0]], dict(eps=0.5),
         lambda x, t, v: gnll_ref(x, t, v, eps=0.5)),
        ("ml_soft_margin", "multilabel_soft_margin_loss", [A, (V > 0.5) * 1.0], {},
         lambda x, y: -(y * logsig(x) + (1 - y) * logsig(-x)).mean(1)),
        ("ml_soft_margin_w", "multilabel_soft_margin_loss", [A, (V > 0.5) * 1.0, w_c], {},
         lambda x, y, w: -(w * (y * logsig(x) + (1 - y) * logsig(-x))).mean(1)),
        ("multi_margin", "multi_margin_loss", [A, Y], {}, mm_ref),
        ("multi_margin_p2", "multi_margin_loss", [A, Y], dict(p=2, margin=0.7),
         lambda x, y: mm_ref(x, y, 2, 0.7)),
        ("multi_margin_w", "multi_margin_loss", [A, Y, w_c], {}, lambda x, y, w: mm_ref(x, y, 1, 1.0, w)),
        ("ml_margin", "multilabel_margin_loss", [A, ML], {}, mlm_ref),
        ("triplet", "triplet_margin_loss", [A, B, C], {},
         lambda a, p, n: triplet_ref(a, p, n, 1.0, lambda u, v: pnorm(u - v + 1e-6, 2), False)),
        ("triplet_p1_swap", "triplet_margin_loss", [A, B, C], dict(p=1, margin=0.5, swap=True, eps=1e-3),
         lambda a, p, n: triplet_ref(a, p, n, 0.5, lambda u, v: pnorm(u - v + 1e-3, 1), True)),
        ("triplet_dist", "triplet_margin_with_distance_loss", [A, B, C], {},
         lambda a, p, n: triplet_ref(a, p, n, 1.0, lambda u, v: pnorm(u - v + 1e-6, 2), False)),
        ("triplet_dist_cos_swap", "triplet_margin_with_distance_loss", [A, B, C],
         dict(distance_function=lambda a, b: 1 - F.cosine_similarity(a, b, dim=-1), margin=0.4, swap=True),
         lambda a, p, n: triplet_ref(a, p, n, 0.4, lambda u, v: 1 - cos_ref(u, v, axis=-1), True)),
    ]


LOSSES = _loss_cases()
WEIGHTED = {"bce_w": ["weight"], "bce_logits_w_pw": ["weight", "pos_weight"], "ml_soft_margin_w": ["weight"],
            "multi_margin_w": ["weight"]}


def call_loss(case, tensors, **extra):
    cid, name, _, kw, _ = case
    names = WEIGHTED.get(cid, [])
    pos = tensors[:len(tensors) - len(names)]
    return getattr(F, name)(*pos, **dict(zip(names, tensors[len(pos):])), **kw, **extra)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_values(case, reduction, dtype):
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in case[2]]
    ref = case[4](*(a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays))
    ref = {"none": ref, "mean": ref.mean(), "sum": ref.sum()}[reduction]
    check(call_loss(case, [kt(a) for a in arrays], reduction=reduction), ref, dtype)
    if reduction == "mean" and arrays[0].ndim == 2:  # non-contiguous first input
        ts = [kt(a) for a in arrays]
        ts[0] = kiln.tensor(arrays[0].T.copy()).t()
        check(call_loss(case, ts), ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_batchmean(log_target, dtype):
    x = R(12).normal(size=(3, 4)).astype(dtype)
    t = (R(13).normal(size=(3, 4)) if log_target else softmax_ref(R(13).normal(size=(3, 4)), 1)).astype(dtype)
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    ref = np.exp(t64) * (t64 - x64) if log_target else xlogy(t64, t64) - t64 * x64
    check(F.kl_div(kt(x), kt(t), reduction="batchmean", log_target=log_target), ref.sum() / 3, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_loss_edges(dtype):
    x = np.array([-500.0, -50.0, -1.0, 0.0, 50.0, 500.0, 50.0, -50.0], dtype=dtype)
    y = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0], dtype=dtype)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    check(F.binary_cross_entropy_with_logits(kt(x), kt(y), reduction="none"), bcel_ref(x64, y64), dtype)
    pw = np.full(8, 3.0, dtype)
    check(F.binary_cross_entropy_with_logits(kt(x), kt(y), pos_weight=kt(pw), reduction="none"),
          bcel_ref(x64, y64, pw=3.0), dtype)
    s = np.clip(x, -50, 50)  # beyond ~700 torch's own log1p(exp(-y x)) overflows
    check(F.soft_margin_loss(kt(s), kt(2 * y - 1), reduction="none"),
          np.logaddexp(0, -(2 * y64 - 1) * s.astype(np.float64)), dtype)
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 1e-30], dtype=dtype)
    t = np.array([1.0, 0.0, 0.5, 1.0, 0.5, 1.0], dtype=dtype)
    check(F.binary_cross_entropy(kt(p), kt(t), reduction="none"), bce_ref(p.astype(np.float64), t.astype(np.float64)),
          dtype)
    d = np.array([1.0, -1.0, 0.5, 3.0], dtype=dtype)  # |diff| exactly at beta / delta
    z = np.zeros(4, dtype)
    check(F.smooth_l1_loss(kt(d), kt(z), reduction="none", beta=1.0), [0.5, 0.5, 0.125, 2.5], dtype)
    check(F.huber_loss(kt(d), kt(z), reduction="none", delta=0.5), [0.375, 0.375, 0.125, 1.375], dtype)
    check(F.l1_loss(kt(np.zeros((0, 3), dtype)), kt(np.zeros((0, 3), dtype)), reduction="sum"), 0.0, dtype)
    check(F.l1_loss(kt(np.zeros((0, 3), dtype)), kt(np.zeros((0, 3), dtype)), reduction="none"), np.zeros((0, 3)),
          dtype)


def test_loss_legacy_args_and_bce_saturated_grad():
    a, b = R(14).normal(size=(2, 3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(F.l1_loss(kt(a), kt(b), size_average=False), np.abs(a - b).sum(), np.float64)
        check(F.l1_loss(kt(a), kt(b), reduce=False), np.abs(a - b), np.float64)
    # torch: d/dx = (x - y) / max(x (1 - x), 1e-12), finite at x = 0 and 1 (saturated sigmoids)
    x, y = np.array([0.0, 1.0, 0.0, 1.0, 0.25]), np.array([1.0, 0.0, 0.0, 1.0, 0.5])
    t = kt(x, grad=True)
    F.binary_cross_entropy(t, kt(y), reduction="sum").backward()
    assert_allclose(t.grad.numpy(), (x - y) / np.maximum(x * (1 - x), 1e-12), rtol=1e-10)


# -------------------------------------------------------------------- gradients
def _fd_check(fn, arrays, wrt):
    ts = [kt(a, grad=(i in wrt)) for i, a in enumerate(arrays)]
    fn(*ts).sum().backward()

    def f(arrs):
        return float(fn(*[kt(a) for a in arrs]).sum().numpy())

    h = 1e-6
    for i in wrt:
        num = np.zeros_like(arrays[i])
        for idx in np.ndindex(*arrays[i].shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[i][idx] += h
            minus[i][idx] -= h
            num[idx] = (f(plus) - f(minus)) / (2 * h)
        assert ts[i].grad is not None, f"no grad for argument {i}"
        assert_allclose(ts[i].grad.numpy(), num, rtol=1e-5, atol=1e-7, err_msg=f"argument {i}")


_g = R(15)
GA, GB, GC = (_g.normal(size=(3, 4)) for _ in range(3))
GPOS = _g.uniform(0.2, 2.0, (3, 4))
GT = softmax_ref(_g.normal(size=(3, 4)), 1)
BIG = np.array([[-50.0, -20.5, -3.0, -0.2, 0.0], [0.0, 0.7, 19.5, 25.0, 50.0]])  # incl. 0: softplus'(0) = 0.5
GL = 5 * GA
GL[0, :2] = 0.0
GRADS = [
    ("softplus", lambda x: F.softplus(x), [BIG], [0]),
    ("softplus_b2", lambda x: F.softplus(x, beta=2.0, threshold=5.0), [BIG], [0]),
    ("logsigmoid", lambda x: F.logsigmoid(x), [BIG], [0]),
    ("mish", lambda x: F.mish(x), [BIG], [0]),
    ("mish_normal", lambda x: F.mish(x), [3 * GA], [0]),
    ("hardswish", lambda x: F.hardswish(x), [np.array([-4.0, -2.5, -1.0, -0.2, 0.3, 1.7, 2.9, 4.0])], [0]),
    ("smooth_l1", lambda a, b: F.smooth_l1_loss(a, b, beta=0.7), [GA, GB], [0, 1]),
    ("huber", lambda a, b: F.huber_loss(a, b, delta=0.8, reduction="sum"), [GA, GB], [0, 1]),
    ("kl_div", lambda x, t: F.kl_div(x, t, reduction="batchmean"), [GA, GT], [0, 1]),
    ("kl_div_logt", lambda x, t: F.kl_div(x, t, log_target=True), [GA, GB], [0, 1]),
    ("bce_logits_pw", lambda x, y, pw: F.binary_cross_entropy_with_logits(x, y, pos_weight=pw),
     [GL, GT, GPOS[0]], [0, 1]),
    ("bce_logits", lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"), [GL, GT], [0, 1]),
    ("soft_margin", lambda x: F.soft_margin_loss(x, kt(np.sign(GB))), [GL], [0]),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b), [GA, GB], [0, 1]),
    ("pairwise_distance", lambda a, b: F.pairwise_distance(a, b), [GA, GB], [0, 1]),
    ("pairwise_distance_p3", lambda a, b: F.pairwise_distance(a, b, p=3.0, keepdim=True), [GA, GB], [0, 1]),
    ("gaussian_nll", lambda x, t, v: F.gaussian_nll_loss(x, t, v), [GA, GB, GPOS], [0, 1, 2]),
    ("gaussian_nll_v1", lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True), [GA, GB, GPOS[:, :1]], [0, 1, 2]),
    ("multi_margin", lambda x: F.multi_margin_loss(x, kt(np.array([0, 3, 1]))), [GA], [0]),
    ("multi_margin_p2_w", lambda x: F.multi_margin_loss(x, kt(np.array([2, 0, 1])), p=2, margin=0.5,
                                                        weight=kt(GPOS[0])), [GA], [0]),
]


@pytest.mark.parametrize("name,fn,arrays,wrt", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_fd(name, fn, arrays, wrt):
    _fd_check(fn, arrays, wrt)


# ----------------------------------------------------------------------- errors
@pytest.mark.parametrize("case", LOSSES, ids=[c[0] for c in LOSSES])
def test_bad_reduction(case):
    with pytest.raises(ValueError):
        call_loss(case, [kt(a) for a in case[2]], reduction="average")


def test_argument_errors():
    x = kt(np.linspace(-2, 2, 5))
    with pytest.raises((ValueError, RuntimeError)):
        F.softshrink(x, -0.5)
    with pytest.raises((ValueError, RuntimeError)):
        F.hardtanh(x, min_val=1.0, max_val=-1.0)
    with pytest.raises((ValueError, RuntimeError, IndexError)):
        F.one_hot(kt(np.array([0, 5])), num_classes=5)


# ------------------------------------------------------------------------ torch
_t = R(16)
TA, TB, TC = (_t.normal(size=(4, 6)) for _ in range(3))
TU, TV = _t.uniform(0.05, 0.95, (4, 6)), _t.uniform(0, 1, (4, 6))
TPM, TPOS = _t.choice([-1.0, 1.0], (4, 6)), _t.uniform(0.2, 2, (4, 6))
TY = np.array([0, 5, 2, 3])
TML = np.array([[3, 0, -1, 2, 1, 1], [-1, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [4, 1, 4, -1, -1, -1]])
TS = softmax_ref(TB, 1)
T4 = _t.normal(size=(2, 6, 4, 5))
BIGT = np.concatenate([BIG.ravel(), [20.0, -1000.0, 1000.0]])
TL = 8 * TA
TL[0, :2] = 0.0


def _unpool(nd, shape, k, s):
    x = _t.normal(size=shape)

    def fn(F, T, M):
        o, i = getattr(F, f"max_pool{nd}d")(T(x), k, stride=s, return_indices=True)
        return getattr(F, f"max_unpool{nd}d")(o, i, k, stride=s)
    return fn


# name, fn(F, T, M) -> tensor: the same call for kiln (F = kiln.nn.functional, T = kiln.tensor,
# M = kiln) and for torch, so each row holds the kiln call and the torch call.
TORCH = [
    ("hardtanh", lambda F, T, M: F.hardtanh(T(2 * TA), -0.5, 1.5)),
    ("relu6", lambda F, T, M: F.relu6(T(5 * TA))),
    ("hardsigmoid", lambda F, T, M: F.hardsigmoid(T(4 * TA))),
    ("hardswish", lambda F, T, M: F.hardswish(T(2 * TA))),
    ("hardshrink", lambda F, T, M: F.hardshrink(T(TA), 0.75)),
    ("softshrink", lambda F, T, M: F.softshrink(T(TA), 0.75)),
    ("tanhshrink", lambda F, T, M: F.tanhshrink(T(TA))),
    ("softsign", lambda F, T, M: F.softsign(T(TA))),
    ("softplus", lambda F, T, M: F.softplus(T(BIGT))),
    ("softplus_b", lambda F, T, M: F.softplus(T(TA * 4), beta=2.0, threshold=3.0)),
    ("logsigmoid", lambda F, T, M: F.logsigmoid(T(BIGT))),
    ("mish", lambda F, T, M: F.mish(T(3 * TA))),
    ("threshold", lambda F, T, M: F.threshold(T(TA), 0.25, -3.0)),
    ("softmin", lambda F, T, M: F.softmin(T(TA), dim=0)),
    ("softmin_dtype", lambda F, T, M: F.softmin(T(TA.astype(np.float32)), dim=1, dtype=M.float64)),
    ("normalize", lambda F, T, M: F.normalize(T(TA), p=3.0, dim=0)),
    ("one_hot", lambda F, T, M: F.one_hot(T(TY), 7)),
    ("cosine_similarity", lambda F, T, M: F.cosine_similarity(T(TA), T(TB))),
    ("pairwise_distance", lambda F, T, M: F.pairwise_distance(T(TA), T(TB), p=1.5, keepdim=True)),
    ("pdist", lambda F, T, M: F.pdist(T(TA), p=2.5)),
    ("channel_shuffle", lambda F, T, M: F.channel_shuffle(T(T4), 2)),
    ("bilinear", lambda F, T, M: F.bilinear(T(TA), T(TB[:, :5]), T(TC[:3, :, None].repeat(5, 2)), T(TA[0, :3]))),
    ("local_response_norm", lambda F, T, M: F.local_response_norm(T(T4), 3, alpha=0.1, beta=0.7, k=1.5)),
    ("lp_pool1d", lambda F, T, M: F.lp_pool1d(T(np.abs(T4[0])), 3.0, 2, ceil_mode=True)),
    ("lp_pool2d", lambda F, T, M: F.lp_pool2d(T(np.abs(T4)), 2.0, (2, 3), stride=1)),
    ("lp_pool3d", lambda F, T, M: F.lp_pool3d(T(np.abs(T4[None])), 2.0, 2)),
    ("gumbel_softmax_rowsum", lambda F, T, M: F.gumbel_softmax(T(TA), tau=0.5, hard=True).sum(-1)),
    ("max_unpool1d", _unpool(1, (2, 3, 8), 2, 2)),
    ("max_unpool2d", _unpool(2, (2, 3, 4, 6), 2, 2)),
    ("max_unpool3d", _unpool(3, (1, 2, 4, 4, 6), 2, 2)),
    ("l1_loss", lambda F, T, M: F.l1_loss(T(TA), T(TB), reduction="sum")),
    ("smooth_l1_loss", lambda F, T, M: F.smooth_l1_loss(T(TA), T(TB), beta=0.5)),
    ("huber_loss", lambda F, T, M: F.huber_loss(T(TA), T(TB), reduction="none", delta=0.6)),
    ("kl_div", lambda F, T, M: F.kl_div(T(TA), T(TS), reduction="batchmean")),
    ("kl_div_log", lambda F, T, M: F.kl_div(T(TA), T(TB), reduction="sum", log_target=True)),
    ("binary_cross_entropy", lambda F, T, M: F.binary_cross_entropy(T(TU), T(TV), weight=T(TPOS, False))),
    ("bce_with_logits", lambda F, T, M: F.binary_cross_entropy_with_logits(
        T(TL), T(TV), weight=T(TPOS[:1], False), pos_weight=T(TPOS[1], False), reduction="none")),
    ("soft_margin_loss", lambda F, T, M: F.soft_margin_loss(T(3 * TA), T(TPM))),
    ("margin_ranking_loss", lambda F, T, M: F.margin_ranking_loss(T(TA), T(TB), T(TPM), margin=0.2)),
    ("hinge_embedding_loss", lambda F, T, M: F.hinge_embedding_loss(T(TA), T(TPM), margin=0.7, reduction="sum")),
    ("cosine_embedding_loss", lambda F, T, M: F.cosine_embedding_loss(T(TA), T(TB), T(TPM[:, 0]), margin=-0.1)),
    ("poisson_nll_loss", lambda F, T, M: F.poisson_nll_loss(T(TA), T(np.round(TPOS * 3)), full=True)),
    ("poisson_nll_lin", lambda F, T, M: F.poisson_nll_loss(T(TPOS), T(np.round(TPOS * 3)), log_input=False)),
    ("gaussian_nll_loss", lambda F, T, M: F.gaussian_nll_loss(T(TA), T(TB), T(TPOS[:, :1]), full=True)),
    ("multilabel_soft_margin_loss", lambda F, T, M: F.multilabel_soft_margin_loss(
        T(TA), T((TV > 0.5) * 1.0), weight=T(TPOS[0]), reduction="none")),
    ("multi_margin_loss", lambda F, T, M: F.multi_margin_loss(T(TA), T(TY), p=2, margin=0.8, weight=T(TPOS[0], False))),
    ("multilabel_margin_loss", lambda F, T, M: F.multilabel_margin_loss(T(TA), T(TML), reduction="none")),
    ("triplet_margin_loss", lambda F, T, M: F.triplet_margin_loss(T(TA), T(TB), T(TC), margin=0.5, p=3, swap=True)),
    ("triplet_distance", lambda F, T, M: F.triplet_margin_with_distance_loss(
        T(TA), T(TB), T(TC), distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), margin=0.4, swap=True)),
    ("triplet_distance_default", lambda F, T, M: F.triplet_margin_with_distance_loss(T(TA), T(TB), T(TC))),
]
TORCH_GRAD = {"softplus", "logsigmoid", "mish", "hardswish", "softmin", "normalize", "cosine_similarity",
              "pairwise_distance", "pdist", "bilinear", "local_response_norm", "lp_pool2d", "smooth_l1_loss",
              "huber_loss", "kl_div", "kl_div_log", "binary_cross_entropy", "bce_with_logits",
              "cosine_embedding_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
              "multilabel_margin_loss", "triplet_margin_loss", "triplet_distance"}


def _run(fn, F, make, M, grad):
    made = []

    def T(a, g=True):  # g=False: an argument torch cannot differentiate (class weights)
        t = make(a, g and grad and a.dtype.kind == "f" and a.dtype != np.float32)
        made.append(t)
        return t
    out = fn(F, T, M)
    if grad:
        out.sum().backward()
    return out, made


def test_against_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF
    failures = []
    for name, fn in TORCH:
        grad = name in TORCH_GRAD
        try:
            ko, kin = _run(fn, F, lambda a, g: kiln.tensor(np.ascontiguousarray(a), requires_grad=g), kiln, grad)
            to, tin = _run(fn, TF, lambda a, g: torch.tensor(np.ascontiguousarray(a), requires_grad=g), torch, grad)
            kv, tv = ko.detach().numpy(), to.detach().numpy()
            assert kv.shape == tv.shape and kv.dtype == tv.dtype, (kv.shape, tv.shape, kv.dtype, tv.dtype)
            assert_allclose(kv, tv, rtol=1e-9, atol=1e-11)
            for i, (k, t) in enumerate(zip(kin, tin)):
                if t.grad is not None:
                    assert k.grad is not None, f"no grad for input {i}"
                    assert_allclose(k.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=f"grad {i}")
        except Exception as e:  # collect them all, report at the end
            failures.append(f"{name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


def test_gradients_at_the_kinks_are_torchs():
    """At a kink torch's backward picks one side; kiln's composites pick the same."""
    def grad(f, values):
        x = kiln.tensor(np.array(values, dtype=np.float64), requires_grad=True)
        f(x).sum().backward()
        return x.grad.numpy()

    np.testing.assert_array_equal(grad(F.hardtanh, [-1.0, 1.0, 0.5]), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(grad(F.relu6, [0.0, 6.0]), [0.0, 0.0])
    np.testing.assert_array_equal(grad(F.hardsigmoid, [-3.0, 3.0]), [0.0, 0.0])
    np.testing.assert_array_equal(grad(F.hardswish, [-3.0, 3.0]), [0.0, 1.0])
    np.testing.assert_array_equal(grad(F.softplus, [0.0]), [0.5])
    np.testing.assert_array_equal(grad(F.logsigmoid, [0.0]), [0.5])
    ones = kiln.tensor(np.array([1.0, -1.0]))
    np.testing.assert_array_equal(
        grad(lambda x: F.margin_ranking_loss(x, kiln.tensor(np.array([1.0, 3.0])), ones, reduction="none"),
             [1.0, 2.0]), [0.0, 0.0])
    # BCE at saturated inputs: (x - y) / max(x (1 - x), 1e-12), finite.
    g = grad(lambda x: F.binary_cross_entropy(x, kiln.tensor(np.array([1.0, 0.0, 0.0, 1.0])), reduction="sum"),
             [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(g, [-1e12, 1e12, 0.0, 0.0])
