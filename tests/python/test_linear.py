# kiln.nn.functional.linear, kiln.matmul and FP8 quantization against float64
# NumPy references (ml_dtypes for the narrow types).
import contextlib

import ml_dtypes
import numpy as np
import pytest

import kiln

F = kiln.nn.functional
NP = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
      "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def kt(a):
    return kiln.from_numpy(np.ascontiguousarray(a))


def ref_linear(x, w, b=None, scale=None):
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    n, k = w.shape
    if scale is not None:
        s = np.asarray(scale, np.float64)
        if s.size == 1:
            w64 = w64 * s.reshape(())
        elif s.shape in ((n,), (n, 1)):
            w64 = w64 * s.reshape(n, 1)
        else:
            w64 = w64 * np.repeat(np.repeat(s, 128, 0), 128, 1)[:n, :k]
    y = x64 @ w64.T
    if b is not None:
        y = y + b.astype(np.float64)
    mag = np.abs(x64) @ np.abs(w64).T + (0 if b is None else np.abs(b.astype(np.float64)))
    return y, mag


def scale_for(kind, n, k, rng):
    if kind == "none":
        return None
    if kind == "tensor":
        return np.array(0.37, np.float32)
    if kind == "row":
        return (rng.random((n, 1)) + 0.5).astype(np.float32)
    return (rng.random(((n + 127) // 128, (k + 127) // 128)) + 0.5).astype(np.float32)


@pytest.mark.parametrize("wdt", list(NP))
@pytest.mark.parametrize("kind", ["none", "tensor", "row", "block"])
@pytest.mark.parametrize("m", [1, 2, 5, 16, 33])
def test_linear_weight_types_and_scales(wdt, kind, m, rng):
    n, k = 150, 260
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32).astype(NP[wdt])
    b = rng.standard_normal(n).astype(np.float32)
    s = scale_for(kind, n, k, rng)
    y = F.linear(kt(x), kt(w), kt(b), weight_scale=None if s is None else kt(s)).numpy()
    assert y.shape == (m, n) and y.dtype == np.float32
    want, mag = ref_linear(x, w, b, s)
    if rounds_x_to_bf16(m, wdt, kind):
        # The AVX512-BF16 GEMM: exact to bf16(x), within 2^-8 of sum |x w| of x itself.
        assert np.all(np.abs(y - want) <= (2.0**-8 + 1e-5) * mag + 1e-30)
        want, mag = ref_linear(x.astype(ml_dtypes.bfloat16), w, b, s)
    assert np.all(np.abs(y - want) <= 1e-5 * mag + 1e-30)


@contextlib.contextmanager
def kernel_switch(allowed, allow, value):
    # One of kiln's kernel switches set for a block, then restored.
    saved = allowed()
    try:
        allow(value)
        yield
    finally:
        allow(saved)


def rounds_x_to_bf16(m, wdt, kind):
    # Past the matrix-vector rows (6), bf16, f16 and FP8 weights, every scale
    # layout (f16 weights as hi + lo bf16 parts: exact to themselves).
    return (kiln.bf16_gemm_active() and m > 6
            and wdt in ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"))


@pytest.mark.parametrize("wdt", ["bfloat16", "float8_e4m3fn"])
def test_linear_exact_when_the_bf16_gemm_is_not_allowed(wdt, rng):
    m, n, k = 40, 150, 260
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32).astype(NP[wdt])
    with kernel_switch(kiln.bf16_gemm_allowed, kiln.allow_bf16_gemm, False):
        assert not kiln.bf16_gemm_active()
        y = F.linear(kt(x), kt(w)).numpy()
    want, mag = ref_linear(x, w)
    assert np.all(np.abs(y - want) <= 1e-5 * mag + 1e-30)


@pytest.mark.parametrize("amx", [True, False])
@pytest.mark.parametrize("wdt", ["bfloat16", "float8_e4m3fn"])
def test_linear_bf16_gemm_on_each_unit(amx, wdt, rng):
    # With AMX tiles allowed or not (on a CPU with AMX: the tiles or the
    # AVX512-BF16 kernel), the bf16 GEMM is exact to bf16(x) within float32
    # sums; 200 rows and K = 640 reach the tiles' many-token loop.
    if not kiln.bf16_gemm_active():
        pytest.skip("no bf16 GEMM on this CPU")
    m, n, k = 200, 96, 640
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32).astype(NP[wdt])
    with kernel_switch(kiln.amx_tiles_allowed, kiln.allow_amx_tiles, amx):
        assert kiln.amx_tiles_allowed() == amx
        if not amx:
            assert not kiln.amx_tiles_active()
        y = F.linear(kt(x), kt(w)).numpy()
    want, mag = ref_linear(x.astype(ml_dtypes.bfloat16), w)
    assert np.all(np.abs(y - want) <= 1e-5 * mag + 1e-30)


@pytest.mark.parametrize("xdt", ["bfloat16", "float16"])
def test_linear_narrow_activations_keep_dtype(xdt, rng):
    x = rng.standard_normal((2, 1, 64)).astype(NP[xdt])
    w = rng.standard_normal((24, 64)).astype(ml_dtypes.bfloat16)
    y = F.linear(kt(x), kt(w))
    assert y.dtype == getattr(kiln, xdt) and tuple(y.shape) == (2, 1, 24)
    want, _ = ref_linear(x.reshape(2, 64), w)
    np.testing.assert_allclose(y.numpy().astype(np.float64).reshape(2, 24), want, rtol=1 / 64, atol=1e-2)


def test_linear_non_contiguous_and_empty(rng):
    x = rng.standard_normal((48, 5)).astype(np.float32)
    w = rng.standard_normal((20, 96)).astype(np.float32)
    y = F.linear(kt(x).t(), kt(w)[:, :48]).numpy()
    np.testing.assert_allclose(y, x.T.astype(np.float64) @ w[:, :48].T, rtol=1e-5, atol=1e-5)
    z = F.linear(kiln.zeros(3, 0), kiln.zeros(4, 0), kiln.ones(4)).numpy()
    np.testing.assert_array_equal(z, np.ones((3, 4), np.float32))
    assert tuple(F.linear(kiln.zeros(0, 5), kiln.zeros(4, 5)).shape) == (0, 4)


def test_linear_torch_forms(rng):
    # torch also takes a 1-D weight (y = x @ w) and any bias that broadcasts to y.
    x = rng.standard_normal((3, 8)).astype(np.float32)
    w = rng.standard_normal((4, 8)).astype(np.float32)
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    for b in (np.float32(2.0), np.array([2.0], np.float32), rng.standard_normal((1, 4)).astype(np.float32),
              rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 1)).astype(np.float32)):
        y = F.linear(kt(x), kt(w), kt(np.asarray(b))).numpy()
        np.testing.assert_allclose(y, want + b, rtol=1e-5, atol=1e-5)
    v = F.linear(kt(x), kt(w[0]))
    assert tuple(v.shape) == (3,)
    np.testing.assert_allclose(v.numpy(), want[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.linear(kt(x[0]), kt(w[0]), kiln.tensor(1.5)).numpy(), want[0, 0] + 1.5,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="broadcast"):
        F.linear(kt(x), kt(w), kiln.zeros(5, 4))
    with pytest.raises(ValueError, match="broadcast"):
        F.linear(kt(x), kt(w), kiln.zeros(2, 4))


def test_linear_errors():
    x, w = kiln.zeros(2, 8), kiln.zeros(4, 8)
    with pytest.raises(ValueError, match=r"\[linear\]"):
        F.linear(x, kiln.zeros(4, 7))
    with pytest.raises(ValueError):
        F.linear(x, w, kiln.zeros(5))
    with pytest.raises(ValueError, match="weight_scale"):
        F.linear(x, w, weight_scale=kiln.zeros(3))
    with pytest.raises(TypeError):
        F.linear(kiln.zeros(2, 8, dtype=kiln.int32), w)


@pytest.mark.parametrize("gran", ["tensor", "row", "block"])
@pytest.mark.parametrize("dt", ["float8_e4m3fn", "float8_e5m2"])
def test_quantize_fp8_matches_numpy(gran, dt, rng):
    w = (rng.standard_normal((300, 260)) * 3).astype(np.float32)
    q, s = kiln.quantize_fp8(kt(w), granularity=gran, dtype=getattr(kiln, dt))
    qn, sn = q.numpy(), s.numpy()
    fmax = float(ml_dtypes.finfo(NP[dt]).max)
    if gran == "tensor":
        assert sn.shape == ()
        sfull = np.full(w.shape, sn, np.float32)
        np.testing.assert_allclose(sn, np.abs(w).max() / fmax, rtol=1e-6)
    elif gran == "row":
        assert sn.shape == (300, 1)
        sfull = np.broadcast_to(sn, w.shape)
        np.testing.assert_allclose(sn[:, 0], np.abs(w).max(1) / fmax, rtol=1e-6)
    else:
        assert sn.shape == (3, 3)
        sfull = np.repeat(np.repeat(sn, 128, 0), 128, 1)[:300, :260]
    want = np.clip(w / sfull, -fmax, fmax).astype(NP[dt])
    np.testing.assert_array_equal(qn.view(np.uint8), want.view(np.uint8))
    d = kiln.dequantize(q, s).numpy()
    np.testing.assert_allclose(d, qn.astype(np.float32) * sfull, rtol=1e-6)


@pytest.mark.parametrize("gran", ["tensor", "row", "block"])
def test_quantize_fp8_streams_narrow_inputs(gran, rng):
    # A bf16 stack whose rows span several of the quantizer's float32 groups
    # (about 8 MiB each): same codes as NumPy, and no float32 copy of the whole.
    K = 1 << 15
    w = (rng.standard_normal((2, 150, K)) * 0.02).astype(ml_dtypes.bfloat16)
    t = kt(w)
    kiln.reset_peak_memory_stats()
    base = kiln.memory_stats()["current_bytes"]
    q, s = kiln.quantize_fp8(t, granularity=gran)
    grew = kiln.memory_stats()["peak_bytes"] - base
    # The codes and one group (128 rows for blocks): a float32 copy would add
    # 4 bytes per weight (39 MB).
    assert grew < w.size + (24 << 20), grew
    wf = w.astype(np.float32)
    sn = s.numpy()
    if gran == "tensor":
        sfull = np.full(w.shape, sn, np.float32)
    elif gran == "row":
        sfull = np.broadcast_to(sn, w.shape)
        np.testing.assert_allclose(sn[..., 0], np.abs(wf).max(-1) / 448.0, rtol=1e-6)
    else:
        assert sn.shape == (2, 2, K // 128)
        sfull = np.repeat(np.repeat(sn, 128, 1), 128, 2)[:, :150]
    want = np.clip(wf / sfull, -448.0, 448.0).astype(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(q.numpy().view(np.uint8), want.view(np.uint8))
    bad = w.copy()
    bad[1, 140, 7] = np.nan
    with pytest.raises(ValueError, match=f"flat index {(150 + 140) * K + 7}"):
        kiln.quantize_fp8(kt(bad), granularity=gran)


@pytest.mark.parametrize("gran", ["tensor", "row", "block"])
def test_quantize_fp8_tiny_values_keep_a_positive_scale(gran):
    # amax / 448 underflows to 0 in float32 for these: the scale must stay
    # positive, so no code is 0/0 and dequantize gives back finite values.
    w = np.array([[1e-43, 0.0, -5e-44, 0.0]], np.float32)
    q, s = kiln.quantize_fp8(kt(w), granularity=gran)
    assert (s.numpy() > 0).all()
    d = kiln.dequantize(q, s).numpy()
    assert np.isfinite(d).all()
    np.testing.assert_allclose(d, w, rtol=0.1, atol=1e-45)


@pytest.mark.parametrize("M", [1, 3, 40])
@pytest.mark.parametrize("K", [16, 64, 200, 1000])
def test_fp8_nan_weight_codes_give_nan_rows(M, K):
    # e4m3fn S.1111.111 is NaN: every kernel (matrix-vector, small M, packed
    # GEMM) propagates it as IEEE arithmetic does, like torch; other rows stay exact.
    N = 13
    w = np.ones((N, K), np.float32)
    w[1, K // 3] = np.nan
    w[N - 1, K - 1] = -np.nan
    W = kt(w.astype(ml_dtypes.float8_e4m3fn))
    x = kiln.ones(M, K)
    nan_rows = [1, N - 1]
    for y in (F.linear(x, W), F.linear(x, W, weight_scale=kiln.ones(N))):
        y = y.numpy()
        assert np.isnan(y[:, nan_rows]).all()
        np.testing.assert_array_equal(np.delete(y, nan_rows, axis=1), np.full((M, N - 2), K, np.float32))
    one = kiln.ones(())
    y = kiln._scaled_mm(x.to(kiln.float8_e4m3fn), W.t(), one, one, out_dtype=kiln.float32).numpy()
    assert np.isnan(y[:, nan_rows]).all() and np.isfinite(np.delete(y, nan_rows, axis=1)).all()
    g = F.grouped_mm(x, W.unsqueeze(0).transpose(1, 2), offs=kt(np.array([M], np.int32)),
                     b_scale=kiln.ones(1, N)).numpy()
    assert np.isnan(g[:, nan_rows]).all() and np.isfinite(np.delete(g, nan_rows, axis=1)).all()


def test_quantize_errors():
    with pytest.raises(ValueError):
        kiln.quantize_fp8(kiln.zeros(4, 4), granularity="col")
    with pytest.raises(ValueError):
        kiln.quantize_fp8(kiln.tensor([1.0, float("nan")]))


def test_matmul_matches_numpy(rng):
    a = rng.standard_normal((2, 1, 3, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(kiln.matmul(kt(a), kt(b)).numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((kt(a) @ kt(b)).numpy(), a @ b, rtol=1e-5, atol=1e-5)
    v = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(kiln.matmul(kt(v), kt(b)).numpy(), v @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kiln.matmul(kt(v), kt(v)).numpy(), v @ v, rtol=1e-5)
    with pytest.raises(ValueError):
        kiln.matmul(kt(a), kt(a))
