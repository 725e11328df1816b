# kiln.nn.functional.scaled_mm / kiln._scaled_mm against float64 NumPy.
import ml_dtypes
import numpy as np
import pytest

import kiln

F = kiln.nn.functional
E4 = ml_dtypes.float8_e4m3fn


def kt(a):
    return kiln.from_numpy(np.ascontiguousarray(a))


def ref(a, b, sa, sb):
    m, k = a.shape
    n = b.shape[1]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if sa.size == 1 and sb.size == 1:
        a64 *= float(sa.reshape(()))
        b64 *= float(sb.reshape(()))
    elif sa.shape == (m, 1):
        a64 *= sa
        b64 *= sb
    else:
        a64 *= np.repeat(sa, 128, 1)[:, :k]
        b64 *= np.repeat(np.repeat(sb, 128, 0), 128, 1)[:k, :n]
    return a64 @ b64, np.abs(a64) @ np.abs(b64)


@pytest.mark.parametrize("m", [1, 4, 20])
@pytest.mark.parametrize("scheme", ["tensor", "row", "block"])
@pytest.mark.parametrize("out", ["float32", "bfloat16", "float16"])
def test_scaled_mm(m, scheme, out, rng):
    k, n = 260, 140
    a = rng.standard_normal((m, k)).astype(E4)
    b = rng.standard_normal((n, k)).astype(E4).T  # column-major, as torch wants mat2
    if scheme == "tensor":
        sa, sb = np.array(0.5, np.float32), np.array(1.5, np.float32)
    elif scheme == "row":
        sa, sb = (rng.random((m, 1)) + .5).astype(np.float32), (rng.random((1, n)) + .5).astype(np.float32)
    else:
        sa, sb = (rng.random((m, 3)) + .5).astype(np.float32), (rng.random((3, 2)) + .5).astype(np.float32)
    bias = None if out == "float32" else rng.standard_normal(n).astype(np.float32)
    kb = None if bias is None else kt(bias).to(getattr(kiln, out))
    y = kiln._scaled_mm(kt(a), kt(b.T).t(), kt(sa), kt(sb), bias=kb, out_dtype=getattr(kiln, out))
    assert y.dtype == getattr(kiln, out)
    want, mag = ref(a, b, sa, sb)
    if bias is not None:
        want = want + kb.to(kiln.float32).numpy()
    rt = {"float32": 0, "bfloat16": 1 / 128, "float16": 1 / 1024}[out]
    got = y.to(kiln.float32).numpy().astype(np.float64)
    assert np.all(np.abs(got - want) <= 1e-5 * mag + rt * np.abs(want) + 1e-6)


def test_scaled_mm_checks():
    a = kiln.zeros(2, 32).to(kiln.float8_e4m3fn)
    b = kiln.zeros(32, 16).to(kiln.float8_e4m3fn)
    one = kiln.ones(())
    with pytest.raises(ValueError, match="bias"):
        F.scaled_mm(a, b, one, one, bias=kiln.ones(16, dtype=kiln.bfloat16), out_dtype=kiln.float32)
    with pytest.raises(TypeError):
        F.scaled_mm(a.to(kiln.float8_e5m2), b.to(kiln.float8_e5m2), one, one, out_dtype=kiln.float32)
    with pytest.raises(TypeError):
        F.scaled_mm(a.to(kiln.float32), b, one, one)
    with pytest.raises(ValueError, match="cannot be multiplied"):
        F.scaled_mm(a, b[:31], one, one)
    with pytest.raises(ValueError, match="scaling"):
        F.scaled_mm(a, b, kiln.ones(2, 1), kiln.ones(16, 1))
    with pytest.raises(TypeError):
        F.scaled_mm(a, b, one.to(kiln.bfloat16), one)
    z = F.scaled_mm(kiln.zeros(3, 0).to(kiln.float8_e4m3fn), kiln.zeros(0, 4).to(kiln.float8_e4m3fn), one, one,
                    out_dtype=kiln.float32)
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 4), np.float32))
    assert F.scaled_mm(a, b, one, one).dtype == kiln.float8_e4m3fn
