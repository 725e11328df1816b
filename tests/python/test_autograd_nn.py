"""Gradients of the matmul and nn front-ends against NumPy references: closed
forms where they are short (matmul, linear, swiglu, embedding), otherwise a
float64 NumPy forward differentiated by central differences."""

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F

RNG = np.random.default_rng(36)


def leaf(a):
    t = kiln.tensor(np.ascontiguousarray(a))
    t.requires_grad_()
    return t


def grad_of(t):
    return np.asarray(t.grad).astype(np.float64)


def sum_to(x, shape):
    """x summed down to a shape it was broadcast from."""
    while x.ndim > len(shape):
        x = x.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and x.shape[i] != 1:
            x = x.sum(i, keepdims=True)
    return x


def numeric_grad(f, x, g, h=1e-6):
    """d sum(f(x) * g) / dx by central differences, in float64."""
    x = x.astype(np.float64).copy()
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        x0 = x[i]
        x[i] = x0 + h
        fp = np.sum(f(x) * g)
        x[i] = x0 - h
        fm = np.sum(f(x) * g)
        x[i] = x0
        out[i] = (fp - fm) / (2 * h)
    return out


# ---- matmul / mm / bmm: d a = G B^T, d b = A^T G (1-D operands promoted) ----

@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 4, 5)),
                                   ((2, 3, 4), (4,)), ((4,), (4,)), ((3, 4), (2, 4, 5))])
def test_matmul_closed_form(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    out = np.matmul(a, b)
    g = RNG.standard_normal(out.shape)
    ka, kb = leaf(a), leaf(b)
    kiln.matmul(ka, kb).backward(kiln.tensor(g))
    A = a[None, :] if a.ndim == 1 else a
    B = b[:, None] if b.ndim == 1 else b
    G = g.reshape(np.matmul(A, B).shape)
    ga = sum_to(np.matmul(G, np.swapaxes(B, -1, -2)), A.shape).reshape(a.shape)
    gb = sum_to(np.matmul(np.swapaxes(A, -1, -2), G), B.shape).reshape(b.shape)
    np.testing.assert_allclose(grad_of(ka), ga, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad_of(kb), gb, rtol=1e-12, atol=1e-12)


def test_mm_and_bmm_closed_form():
    a, b, g = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2)), RNG.standard_normal((3, 2))
    ka, kb = leaf(a), leaf(b)
    kiln.mm(ka, kb).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(ka), g @ b.T, rtol=1e-12)
    np.testing.assert_allclose(grad_of(kb), a.T @ g, rtol=1e-12)
    a, b, g = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5)), RNG.standard_normal((2, 3, 5))
    ka, kb = leaf(a), leaf(b)
    kiln.bmm(ka, kb).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(ka), g @ b.transpose(0, 2, 1), rtol=1e-12)
    np.testing.assert_allclose(grad_of(kb), a.transpose(0, 2, 1) @ g, rtol=1e-12)


