"""Layer pieces (norms, SwiGLU, embedding, rotary, batch_norm, mse_loss) against NumPy."""
import ml_dtypes
import numpy as np
import pytest

import kiln

F = kiln.nn.functional
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (BF16, 1e-2), (np.float16, 2e-3), (np.float64, 1e-12)])
def test_norms(dtype, tol, rng):
    x = rng.standard_normal((3, 4, 65)).astype(dtype)
    w = rng.standard_normal(65).astype(dtype)
    b = rng.standard_normal(65).astype(dtype)
    xd, wd, bd = (a.astype(np.float64) for a in (x, w, b))
    want = xd / np.sqrt((xd**2).mean(-1, keepdims=True) + 1e-6) * wd
    np.testing.assert_allclose(np.asarray(F.rms_norm(kiln.tensor(x), (65,), kiln.tensor(w), 1e-6)).astype(np.float64), want, rtol=tol, atol=tol)
    mu = xd.mean(-1, keepdims=True)
    want = (xd - mu) / np.sqrt(((xd - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * wd + bd
    got = F.layer_norm(kiln.tensor(x), [65], weight=kiln.tensor(w), bias=kiln.tensor(b))
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [BF16, np.float16])
def test_rms_norm_default_eps_of_half_inputs_is_float32s(dtype, rng):
    # torch computes bf16/f16 rms_norm in float32 and adds float32's eps by default
    # (not finfo(bf16).eps = 0.0078, which would shrink small activations ~10x).
    x = (rng.standard_normal((3, 8)) * 1e-2).astype(dtype)
    xd = x.astype(np.float64)
    want = xd / np.sqrt((xd**2).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    got = np.asarray(F.rms_norm(kiln.tensor(x), (8,))).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


def test_softmax_dim_must_be_an_int():
    x = kiln.ones(2, 3)
    for bad in [(1,), [1], 1.5, "a"]:
        for f in (F.softmax, F.log_softmax, kiln.softmax):
            with pytest.raises(TypeError, match="dim"):
                f(x, dim=bad)
    np.testing.assert_allclose(np.asarray(F.softmax(x, dim=np.int64(1))), np.full((2, 3), 1 / 3), rtol=1e-6)


def test_swiglu(rng):
    g = (rng.standard_normal((5, 301)) * 6).astype(np.float32)
    u = rng.standard_normal((5, 301)).astype(np.float32)
    gd = g.astype(np.float64)
    np.testing.assert_allclose(np.asarray(F.silu_and_mul(kiln.tensor(g), kiln.tensor(u))), gd / (1 + np.exp(-gd)) * u, rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("wdtype", ["float32", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_embedding(wdtype, rng):
    w = rng.standard_normal((40, 16)).astype(np.float32)
    wt = kiln.tensor(w).to(getattr(kiln, wdtype))
    wq = np.asarray(wt.to(kiln.float32))
    idx = np.array([[3, 39], [0, 3]])
    if wdtype.startswith("float8"):
        s = rng.uniform(0.5, 2, 40).astype(np.float32)
        y = F.embedding(kiln.tensor(idx), wt, row_scale=kiln.tensor(s))
        assert y.dtype == kiln.float32
        np.testing.assert_allclose(np.asarray(y), wq[idx] * s[idx][..., None], rtol=1e-6)
    else:
        y = F.embedding(kiln.tensor(idx), wt)
        assert y.shape == (2, 2, 16)
        np.testing.assert_array_equal(np.asarray(y.to(kiln.float32)), wq[idx])
    with pytest.raises(IndexError):
        F.embedding(kiln.tensor(np.array([40])), wt)


def hf_rotate(x, cos, sin):  # x [.., T, H, D], cos/sin [T, D/2] (Hugging Face rotate_half)
    c = np.concatenate([cos, cos], -1)[:, None, :]
    s = np.concatenate([sin, sin], -1)[:, None, :]
    h = x.shape[-1] // 2
    rot = np.concatenate([-x[..., h:], x[..., :h]], -1)
    return x * c + rot * s


def test_rope(rng):
    T, H, D = 6, 4, 16
    inv = 1.0 / (10000.0 ** (np.arange(0, D, 2, dtype=np.int64).astype(np.float32) / D))
    np.testing.assert_allclose(np.asarray(F.rope_inv_freq(D, 10000.0)), inv, rtol=2.4e-7)
    pos = np.arange(3, 3 + T)
    cos, sin = F.rope_cos_sin(kiln.tensor(pos), F.rope_inv_freq(D))
    ang = pos[:, None].astype(np.float64) * inv.astype(np.float64)
    np.testing.assert_allclose(np.asarray(cos), np.cos(ang), atol=1e-6)
    x = rng.standard_normal((2, T, H, D)).astype(np.float32)
    y = F.apply_rotary_emb(kiln.tensor(x), cos, sin)
    np.testing.assert_allclose(np.asarray(y), hf_rotate(x, np.cos(ang), np.sin(ang)), atol=1e-5)
    # Interleaved == half-split on the de-interleaved layout.
    yi = np.asarray(F.apply_rotary_emb(kiln.tensor(x), cos, sin, interleaved=True))
    perm = np.concatenate([np.arange(0, D, 2), np.arange(1, D, 2)])
    np.testing.assert_allclose(yi[..., perm], hf_rotate(x[..., perm], np.cos(ang), np.sin(ang)), atol=1e-5)
    # Partial rotary: the last half of each head passes through.
    c2, s2 = F.rope_cos_sin(kiln.tensor(pos), F.rope_inv_freq(D // 2))
    yp = np.asarray(F.apply_rotary_emb(kiln.tensor(x), c2, s2))
    np.testing.assert_array_equal(yp[..., D // 2:], x[..., D // 2:])
    # Llama-3 scaling: the lowest frequencies are divided by factor.
    l3 = np.asarray(F.rope_inv_freq(128, 500000.0, rope_type="llama3", factor=8.0))
    base = np.asarray(F.rope_inv_freq(128, 500000.0))
    assert np.isclose(l3[-1], base[-1] / 8) and l3[0] == base[0]


def test_batch_norm_and_mse(rng):
    x = rng.standard_normal((6, 3, 4)).astype(np.float32)
    rm, rv = kiln.zeros(3), kiln.ones(3)
    y = np.asarray(F.batch_norm(kiln.tensor(x), rm, rv, training=True, momentum=0.2))
    mu = x.astype(np.float64).mean((0, 2))
    var = x.astype(np.float64).var((0, 2))
    np.testing.assert_allclose(y, (x - mu[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5), atol=1e-5)
    np.testing.assert_allclose(np.asarray(rm), 0.2 * mu, atol=1e-6)
    np.testing.assert_allclose(np.asarray(rv), 0.8 + 0.2 * x.astype(np.float64).var((0, 2), ddof=1), atol=1e-6)
    ye = np.asarray(F.batch_norm(kiln.tensor(x), rm, rv))
    np.testing.assert_allclose(ye, (x - np.asarray(rm)[None, :, None]) / np.sqrt(np.asarray(rv)[None, :, None] + 1e-5), atol=1e-5)
    a, b = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    assert np.isclose(float(F.mse_loss(kiln.tensor(a), kiln.tensor(b))), ((a - b) ** 2).mean(), rtol=1e-5)
    assert np.isclose(float(F.mse_loss(kiln.tensor(a), kiln.tensor(b), reduction="sum")), ((a - b) ** 2).sum(), rtol=1e-5)
    with pytest.raises(ValueError):
        F.mse_loss(kiln.tensor(a), kiln.tensor(b), reduction="avg")
