"""F.interpolate / nn.Upsample against NumPy references written from torch's
source-index formulas (dense per-dim weight matrices), forward and backward,
and against torch itself when it imports."""

import math

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(37)


def keys(x, a):
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def weights(mode, n_in, n_out, align_corners=False, scale=None, antialias=False, nd=2):
    """[n_out, n_in] weights of one spatial dim (torch's formulas, float64);
    nearest's same-size and double-size shortcuts are torch's 2-d kernel's only."""
    w = np.zeros((n_out, n_in))
    ratio = 1.0 / scale if scale else n_in / n_out
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = ratio
    for o in range(n_out):
        if antialias:
            support = (2.0 if mode == "bicubic" else 1.0) * max(s, 1.0)
            center, inv = s * (o + 0.5), 1.0 / max(s, 1.0)
            lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
            for i in range(lo, hi):
                x = (i - center + 0.5) * inv
                w[o, i] = keys(x, -0.5) if mode == "bicubic" else max(0.0, 1 - abs(x))
            w[o] /= w[o].sum()
        elif mode == "nearest":
            if nd == 2 and n_out in (n_in, 2 * n_in):
                i = o if n_out == n_in else o // 2
            else:
                i = math.floor(o * ratio)
            w[o, min(i, n_in - 1)] = 1
        elif mode == "nearest-exact":
            w[o, min(math.floor((o + 0.5) * ratio), n_in - 1)] = 1
        elif mode in ("linear", "bilinear", "trilinear"):
            if n_out == n_in:
                w[o, o] = 1
                continue
            real = s * o if align_corners else max(s * (o + 0.5) - 0.5, 0.0)
            i0 = min(math.floor(real), n_in - 1)
            lam = min(max(real - i0, 0.0), 1.0)
            w[o, i0] += 1 - lam
            w[o, min(i0 + 1, n_in - 1)] += lam
        elif mode == "bicubic":
            real = s * o if align_corners else s * (o + 0.5) - 0.5
            i0 = min(math.floor(real), n_in - 1)
            t = min(max(real - i0, 0.0), 1.0)
            for k in range(4):
                w[o, min(max(i0 - 1 + k, 0), n_in - 1)] += keys(t + 1 - k, -0.75)
        elif mode == "area":
            a, b = (o * n_in) // n_out, -((-(o + 1) * n_in) // n_out)
            w[o, a:b] = 1.0 / (b - a)
    return w


def apply(x, mats):
    """x [N, C, *in] -> [N, C, *out] with one weight matrix per spatial dim."""
    for d, m in enumerate(mats):
        x = np.moveaxis(np.tensordot(m, np.moveaxis(x, d + 2, 0), axes=(1, 0)), 0, d + 2)
    return x


def reference(x, out, mode, align_corners=False, scales=None, antialias=False):
    scales = scales or [None] * (x.ndim - 2)
    nd = x.ndim - 2
    mats = [weights(mode, x.shape[d + 2], out[d], align_corners, scales[d], antialias, nd) for d in range(nd)]
    return apply(x, mats), mats


def t64(a):
    return kiln.tensor(np.ascontiguousarray(a, dtype=np.float64))


MODES = [
    ("nearest", 3, None), ("nearest", 4, None), ("nearest", 5, None),
    ("nearest-exact", 4, None), ("linear", 3, False), ("linear", 3, True),
    ("bilinear", 4, False), ("bilinear", 4, True), ("bicubic", 4, False), ("bicubic", 4, True),
    ("trilinear", 5, False), ("trilinear", 5, True), ("area", 3, None), ("area", 4, None), ("area", 5, None),
]
SIZES = {3: [(7,), (12,), (3,)], 4: [(5, 7), (8, 4), (11, 13)], 5: [(3, 4, 5), (5, 3, 7), (2, 6, 2)]}