# ---- linear: d x = G W, d W = G^T X, d b = sum G ----

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_linear_closed_form(dtype):
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    w = RNG.standard_normal((5, 8)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    g = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    kd = getattr(kiln, dtype)
    kx, kw, kb = (kiln.tensor(t).to(kd) for t in (x, w, b))
    for t in (kx, kw, kb):
        t.requires_grad_()
    F.linear(kx, kw, kb).backward(kiln.tensor(g).to(kd))
    # the references read the operands as the kernel saw them (rounded to dtype)
    xr, wr, gr = (np.asarray(t.to(kiln.float32)).astype(np.float64) for t in (kx, kw, kiln.tensor(g).to(kd)))
    tol = 1e-5 if dtype == "float32" else 2e-2
    assert kx.grad.dtype == kd and kw.grad.dtype == kd
    np.testing.assert_allclose(np.asarray(kx.grad.to(kiln.float32)), gr @ wr, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(kw.grad.to(kiln.float32)),
                               gr.reshape(-1, 5).T @ xr.reshape(-1, 8), rtol=tol, atol=tol * 4)
    np.testing.assert_allclose(np.asarray(kb.grad.to(kiln.float32)), gr.sum((0, 1)), rtol=tol, atol=tol)


def test_linear_fp8_weight_gives_the_input_its_gradient():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    w = RNG.standard_normal((5, 8)).astype(ml_dtypes.float8_e4m3fn)
    scale = RNG.uniform(0.5, 1.5, (5, 1)).astype(np.float32)
    g = RNG.standard_normal((3, 5)).astype(np.float32)
    kx = leaf(x)
    F.linear(kx, kiln.tensor(w), weight_scale=kiln.tensor(scale)).backward(kiln.tensor(g))
    wd = w.astype(np.float64) * scale
    np.testing.assert_allclose(grad_of(kx), g.astype(np.float64) @ wd, rtol=1e-5, atol=1e-5)


def test_scaled_mm_bias_gradient():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = RNG.standard_normal((4, 16)).astype(ml_dtypes.float8_e4m3fn)
    b = RNG.standard_normal((8, 16)).astype(ml_dtypes.float8_e4m3fn).T
    one = kiln.tensor(np.array(1.0, np.float32))
    bias = kiln.tensor(RNG.standard_normal(8).astype(np.float32)).to(kiln.bfloat16)
    bias.requires_grad_()
    g = RNG.standard_normal((4, 8)).astype(np.float32)
    y = kiln._scaled_mm(kiln.tensor(a), kiln.tensor(np.ascontiguousarray(b.T)).t(), one, one, bias=bias,
                        out_dtype=kiln.bfloat16)
    y.backward(kiln.tensor(g).to(kiln.bfloat16))
    gb = np.asarray(kiln.tensor(g).to(kiln.bfloat16).to(kiln.float32)).astype(np.float64).sum(0)
    assert bias.grad.dtype == kiln.bfloat16
    np.testing.assert_allclose(np.asarray(bias.grad.to(kiln.float32)), gb, rtol=1e-2, atol=2e-2)


def i32(v):
    return kiln.tensor(np.array(v, np.int32))


def test_grouped_mm_2d_3d_closed_form():
    ends, K, N = [2, 2, 5], 4, 3
    a = RNG.standard_normal((6, K)).astype(np.float32)  # row 5 belongs to no group
    b = RNG.standard_normal((3, K, N)).astype(np.float32)
    bias = RNG.standard_normal((3, N)).astype(np.float32)
    g = RNG.standard_normal((6, N)).astype(np.float32)
    ka, kb, kbias = leaf(a), leaf(b), leaf(bias)
    F.grouped_mm(ka, kb, offs=i32(ends), bias=kbias).backward(kiln.tensor(g))
    ga, gb, gbias = np.zeros(a.shape), np.zeros(b.shape), np.zeros(bias.shape)
    s = 0
    for i, e in enumerate(ends):
        ga[s:e] = g[s:e] @ b[i].T
        gb[i] = a[s:e].T @ g[s:e]
        gbias[i] = g[s:e].sum(0)
        s = e
    for kt_, want in ((ka, ga), (kb, gb), (kbias, gbias)):
        np.testing.assert_allclose(grad_of(kt_), want, rtol=1e-5, atol=1e-5)


def test_grouped_mm_3d_2d_and_2d_2d_and_3d_3d_closed_form():
    # 3-D x 2-D: out[:, s:e] = a[g] @ b[:, s:e]
    a, b, g = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (4, 5), (3, 5)))
    ka, kb = leaf(a), leaf(b)
    F.grouped_mm(ka, kb, offs=i32([2, 5])).backward(kiln.tensor(g))
    ga = np.stack([g[:, :2] @ b[:, :2].T, g[:, 2:] @ b[:, 2:].T])
    gb = np.concatenate([a[0].T @ g[:, :2], a[1].T @ g[:, 2:]], 1)
    np.testing.assert_allclose(grad_of(ka), ga, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad_of(kb), gb, rtol=1e-5, atol=1e-5)
    # 2-D x 2-D: out[g] = a[:, s:e] @ b[s:e]
    a, b, g = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 5), (5, 4), (2, 3, 4)))
    ka, kb = leaf(a), leaf(b)
    F.grouped_mm(ka, kb, offs=i32([1, 5])).backward(kiln.tensor(g))
    ga = np.concatenate([g[0] @ b[:1].T, g[1] @ b[1:].T], 1)
    gb = np.concatenate([a[:, :1].T @ g[0], a[:, 1:].T @ g[1]], 0)
    np.testing.assert_allclose(grad_of(ka), ga, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad_of(kb), gb, rtol=1e-5, atol=1e-5)
    # 3-D x 3-D: a batched matmul
    a, b, g = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 4, 5), (2, 3, 5)))
    ka, kb = leaf(a), leaf(b)
    F.grouped_mm(ka, kb).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(ka), g @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad_of(kb), a.transpose(0, 2, 1) @ g, rtol=1e-5, atol=1e-5)


