"""float64 through F.linear and F.scaled_dot_product_attention (torch's math
formulation) against a NumPy float64 reference, with gradients (gradcheck-style
central differences) and torch when installed."""
import numpy as np
import pytest

import kiln
import kiln.nn.functional as F

RNG = np.random.default_rng(21)


def t(a, **kw):
    return kiln.tensor(a, **kw)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    s = (q @ np.swapaxes(k, -1, -2)) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return softmax(s) @ v


def test_linear_float64_matches_numpy_and_keeps_dtype():
    x, w, b = RNG.standard_normal((3, 4, 6)), RNG.standard_normal((5, 6)), RNG.standard_normal(5)
    y = F.linear(t(x), t(w), t(b))
    assert y.dtype == kiln.float64
    np.testing.assert_allclose(y.numpy(), x @ w.T + b, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(F.linear(t(x), t(w[0])).numpy(), x @ w[0], rtol=1e-13)
    with pytest.raises(TypeError, match="one dtype"):
        F.linear(t(x), t(w, dtype=kiln.float32))


def test_linear_float64_gradients_central_difference():
    x, w = RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3))
    xk = t(x).requires_grad_()
    wk = t(w).requires_grad_()
    (F.linear(xk, wk) ** 2).sum().backward()
    h = 1e-6
    for arr, grad, other in ((x, xk.grad.numpy(), w), (w, wk.grad.numpy(), x)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            p, m = arr.copy(), arr.copy()
            p[idx] += h
            m[idx] -= h
            f = (lambda a: ((a @ other.T) ** 2).sum()) if arr is x else (lambda a: ((other @ a.T) ** 2).sum())
            num[idx] = (f(p) - f(m)) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_float64_matches_reference(causal):
    q, k, v = (RNG.standard_normal((2, 3, 5, 8)), RNG.standard_normal((2, 3, 7, 8)),
               RNG.standard_normal((2, 3, 7, 4)))
    out = F.scaled_dot_product_attention(t(q), t(k), t(v), is_causal=causal)
    assert out.dtype == kiln.float64 and tuple(out.shape) == (2, 3, 5, 4)
    np.testing.assert_allclose(out.numpy(), sdpa_ref(q, k, v, causal=causal), rtol=1e-12, atol=1e-13)


def test_sdpa_float64_masks_scale_gqa():
    q, k, v = RNG.standard_normal((1, 4, 3, 6)), RNG.standard_normal((1, 2, 5, 6)), RNG.standard_normal((1, 2, 5, 6))
    bmask = RNG.random((3, 5)) < 0.7
    bmask[:, 0] = True  # every row sees a key
    fmask = RNG.standard_normal((3, 5))
    kk, vv = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    got = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(bmask), enable_gqa=True)
    np.testing.assert_allclose(got.numpy(), sdpa_ref(q, kk, vv, mask=bmask), rtol=1e-12, atol=1e-13)
    got = F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(fmask), enable_gqa=True, scale=0.3)
    np.testing.assert_allclose(got.numpy(), sdpa_ref(q, kk, vv, mask=fmask, scale=0.3), rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="cannot both"):
        F.scaled_dot_product_attention(t(q), t(kk), t(vv), attn_mask=t(bmask), is_causal=True)


def test_sdpa_float64_gradients_match_torch():
    torch = pytest.importorskip("torch")
    q, k, v = (RNG.standard_normal((2, 4, 6)) for _ in range(3))
    g = RNG.standard_normal((2, 4, 6))
    ks = [t(a).requires_grad_() for a in (q, k, v)]
    F.scaled_dot_product_attention(*ks, is_causal=True).backward(t(g))
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    torch.nn.functional.scaled_dot_product_attention(*ts, is_causal=True).backward(torch.tensor(g))
    for a, b in zip(ks, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