@pytest.mark.parametrize("mode,ndim,align_corners", MODES)
def test_size_forward_and_backward_match_reference(mode, ndim, align_corners):
    in_sp, *outs = SIZES[ndim]
    x = RNG.standard_normal((2, 3) + in_sp)
    for out in outs:
        want, mats = reference(x, out, mode, bool(align_corners))
        xt = t64(x)
        xt.requires_grad_()
        y = F.interpolate(xt, size=out, mode=mode, align_corners=align_corners)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12, atol=1e-12)
        g = RNG.standard_normal(want.shape)
        (y * t64(g)).sum().backward()
        np.testing.assert_allclose(np.asarray(xt.grad), apply(g, [m.T for m in mats]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("recompute", [None, False, True])
def test_scale_factor_uses_the_given_scale_unless_recomputed(mode, recompute):
    x = RNG.standard_normal((1, 2, 5, 7))
    sf = (1.7, 0.65)
    out = (math.floor(5 * 1.7), math.floor(7 * 0.65))
    want, _ = reference(x, out, mode, False, None if recompute else list(sf))
    y = F.interpolate(t64(x), scale_factor=sf, mode=mode, recompute_scale_factor=recompute)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12, atol=1e-12)


def test_scalar_size_and_scale_apply_to_every_spatial_dim():
    x = RNG.standard_normal((1, 1, 3, 4))
    assert tuple(F.interpolate(t64(x), size=6).shape) == (1, 1, 6, 6)
    y = F.interpolate(t64(x), scale_factor=2.0, mode="bilinear")
    np.testing.assert_allclose(np.asarray(y), reference(x, (6, 8), "bilinear", False, [2.0, 2.0])[0], atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_antialias_matches_reference(mode, align_corners):
    x = RNG.standard_normal((2, 1, 9, 7))
    for out in [(4, 3), (4, 10)]:
        want, mats = reference(x, out, mode, align_corners, antialias=True)
        xt = t64(x)
        xt.requires_grad_()
        y = F.interpolate(xt, size=out, mode=mode, align_corners=align_corners, antialias=True)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12, atol=1e-12)
        y.sum().backward()
        np.testing.assert_allclose(np.asarray(xt.grad), apply(np.ones(want.shape), [m.T for m in mats]), atol=1e-12)


def test_float32_noncontiguous_and_empty_batch():
    x = RNG.standard_normal((2, 3, 7, 5)).astype(np.float32)
    xt = kiln.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3)
    y = F.interpolate(xt, size=(4, 9), mode="bicubic", align_corners=True)
    assert y.dtype == kiln.float32
    np.testing.assert_allclose(np.asarray(y), reference(x.astype(np.float64), (4, 9), "bicubic", True)[0],
                               rtol=1e-5, atol=1e-5)
    e = F.interpolate(kiln.zeros(0, 3, 4, 5), size=(7, 2), mode="bilinear")
    assert tuple(e.shape) == (0, 3, 7, 2)


def test_backward_bits_do_not_depend_on_threads():
    x = RNG.standard_normal((4, 8, 33, 31))
    g = RNG.standard_normal((4, 8, 70, 15))
    results = []
    before = kiln.get_num_threads()
    try:
        for n in (1, 2, 3):
            kiln.set_num_threads(n)
            xt = t64(x)
            xt.requires_grad_()
            (F.interpolate(xt, size=(70, 15), mode="bicubic") * t64(g)).sum().backward()
            results.append(np.asarray(xt.grad))
    finally:
        kiln.set_num_threads(before)
    assert all(np.array_equal(results[0], r) for r in results[1:])


def test_errors_follow_torch():
    x = t64(RNG.standard_normal((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2.0)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=2, mode="nearest", align_corners=False)
    with pytest.raises(ValueError, match="anti-alias"):
        F.interpolate(x, size=2, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="recompute_scale_factor"):
        F.interpolate(x, size=2, recompute_scale_factor=True)
    with pytest.raises(ValueError, match="spatial dimensions"):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(NotImplementedError, match="needs 3-D input"):
        F.interpolate(x, size=2, mode="linear")
    with pytest.raises(NotImplementedError, match="unknown mode"):
        F.interpolate(x, size=2, mode="cubic")
    with pytest.raises(ValueError, match="greater than 0"):
        F.interpolate(x, scale_factor=0.1)
    with pytest.raises(TypeError):
        F.interpolate(kiln.tensor(np.zeros((1, 1, 4), dtype=np.int64)), size=2)


def test_modules():
    x = RNG.standard_normal((1, 2, 3, 5))
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    np.testing.assert_allclose(np.asarray(up(t64(x))), reference(x, (6, 10), "bilinear", False, [2.0, 2.0])[0],
                               atol=1e-12)
    bl = nn.UpsamplingBilinear2d(size=(4, 7))
    assert repr(bl) == "UpsamplingBilinear2d(size=(4, 7), mode='bilinear')"
    np.testing.assert_allclose(np.asarray(bl(t64(x))), reference(x, (4, 7), "bilinear", True)[0], atol=1e-12)
    nr = nn.UpsamplingNearest2d(scale_factor=3)
    np.testing.assert_allclose(np.asarray(nr(t64(x))), np.repeat(np.repeat(x, 3, 2), 3, 3))
    np.testing.assert_allclose(np.asarray(F.upsample_bilinear(t64(x), size=(4, 7))), np.asarray(bl(t64(x))))
    np.testing.assert_allclose(np.asarray(F.upsample_nearest(t64(x), scale_factor=3)), np.asarray(nr(t64(x))))
    np.testing.assert_allclose(np.asarray(F.upsample(t64(x), size=(4, 7), mode="bicubic")),
                               reference(x, (4, 7), "bicubic")[0], atol=1e-12)


@pytest.mark.parametrize("mode,ndim,align_corners", MODES)
def test_matches_torch(mode, ndim, align_corners):
    torch = pytest.importorskip("torch")
    in_sp, *outs = SIZES[ndim]
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-6)):
        x = RNG.standard_normal((2, 3) + in_sp).astype(dtype)
        for out in outs:
            for kw in ({"size": out}, {"scale_factor": 1.7}, {"scale_factor": 0.6, "recompute_scale_factor": True}):
                xt = kiln.tensor(x)
                xt.requires_grad_()
                y = F.interpolate(xt, mode=mode, align_corners=align_corners, **kw)
                tx = torch.tensor(x, requires_grad=True)
                ty = torch.nn.functional.interpolate(tx, mode=mode, align_corners=align_corners, **kw)
                np.testing.assert_allclose(np.asarray(y), ty.detach().numpy(), rtol=tol, atol=tol)
                g = RNG.standard_normal(ty.shape).astype(dtype)
                (y * kiln.tensor(g)).sum().backward()
                (ty * torch.tensor(g)).sum().backward()
                np.testing.assert_allclose(np.asarray(xt.grad), tx.grad.numpy(), rtol=tol * 10, atol=tol * 10)


