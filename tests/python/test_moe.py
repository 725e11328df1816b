# MoE routing / permutation / un-permute / fused SwiGLU FFN vs float64 NumPy.
import numpy as np
import pytest

import kiln

F = kiln.nn.functional


def kt(a):
    return kiln.from_numpy(np.ascontiguousarray(a))


def ref_ffn(x, rw, w1, w2, k, norm=True):
    x, rw, w1, w2 = (v.astype(np.float64) for v in (x, rw, w1, w2))
    i = w2.shape[2]
    logits = x @ rw.T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        ids = np.argsort(-p[t], kind="stable")[:k]
        wts = p[t, ids] / (p[t, ids].sum() if norm else 1)
        for e, wt in zip(ids, wts):
            h = w1[e] @ x[t]
            act = h[:i] / (1 + np.exp(-h[:i])) * h[i:]
            out[t] += wt * (w2[e] @ act)
    return out


def test_route_and_permute(rng):
    logits = rng.standard_normal((6, 8)).astype(np.float32)
    w, ids = F.moe_route(kt(logits), 3, norm_topk_prob=False)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want_ids = np.argsort(-p, 1, kind="stable")[:, :3]
    np.testing.assert_array_equal(ids.numpy(), want_ids)
    np.testing.assert_allclose(w.numpy(), np.take_along_axis(p, want_ids, 1), rtol=1e-5)
    perm, offs = F.moe_permute(ids, 8)
    pn, on = perm.numpy(), offs.numpy()
    np.testing.assert_array_equal(on, np.cumsum(np.bincount(ids.numpy().ravel(), minlength=8)))
    np.testing.assert_array_equal(ids.numpy().ravel()[pn], np.sort(ids.numpy().ravel(), kind="stable"))
    y = rng.standard_normal((18, 4)).astype(np.float32)
    u = F.moe_unpermute(kt(y), perm, w).numpy()
    inv = np.empty(18, np.int64)
    inv[pn] = np.arange(18)
    want = (y[inv].reshape(6, 3, 4) * w.numpy()[:, :, None]).sum(1)
    np.testing.assert_allclose(u, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("t", [1, 4, 24])
@pytest.mark.parametrize("wdt", ["float32", "bfloat16", "fp8"])
def test_moe_ffn(t, wdt, rng):
    e, h, i, k = 6, 40, 24, 2
    x = rng.standard_normal((t, h)).astype(np.float32)
    rw = rng.standard_normal((e, h)).astype(np.float32)
    w1 = (rng.standard_normal((e, 2 * i, h)) * .2).astype(np.float32)
    w2 = (rng.standard_normal((e, h, i)) * .2).astype(np.float32)
    kw = {}
    if wdt == "fp8":
        q1, s1 = kiln.quantize_fp8(kt(w1), granularity="row")
        q2, s2 = kiln.quantize_fp8(kt(w2), granularity="row")
        a1, a2 = q1, q2
        kw = dict(gate_up_scale=s1, down_scale=s2)
        r1, r2 = kiln.dequantize(q1, s1).numpy(), kiln.dequantize(q2, s2).numpy()
    else:
        a1, a2 = kt(w1).to(getattr(kiln, wdt)), kt(w2).to(getattr(kiln, wdt))
        r1, r2 = a1.to(kiln.float32).numpy(), a2.to(kiln.float32).numpy()
    want = ref_ffn(x, rw, r1, r2, k)
    saved = kiln.bf16_gemm_allowed()
    try:
        # Exact float32 products; then the AVX512-BF16 GEMM where this CPU has
        # it, which rounds the activations of expert groups past 8 rows (bf16
        # weights) to bf16: within that rounding (2^-8 of each product).
        kiln.allow_bf16_gemm(False)
        y = F.moe_ffn(kt(x), kt(rw), a1, a2, k, **kw).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        kiln.allow_bf16_gemm(True)
        y = F.moe_ffn(kt(x), kt(rw), a1, a2, k, **kw).numpy()
        np.testing.assert_allclose(y, want, rtol=2**-6, atol=2**-6)
    finally:
        kiln.allow_bf16_gemm(saved)


def test_moe_errors():
    with pytest.raises(ValueError):
        F.moe_route(kiln.zeros(2, 4), 5)
    with pytest.raises(IndexError):
        F.moe_permute(kt(np.array([[0, 9]], np.int32)), 4)
    with pytest.raises(ValueError):
        F.moe_ffn(kiln.zeros(1, 8), kiln.zeros(4, 8), kiln.zeros(4, 6, 8), kiln.zeros(4, 8, 4), 2)
