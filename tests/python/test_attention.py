"""scaled_dot_product_attention against a NumPy float64 reference."""
import ml_dtypes
import numpy as np
import pytest

import kiln

F = kiln.nn.functional


def ref(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    if gqa and q.shape[-3] != k.shape[-3]:
        g = q.shape[-3] // k.shape[-3]
        k = np.repeat(k, g, axis=-3)
        v = np.repeat(v, g, axis=-3)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = s + (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask)
    m = np.max(s, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - m)
        p = p / p.sum(-1, keepdims=True)
    p = np.nan_to_num(p)  # fully masked rows -> zeros
    return p @ v


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("bfloat16", 2e-2), ("float16", 3e-3)])
@pytest.mark.parametrize("L,S", [(1, 1), (1, 517), (1, 2100), (13, 13), (7, 20), (20, 7)])
@pytest.mark.parametrize("causal", [False, True])
def test_gqa(dtype, tol, L, S, causal, rng):
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    q = rng.standard_normal((2, 8, L, 64)).astype(dt)
    k = rng.standard_normal((2, 2, S, 64)).astype(dt)
    v = rng.standard_normal((2, 2, S, 64)).astype(dt)
    y = F.scaled_dot_product_attention(kiln.tensor(q), kiln.tensor(k), kiln.tensor(v), is_causal=causal, enable_gqa=True)
    assert y.dtype == getattr(kiln, dtype) and y.shape == (2, 8, L, 64)
    np.testing.assert_allclose(np.asarray(y).astype(np.float64), ref(q, k, v, causal=causal, gqa=True), atol=tol, rtol=tol)


def test_masks_scale_and_broadcast(rng):
    q = rng.standard_normal((2, 3, 6, 33)).astype(np.float32)
    k = rng.standard_normal((2, 3, 11, 33)).astype(np.float32)
    v = rng.standard_normal((2, 3, 11, 17)).astype(np.float32)
    bm = rng.integers(0, 2, (6, 11)).astype(bool)
    bm[2] = False
    y = np.asarray(F.scaled_dot_product_attention(kiln.tensor(q), kiln.tensor(k), kiln.tensor(v), attn_mask=kiln.tensor(bm), scale=0.2))
    np.testing.assert_allclose(y, ref(q, k, v, mask=bm, scale=0.2), atol=2e-5)
    assert np.all(y[:, :, 2] == 0)
    am = rng.standard_normal((3, 1, 11)).astype(np.float32)
    y = F.scaled_dot_product_attention(kiln.tensor(q), kiln.tensor(k), kiln.tensor(v), attn_mask=kiln.tensor(am))
    np.testing.assert_allclose(np.asarray(y), ref(q, k, v, mask=am), atol=2e-5)
    # q [1, 1, 64] with k [2, 1, 1, 64] -> [2, 1, 1, 64].
    q1 = rng.standard_normal((1, 1, 64)).astype(np.float32)
    k2 = rng.standard_normal((2, 1, 1, 64)).astype(np.float32)
    y = F.scaled_dot_product_attention(kiln.tensor(q1), kiln.tensor(k2), kiln.tensor(k2))
    assert y.shape == (2, 1, 1, 64)
    np.testing.assert_allclose(np.asarray(y), k2, atol=1e-6)


def test_dropout_seeded(rng):
    q, k, v = (kiln.tensor(rng.standard_normal((1, 2, 5, 16)).astype(np.float32)) for _ in range(3))
    a = np.asarray(F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, generator=kiln.Generator().manual_seed(3)))
    b = np.asarray(F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, generator=kiln.Generator().manual_seed(3)))
    c = np.asarray(F.scaled_dot_product_attention(q, k, v))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_errors(rng):
    q = kiln.tensor(rng.standard_normal((1, 6, 2, 8)).astype(np.float32))
    k = kiln.tensor(rng.standard_normal((1, 4, 3, 8)).astype(np.float32))
    with pytest.raises(ValueError):
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    with pytest.raises(ValueError):
        F.scaled_dot_product_attention(q, k, k)
    with pytest.raises(ValueError):
        F.scaled_dot_product_attention(k, k, k, attn_mask=kiln.ones(3, 3, dtype=kiln.bool), is_causal=True)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(k, k.to(kiln.bfloat16), k)


def test_kv_cache(rng):
    c = kiln.KVCache(2, 1, 2, 64, 16, dtype=kiln.bfloat16)
    k = rng.standard_normal((2, 10, 16)).astype(np.float32)
    v = rng.standard_normal((2, 10, 16)).astype(np.float32)
    assert c.append(1, kiln.tensor(k), kiln.tensor(v)) == 10
    assert c.length(0) == 0 and c.keys(1).shape == (1, 2, 10, 16)
    np.testing.assert_array_equal(np.asarray(c.values(1, 4).to(kiln.float32))[0], v[:, :4].astype(ml_dtypes.bfloat16).astype(np.float32))
    with pytest.raises(ValueError):
        c.append(1, kiln.tensor(np.zeros((2, 60, 16), np.float32)), kiln.tensor(np.zeros((2, 60, 16), np.float32)))