def test_nearest_same_size_shortcut_is_2d_only():
    # torch's 2-d kernel copies when the size is unchanged; its 1-d and 3-d
    # kernels use floor(i / scale_factor) even then.
    x = np.arange(3.0).reshape(1, 1, 3)
    np.testing.assert_array_equal(np.asarray(F.interpolate(t64(x), scale_factor=1.3)).ravel(), [0, 0, 1])
    np.testing.assert_array_equal(np.asarray(F.interpolate(t64(x[..., None]), scale_factor=(1.3, 1.0))).ravel(),
                                  [0, 1, 2])
    x5 = np.arange(3.0).reshape(1, 1, 3, 1, 1)
    np.testing.assert_array_equal(np.asarray(F.interpolate(t64(x5), scale_factor=1.3)).ravel(), [0, 0, 1])


@pytest.mark.parametrize("shape,scale", [((1, 2, 3), 1.3), ((1, 2, 3, 1, 1), (1.3, 1.0, 1.0))])
def test_nearest_backward_with_unchanged_size_is_not_a_copy(shape, scale):
    # 1-d / 3-d nearest with an unchanged size still reads floor(i / 1.3) =
    # [0, 0, 1], so the gradient sums outputs 0 and 1 into input 0.
    x = t64(np.arange(6.0).reshape(shape))
    x.requires_grad_()
    g = RNG.standard_normal(shape)
    (F.interpolate(x, scale_factor=scale) * t64(g)).sum().backward()
    gf = g.reshape(2, 3)
    want = np.stack([gf[:, 0] + gf[:, 1], gf[:, 2], 0 * gf[:, 0]], axis=1)
    np.testing.assert_array_equal(np.asarray(x.grad).reshape(2, 3), want)


@pytest.mark.parametrize("mode,size", [("nearest", (66, 129)), ("nearest", (40, 20)), ("bilinear", (66, 129))])
def test_forward_matches_reference_and_bits_do_not_depend_on_threads(mode, size):
    x = RNG.standard_normal((2, 9, 33, 65)).astype(np.float32)
    want, _ = reference(x.astype(np.float64), size, mode)
    results = []
    before = kiln.get_num_threads()
    try:
        for n in (1, 2, 3):
            kiln.set_num_threads(n)
            results.append(np.asarray(F.interpolate(kiln.tensor(x), size=size, mode=mode)))
    finally:
        kiln.set_num_threads(before)
    assert all(np.array_equal(results[0], r) for r in results[1:])
    np.testing.assert_allclose(results[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,ndim,align_corners", [m for m in MODES if m[1] > 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channels_last_keeps_its_layout_and_the_bits(mode, ndim, align_corners, dtype):
    # As torch, a channels-last input gives a channels-last result (3-d area resampling:
    # row-major), and a channels-last gradient a channels-last input gradient; the values
    # are the row-major run's bit for bit (the passes sum the same taps in the same order).
    fmt = kiln.channels_last if ndim == 4 else kiln.channels_last_3d
    in_sp, *outs = SIZES[ndim]
    x = RNG.standard_normal((2, 5) + in_sp).astype(dtype)
    for out in outs:
        g = (np.arange(np.prod((2, 5) + out)).reshape((2, 5) + out) % 7).astype(dtype)
        ys, grads = [], []
        for layout in (kiln.contiguous_format, fmt):
            xt = kiln.tensor(x).contiguous(memory_format=layout).requires_grad_()
            y = F.interpolate(xt, size=out, mode=mode, align_corners=align_corners)
            y.backward(kiln.tensor(g).contiguous(memory_format=layout))
            row_major = layout is not fmt or (mode == "area" and ndim == 5)
            assert y.is_contiguous(memory_format=kiln.contiguous_format if row_major else fmt)
            assert xt.grad.is_contiguous(memory_format=layout)
            ys.append(y.numpy())
            grads.append(xt.grad.numpy())
        np.testing.assert_array_equal(ys[1], ys[0])
        np.testing.assert_array_equal(grads[1], grads[0])
        np.testing.assert_allclose(ys[1], reference(x.astype(np.float64), out, mode, bool(align_corners))[0],
                                   rtol=1e-5, atol=1e-5)
