# kiln.nn.functional.grouped_mm / kiln._grouped_mm against float64 NumPy.
import numpy as np
import pytest

import kiln

F = kiln.nn.functional


def kt(a):
    return kiln.from_numpy(np.ascontiguousarray(a))


def offs(v):
    return kt(np.array(v, np.int32))


@pytest.mark.parametrize("ends", [[0, 3, 3, 40], [2, 4, 5, 5], [1, 1, 1, 2], [7]])
def test_2d_3d(ends, rng):
    g, k, n = len(ends), 33, 21
    t = ends[-1] + 2
    a = rng.standard_normal((t, k)).astype(np.float32)
    w = rng.standard_normal((g, n, k)).astype(np.float32)
    y = kiln._grouped_mm(kt(a), kt(w).transpose(1, 2), offs=offs(ends)).numpy()
    want = np.zeros((t, n))
    s = 0
    for i, e in enumerate(ends):
        want[s:e] = a[s:e].astype(np.float64) @ w[i].T
        s = e
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)


def test_fp8_experts_row_scales(rng):
    a = rng.standard_normal((5, 70)).astype(np.float32)
    w = rng.standard_normal((3, 24, 70)).astype(np.float32)
    q, s = kiln.quantize_fp8(kt(w), granularity="row")
    y = F.grouped_mm(kt(a), q.transpose(1, 2), offs=offs([2, 2, 5]), b_scale=s).numpy()
    wd = kiln.dequantize(q, s).numpy().astype(np.float64)
    want = np.concatenate([a[:2] @ wd[0].T, a[2:5] @ wd[2].T])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)


def test_other_ranks(rng):
    a3 = rng.standard_normal((2, 4, 5)).astype(np.float32)
    b2 = rng.standard_normal((5, 9)).astype(np.float32)
    y = F.grouped_mm(kt(a3), kt(b2), offs=offs([4, 9])).numpy()
    np.testing.assert_allclose(y[:, :4], a3[0] @ b2[:, :4], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y[:, 4:], a3[1] @ b2[:, 4:], rtol=1e-5, atol=1e-5)
    a2 = rng.standard_normal((3, 10)).astype(np.float32)
    bb = rng.standard_normal((10, 2)).astype(np.float32)
    z = F.grouped_mm(kt(a2), kt(bb), offs=offs([0, 6, 10])).numpy()
    np.testing.assert_array_equal(z[0], 0)
    np.testing.assert_allclose(z[1], a2[:, :6] @ bb[:6], rtol=1e-5, atol=1e-5)
    b3 = rng.standard_normal((2, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(F.grouped_mm(kt(a3), kt(b3)).numpy(), a3 @ b3, rtol=1e-5, atol=1e-5)
    yb = F.grouped_mm(kt(a3).to(kiln.bfloat16), kt(b3).to(kiln.bfloat16), out_dtype=kiln.float32)
    assert yb.dtype == kiln.float32


def test_errors():
    a, b = kiln.zeros(5, 4), kiln.zeros(2, 4, 3)
    with pytest.raises(ValueError, match="offs"):
        F.grouped_mm(a, b)
    with pytest.raises(ValueError, match="non-decreasing"):
        F.grouped_mm(a, b, offs=offs([3, 2]))
    with pytest.raises(ValueError, match="exceeds"):
        F.grouped_mm(a, b, offs=offs([3, 6]))
    with pytest.raises(TypeError, match="int32"):
        F.grouped_mm(a, b, offs=kt(np.array([3, 5], np.int64)))
    with pytest.raises(ValueError):
        F.grouped_mm(a, kiln.zeros(2, 5, 3), offs=offs([3, 5]))
    with pytest.raises(TypeError):
        F.grouped_mm(a, b.to(kiln.bfloat16), offs=offs([3, 5]))
    with pytest.raises(ValueError):
        F.grouped_mm(kiln.zeros(2, 5, 4), b, offs=offs([3, 5]))
    # FP8 scales and bias must be floating point.
    w8 = kiln.ones(2, 3, 4).to(kiln.float8_e4m3fn).transpose(1, 2)
    with pytest.raises(TypeError, match="b_scale"):
        F.grouped_mm(a, w8, offs=offs([3, 5]), b_scale=kiln.ones(2, 3, dtype=kiln.int32))
    with pytest.raises(TypeError, match="bias"):
        F.grouped_mm(a, b, offs=offs([3, 5]), bias=kiln.ones(2, 3, dtype=kiln.int32))


def test_private_grouped_mm_takes_offs_by_position(rng):
    # torch._grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None).
    a = rng.standard_normal((6, 8)).astype(np.float32)
    w = rng.standard_normal((2, 8, 5)).astype(np.float32)
    o = offs([2, 6])
    np.testing.assert_array_equal(kiln._grouped_mm(kt(a), kt(w), o).numpy(),
                                  F.grouped_mm(kt(a), kt(w), offs=o).numpy())
    with pytest.raises(TypeError):
        F.grouped_mm(kt(a), kt(w), o)  # keyword-only, as torch.nn.functional.grouped_mm
