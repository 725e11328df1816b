"""F.pad (constant, reflect, replicate, circular), pixel_shuffle/unshuffle and
the padding modules against NumPy: np.pad for the forward (negative pads crop),
and the adjoint (the gradient scatter-added onto the elements each output read)
for the backward; torch where it is installed."""

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(37)
NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def np_pad(x, pad, mode, value=0.0):
    """torch's F.pad in NumPy: pad = (left, right) pairs from the last dim.
    Positive pads are np.pad's; negative ones crop (circular crops first and
    wraps the cropped part; the others pad the input as it is, then crop)."""
    k = len(pad) // 2
    widths = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    crop = tuple(slice(max(-lo, 0), x.shape[d] + hi if hi < 0 else None)
                 for d, (lo, hi) in enumerate(widths))
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    if mode == "circular":
        return np.pad(x[crop], pos, mode="wrap")
    kw = {"constant_values": value} if mode == "constant" else {}
    y = np.pad(x, pos, mode=NP_MODE[mode], **kw)
    crop_after = tuple(slice(max(-lo, 0), y.shape[d] + hi if hi < 0 else None)
                       for d, (lo, hi) in enumerate(widths))
    return y[crop_after]


def np_pad_adjoint(g, in_shape, pad, mode):
    """The gradient of np_pad with respect to its input: each element of g
    added onto the input element it was read from."""
    idx = np.arange(int(np.prod(in_shape)), dtype=np.int64).reshape(in_shape)
    src = np_pad(idx, pad, mode, value=-1)
    gi = np.zeros(int(np.prod(in_shape)), dtype=np.float64)
    keep = src >= 0
    np.add.at(gi, src[keep], g[keep])
    return gi.reshape(in_shape)


def kt(a):
    return kiln.tensor(np.ascontiguousarray(a))


def leaf(a):
    t = kt(a)
    t.requires_grad_()
    return t


# (mode, input shape, pad): batched and unbatched, 1-, 2- and 3-d pads,
# negative pads and odd sizes.
CASES = [
    ("constant", (2, 3, 5), (2, 3)),
    ("constant", (2, 3, 5, 7), (2, -1, 1, 3)),
    ("constant", (3, 5, 7), (-3, -4)),
    ("constant", (2, 2, 3, 4, 5, 3), (1, 0, 2, 2, 0, 1, -1, 3)),
    ("constant", (5,), (1, 2)),
    ("reflect", (2, 3, 5), (4, -2)),
    ("reflect", (3, 5), (1, 4)),
    ("reflect", (2, 3, 5, 7), (6, 1, 4, -1)),
    ("reflect", (3, 5, 7), (-2, 3, 2, 4)),
    ("reflect", (2, 2, 3, 4, 5), (1, 2, 3, 0, -1, 2)),
    ("reflect", (2, 3, 4, 5), (4, 4, 3, 3, 2, 2)),
    ("replicate", (3, 5), (7, -2)),
    ("replicate", (2, 3, 5, 7), (-3, 9, 6, 1)),
    ("replicate", (2, 3, 4, 5), (2, 1, -1, 3, 5, 0)),
    ("replicate", (1, 2, 3, 4, 5), (0, 3, 1, 1, 4, 2)),
    ("circular", (2, 3, 5), (4, -1)),
    ("circular", (2, 3, 5, 7), (5, -2, -1, 4)),
    ("circular", (2, 2, 3, 4, 5), (1, 2, 3, 0, -1, 2)),
    ("circular", (3, 4, 5), (5, 5, 4, 4)),
]