# ---- normalization: NumPy float64 forwards, central differences ----

def np_layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def test_layer_norm_central_differences():
    x, w, b = RNG.standard_normal((3, 6)), RNG.standard_normal(6), RNG.standard_normal(6)
    g = RNG.standard_normal((3, 6))
    kx, kw, kb = leaf(x), leaf(w), leaf(b)
    F.layer_norm(kx, [6], weight=kw, bias=kb, eps=1e-5).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(kx), numeric_grad(lambda t: np_layer_norm(t, w, b, 1e-5), x, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_of(kw), numeric_grad(lambda t: np_layer_norm(x, t, b, 1e-5), w, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_of(kb), g.sum(0), rtol=1e-12)


def test_rms_norm_central_differences():
    x, w, g = RNG.standard_normal((4, 5)), RNG.standard_normal(5), RNG.standard_normal((4, 5))
    kx, kw = leaf(x), leaf(w)
    F.rms_norm(kx, (5,), kw, 1e-6).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(kx), numeric_grad(lambda t: np_rms_norm(t, w, 1e-6), x, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_of(kw), numeric_grad(lambda t: np_rms_norm(x, t, 1e-6), w, g), rtol=1e-6, atol=1e-8)


def np_batch_norm(x, w, b, mean=None, var=None, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if mean is None:
        mean, var = x.mean(axes), x.var(axes)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_central_differences(training):
    x, w, b = RNG.standard_normal((4, 3, 5)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3)
    g = RNG.standard_normal(x.shape)
    kx, kw, kb = leaf(x), leaf(w), leaf(b)
    stats = (None, None) if training else (rm, rv)
    F.batch_norm(kx, None if training else kiln.tensor(rm), None if training else kiln.tensor(rv), weight=kw,
                 bias=kb, training=training).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(kx), numeric_grad(lambda t: np_batch_norm(t, w, b, *stats), x, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_of(kw), numeric_grad(lambda t: np_batch_norm(x, t, b, *stats), w, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_of(kb), g.sum((0, 2)), rtol=1e-12)


# ---- swiglu, embedding, rotary ----

def test_swiglu_closed_form():
    a, u, g = RNG.standard_normal(7), RNG.standard_normal(7), RNG.standard_normal(7)
    ka, ku = leaf(a), leaf(u)
    F.swiglu(ka, ku).backward(kiln.tensor(g))
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(grad_of(ka), g * u * s * (1 + a * (1 - s)), rtol=1e-12)
    np.testing.assert_allclose(grad_of(ku), g * a * s, rtol=1e-12)


def test_embedding_repeated_ids_accumulate_and_padding_row_gets_none():
    w = RNG.standard_normal((5, 3))
    ids = np.array([[1, 3, 1], [0, 1, 3]])
    g = RNG.standard_normal((2, 3, 3))
    kw = leaf(w)
    F.embedding(kiln.tensor(ids), kw, padding_idx=3).backward(kiln.tensor(g))
    want = np.zeros_like(w)
    for i, v in np.ndenumerate(ids):
        if v != 3:
            want[v] += g[i]
    np.testing.assert_allclose(grad_of(kw), want, rtol=1e-12)
    kw = leaf(w)
    F.embedding(kiln.tensor(ids), kw, padding_idx=-2).backward(kiln.tensor(g))  # -2 is row 3
    np.testing.assert_allclose(grad_of(kw), want, rtol=1e-12)


def test_rotary_gradient_is_the_inverse_rotation():
    T, H, D = 3, 2, 6
    x, g = RNG.standard_normal((T, H, D)), RNG.standard_normal((T, H, D))
    ang = RNG.standard_normal((T, D // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)

    def np_rope(t):
        c, s = cos.astype(np.float64)[:, None], sin.astype(np.float64)[:, None]
        x1, x2 = t[..., : D // 2], t[..., D // 2:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    kx = leaf(x)
    F.apply_rotary_emb(kx, kiln.tensor(cos), kiln.tensor(sin)).backward(kiln.tensor(g))
    np.testing.assert_allclose(grad_of(kx), numeric_grad(np_rope, x, g), rtol=1e-6, atol=1e-8)


def test_mse_loss_closed_form():
    x, t = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    kx, kt = leaf(x), leaf(t)
    F.mse_loss(kx, kt).backward()
    np.testing.assert_allclose(grad_of(kx), 2 * (x - t) / x.size, rtol=1e-12)
    np.testing.assert_allclose(grad_of(kt), -2 * (x - t) / x.size, rtol=1e-12)


# ---- cross_entropy / nll_loss ----

def np_log_softmax(x, axis):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def np_cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", eps=0.0):
    """torch's cross_entropy in float64 (class dim 1)."""
    C = x.shape[1]
    logp = np_log_softmax(x, 1)
    w = np.ones(C) if weight is None else weight
    wb = w.reshape((1, C) + (1,) * (x.ndim - 2))
    if target.dtype.kind == "f":
        q = (target * (1 - eps) + eps / C) * wb
        loss = -(q * logp).sum(1)
        return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / (x.size / C)}[reduction]
    kept = target != ignore_index
    t = np.where(kept, target, 0)
    nll = -np.take_along_axis(logp, t[:, None], 1)[:, 0] * w[t] * kept
    smooth = -(logp * wb).sum(1) * kept
    denom = (w[t] * kept).sum()
    if reduction == "none":
        return (1 - eps) * nll + eps / C * smooth
    if reduction == "sum":
        return (1 - eps) * nll.sum() + eps / C * smooth.sum()
    return (1 - eps) * nll.sum() / denom + eps / C * smooth.sum() / denom


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_indices(reduction, eps, weighted):
    x = RNG.standard_normal((4, 5, 2))
    target = np.array([[1, 4], [-100, 0], [2, 2], [3, -100]])
    weight = RNG.uniform(0.5, 2.0, 5) if weighted else None
    want = np_cross_entropy(x, target, weight, -100, reduction, eps)
    kx = leaf(x)
    out = F.cross_entropy(kx, kiln.tensor(target), None if weight is None else kiln.tensor(weight),
                          reduction=reduction, label_smoothing=eps)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(np.shape(want))
    out.backward(kiln.tensor(np.asarray(g)))
    ref = numeric_grad(lambda t: np_cross_entropy(t, target, weight, -100, reduction, eps), x, g)
    np.testing.assert_allclose(grad_of(kx), ref, rtol=1e-6, atol=1e-8)
    assert np.all(grad_of(kx)[1, :, 0] == 0) and np.all(grad_of(kx)[3, :, 1] == 0)  # ignored


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_probabilities(reduction):
    x = RNG.standard_normal((3, 4))
    p = RNG.uniform(size=(3, 4))
    p /= p.sum(1, keepdims=True)
    weight = RNG.uniform(0.5, 2.0, 4)
    want = np_cross_entropy(x, p, weight, reduction=reduction, eps=0.1)
    kx, kp = leaf(x), leaf(p)
    out = F.cross_entropy(kx, kp, kiln.tensor(weight), reduction=reduction, label_smoothing=0.1)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-10)
    g = RNG.standard_normal(np.shape(want))
    out.backward(kiln.tensor(np.asarray(g)))
    f = lambda t: np_cross_entropy(t, p, weight, reduction=reduction, eps=0.1)  # noqa: E731
    np.testing.assert_allclose(grad_of(kx), numeric_grad(f, x, g), rtol=1e-6, atol=1e-8)
    f = lambda t: np_cross_entropy(x, t, weight, reduction=reduction, eps=0.1)  # noqa: E731
    np.testing.assert_allclose(grad_of(kp), numeric_grad(f, p, g), rtol=1e-6, atol=1e-8)


def test_nll_loss_matches_cross_entropy_on_log_probabilities():
    x = RNG.standard_normal((4, 3))
    target = np.array([0, 2, -100, 1])
    kx = leaf(np_log_softmax(x, 1))
    out = F.nll_loss(kx, kiln.tensor(target))
    np.testing.assert_allclose(float(np.asarray(out)), np_cross_entropy(x, target), rtol=1e-12)
    out.backward()
    want = np.zeros((4, 3))
    for i, t in enumerate(target):
        if t != -100:
            want[i, t] = -1 / 3
    np.testing.assert_allclose(grad_of(kx), want, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_1d_input_custom_ignore_and_float32(reduction):
    # A 1-D input (no batch: class dim 0), int32 targets with ignore_index=2,
    # float32 logits; and nll_loss with a weight.
    x = RNG.standard_normal((6, 7)).astype(np.float32)
    target = np.array([1, 2, 6, 0, 2, 3], np.int32)
    weight = RNG.uniform(0.5, 2.0, 7)
    want = np_cross_entropy(x.astype(np.float64), target, weight, 2, reduction, 0.1)
    out = F.cross_entropy(kiln.tensor(x), kiln.tensor(target), kiln.tensor(weight.astype(np.float32)),
                          ignore_index=2, reduction=reduction, label_smoothing=0.1)
    assert out.dtype == kiln.float32
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6, atol=1e-6)
    one = F.cross_entropy(leaf(x[0].astype(np.float64)), kiln.tensor(np.array(3)), reduction=reduction)
    np.testing.assert_allclose(float(np.asarray(one)), -np_log_softmax(x[:1].astype(np.float64), 1)[0, 3],
                               rtol=1e-12)
    kx = leaf(np_log_softmax(x.astype(np.float64), 1))
    nl = F.nll_loss(kx, kiln.tensor(target), kiln.tensor(weight), ignore_index=2, reduction=reduction)
    np.testing.assert_allclose(np.asarray(nl), np_cross_entropy(x.astype(np.float64), target, weight, 2,
                                                                reduction), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(np.shape(np.asarray(nl)))
    nl.backward(kiln.tensor(np.asarray(g)))
    scale = g if reduction == "none" else np.full(6, float(g))
    if reduction == "mean":
        scale = scale / sum(weight[t] for t in target if t != 2)
    want_g = np.zeros((6, 7))
    for i, t in enumerate(target):
        if t != 2:
            want_g[i, t] = -weight[t] * scale[i]
    np.testing.assert_allclose(grad_of(kx), want_g, rtol=1e-10, atol=1e-12)


def test_cross_entropy_builds_no_dense_target():
    # Class indices: the forward holds log_softmax's output and little more (a
    # one-hot target distribution would be another input-sized tensor).
    x = kiln.tensor(RNG.standard_normal((512, 8192)).astype(np.float32))
    x.requires_grad_(True)
    target = kiln.tensor(RNG.integers(0, 8192, 512))
    kiln.reset_peak_memory_stats()
    base = kiln.memory_stats()["current_bytes"]
    loss = F.cross_entropy(x, target, label_smoothing=0.1)
    grew = kiln.memory_stats()["peak_bytes"] - base
    assert grew < 1.3 * 512 * 8192 * 4, grew
    loss.backward()
    assert x.grad.shape == (512, 8192)


def test_cross_entropy_rejects_out_of_range_targets():
    with pytest.raises(IndexError, match=r"^\[cross_entropy\]"):
        F.cross_entropy(kiln.tensor(np.zeros((2, 3))), kiln.tensor(np.array([0, 3])))


# ---- scaled_dot_product_attention (float32 kernels, float64 references) ----

def np_sdpa(q, k, v, mask=None, causal=False, gqa=False):
    if gqa:
        rep = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, rep, -3), np.repeat(v, rep, -3)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    with np.errstate(invalid="ignore"):  # a fully masked row: NaN here, zeros in kiln
        p = np.exp(s - s.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("case", ["plain", "causal", "gqa", "mask", "long"])
def test_sdpa_central_differences(case):
    L = 70 if case == "long" else 5  # "long" crosses the backward's block of query rows
    hq, hk = (4, 2) if case == "gqa" else (2, 2)
    q = RNG.uniform(-1, 1, (1, hq, L, 4))
    k = RNG.uniform(-1, 1, (1, hk, 6, 4))
    v = RNG.uniform(-1, 1, (1, hk, 6, 3))
    mask = RNG.uniform(size=(L, 6)) > 0.3 if case == "mask" else None
    if mask is not None:
        mask[0] = False  # a row with every key masked gives zeros and no gradient
    causal = case in ("causal", "long")
    g = RNG.standard_normal((1, hq, L, 3))
    kq, kk, kv = (leaf(t.astype(np.float32)) for t in (q, k, v))
    q, k, v = (t.astype(np.float32).astype(np.float64) for t in (q, k, v))
    out = F.scaled_dot_product_attention(kq, kk, kv, attn_mask=None if mask is None else kiln.tensor(mask),
                                         is_causal=causal, enable_gqa=case == "gqa")
    out.backward(kiln.tensor(g.astype(np.float32)))

    def f(which):
        def run(t):
            args = [q, k, v]
            args[which] = t
            r = np_sdpa(*args, mask=mask, causal=causal, gqa=case == "gqa")
            return np.nan_to_num(r)  # the all-masked row: zeros, as kiln
        return run

    for i, (kt, t) in enumerate(((kq, q), (kk, k), (kv, v))):
        if case == "long" and i == 0:
            continue  # q's numeric gradient over 280 elements is slow; dk and dv see every block
        np.testing.assert_allclose(grad_of(kt), numeric_grad(f(i), t, g), rtol=2e-4, atol=2e-5)


def test_against_torch_when_available():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 5, 3))
    target = np.array([[1, 4, -100], [0, 2, 2], [3, 3, 1], [-100, 0, 4]])
    kx = leaf(x)
    F.cross_entropy(kx, kiln.tensor(target), label_smoothing=0.1).backward()
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.cross_entropy(tx, torch.tensor(target), label_smoothing=0.1).backward()
    np.testing.assert_allclose(grad_of(kx), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    q, k, v = (RNG.standard_normal((1, 4, 6, 8)).astype(np.float32) for _ in range(3))
    kq, kk, kv = leaf(q), leaf(k[:, :2]), leaf(v[:, :2])
    ones = kiln.tensor(np.ones((1, 4, 6, 8), np.float32))
    F.scaled_dot_product_attention(kq, kk, kv, is_causal=True, enable_gqa=True).backward(ones)
    tq, tk, tv = (torch.tensor(t, requires_grad=True) for t in (q, k[:, :2], v[:, :2]))
    torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True, enable_gqa=True).sum().backward()
    for kt_, tt in ((kq, tq), (kk, tk), (kv, tv)):
        np.testing.assert_allclose(grad_of(kt_), tt.grad.numpy(), rtol=1e-4, atol=1e-5)