@pytest.mark.parametrize("mode,shape,pad", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_matches_numpy(mode, shape, pad, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    want = np_pad(x, pad, mode)
    got = F.pad(kt(x), pad, mode=mode)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_forward_integer_and_noncontiguous(mode):
    x = RNG.integers(-50, 50, size=(4, 3, 6, 5)).astype(np.int32)
    pad = (2, 1, -1, 3)
    np.testing.assert_array_equal(np.asarray(F.pad(kt(x), pad, mode=mode)), np_pad(x, pad, mode))
    # A transposed (non-contiguous) input reads through its strides.
    xt = kt(x.transpose(3, 2, 1, 0).copy()).permute(3, 2, 1, 0)
    assert not xt.is_contiguous()
    np.testing.assert_array_equal(np.asarray(F.pad(xt, pad, mode=mode)), np_pad(x, pad, mode))


def test_constant_value_and_dtypes():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(F.pad(kt(x), (1, 2, 0, 1), value=-3.5)),
                                  np_pad(x, (1, 2, 0, 1), "constant", -3.5))
    b = kiln.tensor(np.array([[True, False]]))
    assert np.asarray(F.pad(b, (1, 1), value=1)).tolist() == [[True, True, False, True]]
    assert F.pad(kt(x), ()).shape == x.shape


def test_empty_batch_and_empty_outputs():
    for mode in ["constant", "reflect", "replicate", "circular"]:
        assert F.pad(kt(np.zeros((0, 3, 5), np.float32)), (1, 2), mode=mode).shape == (0, 3, 8)
    assert F.pad(kt(np.zeros((2, 0, 5), np.float32)), (1, 2), mode="circular").shape == (2, 0, 8)
    assert F.pad(kt(np.zeros((2, 3, 5), np.float32)), (-3, -2)).shape == (2, 3, 0)
    assert F.pad(kt(np.zeros((2, 3, 5), np.float32)), (-3, -2), mode="circular").shape == (2, 3, 0)


def test_large_plane_3d():
    # A 5-d input whose H * W (67600) exceeds 65536.
    x = RNG.standard_normal((1, 2, 2, 260, 260)).astype(np.float32)
    for mode, pad in [("reflect", (3, 2, 1, 4, 1, 1)), ("replicate", (2, 3, 4, 1, 2, 0)),
                      ("circular", (3, 2, 1, 4, 1, 1)), ("constant", (1, 1, 2, 2, 1, 1))]:
        want = np_pad(x, pad, mode)
        xk = leaf(x)
        y = F.pad(xk, pad, mode=mode)
        np.testing.assert_array_equal(np.asarray(y), want)
        g = RNG.standard_normal(want.shape).astype(np.float32)
        y.backward(kt(g))
        np.testing.assert_allclose(np.asarray(xk.grad), np_pad_adjoint(g.astype(np.float64), x.shape, pad, mode),
                                   rtol=1e-5, atol=1e-5)


def test_backward_bits_do_not_depend_on_thread_count():
    # Each input-gradient element sums its sources in one fixed order.
    x = leaf(RNG.standard_normal((4, 3, 40, 50)).astype(np.float32))
    g = kt(RNG.standard_normal((4, 3, 40 + 39 + 30, 50 + 45 + 2)).astype(np.float32))
    results = []
    n0 = kiln.get_num_threads()
    try:
        for n in (1, max(n0, 3)):
            kiln.set_num_threads(n)
            for mode, pad in [("replicate", (45, 2, 39, 30)), ("reflect", (45, 2, 39, 30))]:
                (gx,) = kiln.autograd.grad([F.pad(x, pad, mode=mode)], [x], [g])
                results.append(np.asarray(gx).copy())
    finally:
        kiln.set_num_threads(n0)
    np.testing.assert_array_equal(results[0], results[2])
    np.testing.assert_array_equal(results[1], results[3])


@pytest.mark.parametrize("mode,shape,pad", CASES)
def test_gradient_is_the_adjoint(mode, shape, pad):
    x = RNG.standard_normal(shape)
    xk = leaf(x)
    y = F.pad(xk, pad, mode=mode)
    g = RNG.standard_normal(y.shape)
    y.backward(kt(g))
    np.testing.assert_allclose(np.asarray(xk.grad), np_pad_adjoint(g, shape, pad, mode), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,shape,pad", [c for c in CASES if len(c[1]) >= 3][::2])
def test_double_backward_is_pad(mode, shape, pad):
    # d/dv <pad_backward(v), w> = pad(w): the gradient's gradient.
    x = leaf(RNG.standard_normal(shape))
    y = F.pad(x, pad, mode=mode)
    v = leaf(RNG.standard_normal(y.shape))
    (gx,) = kiln.autograd.grad([y], [x], [v], create_graph=True)
    w = RNG.standard_normal(shape)
    (gx * kt(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(v.grad), np_pad(w, pad, mode), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "shape,pad,mode,exc,match",
    [
        ((1, 5), (1, 1, 1), "constant", ValueError, "divisible by 2"),
        ((1, 5), (1, 1, 1, 1, 1, 1), "constant", ValueError, "at most twice"),
        ((1, 5), (-3, -3), "constant", ValueError, "gives -1 elements"),
        ((5,), (1, 1), "reflect", NotImplementedError, "not supported for a 1-d input"),
        ((1, 1, 1, 5), (1, 1), "replicate", NotImplementedError, "not supported for a 4-d input"),
        ((1, 1, 1, 2, 2, 2), (1, 1, 1, 1, 1, 1), "circular", NotImplementedError, "not supported"),
        ((1, 5), (5, 0), "reflect", ValueError, "must be less than its size 5"),
        ((1, 3, 3), (1, 1, 3, 1), "reflect", ValueError, "must be less than its size 3"),
        ((1, 5), (-3, -2), "reflect", ValueError, "gives 0 elements"),
        ((1, 5), (-3, -2), "replicate", ValueError, "gives 0 elements"),
        ((1, 5), (6, 0), "circular", ValueError, "wraps around more than once"),
        ((1, 5), (5, -1), "circular", ValueError, "wraps around more than once"),
        ((2, 0, 4), (1, 1), "reflect", ValueError, "non-zero dims"),
        ((0, 4), (1, 1), "replicate", ValueError, "non-zero dims"),
        ((1, 5), (1, 1), "wrap", NotImplementedError, "unrecognised padding mode"),
    ],
)
def test_errors(shape, pad, mode, exc, match):
    with pytest.raises(exc, match=match):
        F.pad(kt(np.zeros(shape, np.float32)), pad, mode=mode)


def test_value_only_for_constant():
    x = kt(np.zeros((1, 5), np.float32))
    with pytest.raises(ValueError, match="doesn't take a value"):
        F.pad(x, (1, 1), mode="reflect", value=1.0)
    assert F.pad(x, (1, 1), mode="reflect", value=0.0).shape == (1, 7)


def np_pixel_shuffle(x, r):
    *b, c, h, w = x.shape
    y = x.reshape(*b, c // (r * r), r, r, h, w)
    n = len(b)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*b, c // (r * r), h * r, w * r)


@pytest.mark.parametrize("shape,r", [((2, 12, 3, 5), 2), ((9, 2, 3), 3), ((2, 1, 4, 3, 2), 2), ((0, 4, 2, 2), 2),
                                     ((3, 2, 2), 1)])
def test_pixel_shuffle_roundtrip_and_gradient(shape, r):
    x = RNG.standard_normal(shape)
    xk = leaf(x)
    y = F.pixel_shuffle(xk, upscale_factor=r)
    want = np_pixel_shuffle(x, r)
    np.testing.assert_array_equal(np.asarray(y), want)
    back = F.pixel_unshuffle(y, downscale_factor=r)
    np.testing.assert_array_equal(np.asarray(back), x)
    # The gradient is the inverse permutation of the output gradient.
    g = RNG.standard_normal(want.shape)
    y.backward(kt(g))
    np.testing.assert_array_equal(np.asarray(xk.grad), np.asarray(F.pixel_unshuffle(kt(g), r)))
    flat = np.arange(x.size, dtype=np.float64).reshape(shape)
    perm = np_pixel_shuffle(flat, r).reshape(-1).astype(np.int64)
    gi = np.zeros(x.size)
    gi[perm] = g.reshape(-1)
    np.testing.assert_array_equal(np.asarray(xk.grad), gi.reshape(shape))


def test_pixel_shuffle_is_a_copy():
    x = kt(np.ones((2, 3, 3), np.float32))
    y = F.pixel_shuffle(x, 1)
    y.fill_(5.0)
    assert np.asarray(x).max() == 1.0


def test_pixel_shuffle_errors():
    x = kt(np.zeros((1, 5, 4, 4), np.float32))
    with pytest.raises(ValueError, match="divisible by upscale_factor"):
        F.pixel_shuffle(x, 2)
    with pytest.raises(ValueError, match="positive upscale_factor"):
        F.pixel_shuffle(x, 0)
    with pytest.raises(ValueError, match="at least 3 dims"):
        F.pixel_shuffle(kt(np.zeros((4, 4), np.float32)), 2)
    with pytest.raises(ValueError, match="divisible by downscale_factor 3"):
        F.pixel_unshuffle(x, 3)
    with pytest.raises(ValueError, match="positive downscale_factor"):
        F.pixel_unshuffle(x, -1)


def test_modules():
    x = RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    cases = [
        (nn.ZeroPad1d(2), (2, 2), "constant"),
        (nn.ZeroPad2d((1, 0, 2, 3)), (1, 0, 2, 3), "constant"),
        (nn.ZeroPad3d(1), (1,) * 6, "constant"),
        (nn.ConstantPad1d((1, 3), 2.5), (1, 3), "constant"),
        (nn.ConstantPad2d(1, -1.0), (1,) * 4, "constant"),
        (nn.ConstantPad3d((1, 0, 0, 1, 2, 0), 4.0), (1, 0, 0, 1, 2, 0), "constant"),
        (nn.ReflectionPad1d(2), (2, 2), "reflect"),
        (nn.ReflectionPad2d((1, 2, 3, 0)), (1, 2, 3, 0), "reflect"),
        (nn.ReflectionPad3d(1), (1,) * 6, "reflect"),
        (nn.ReplicationPad1d((3, 0)), (3, 0), "replicate"),
        (nn.ReplicationPad2d(2), (2,) * 4, "replicate"),
        (nn.ReplicationPad3d((1, 2, 0, 1, 2, 0)), (1, 2, 0, 1, 2, 0), "replicate"),
        (nn.CircularPad1d(2), (2, 2), "circular"),
        (nn.CircularPad2d((1, 2, 3, 0)), (1, 2, 3, 0), "circular"),
        (nn.CircularPad3d(1), (1,) * 6, "circular"),
    ]
    for m, pad, mode in cases:
        assert m.padding == pad
        k = len(pad) // 2
        xi = x[(0,) * (3 - k)]  # a batched input of k spatial dims
        value = getattr(m, "value", 0.0)
        np.testing.assert_array_equal(np.asarray(m(kt(xi))), np_pad(xi, pad, mode, value))
    assert repr(nn.ConstantPad2d(1, 3.5)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)"
    assert repr(nn.ZeroPad1d((1, 2))) == "ZeroPad1d((1, 2))"
    assert repr(nn.ReflectionPad2d(1)) == "ReflectionPad2d((1, 1, 1, 1))"
    assert repr(nn.CircularPad3d(2)) == "CircularPad3d((2, 2, 2, 2, 2, 2))"
    assert repr(nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    assert repr(nn.PixelUnshuffle(2)) == "PixelUnshuffle(downscale_factor=2)"
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.CircularPad1d(1)(kt(x))
    y = nn.PixelShuffle(2)(kt(x[0, :, :4]))
    np.testing.assert_array_equal(np.asarray(nn.PixelUnshuffle(2)(y)), x[0, :, :4])


@pytest.mark.parametrize("mode,shape,pad", CASES)
def test_matches_torch(mode, shape, pad):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape)
    if mode != "constant" and len(shape) not in (len(pad) // 2 + 1, len(pad) // 2 + 2):
        pytest.skip("torch takes no such rank")
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.pad(xt, pad, mode=mode)
    g = RNG.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(g))
    xk = leaf(x)
    yk = F.pad(xk, pad, mode=mode)
    yk.backward(kt(g))
    np.testing.assert_array_equal(np.asarray(yk), yt.detach().numpy())
    np.testing.assert_allclose(np.asarray(xk.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_pixel_shuffle_matches_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 18, 3, 4))
    np.testing.assert_array_equal(np.asarray(F.pixel_shuffle(kt(x), 3)),
                                  torch.nn.functional.pixel_shuffle(torch.tensor(x), 3).numpy())
    np.testing.assert_array_equal(np.asarray(F.pixel_unshuffle(kt(x[:, :2, :2, :4]), 2)),
                                  torch.nn.functional.pixel_unshuffle(torch.tensor(x[:, :2, :2, :4]), 2).numpy())
