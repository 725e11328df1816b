"""F.grid_sample against a NumPy reference written from torch's definition
(unnormalize, pad, interpolate, zeros outside), its gradients against central
differences of that reference, and against torch itself when it imports."""

import itertools

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F

RNG = np.random.default_rng(42)
MODES_2D = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def unnormalize(g, n, align_corners):
    return (g + 1) / 2 * (n - 1) if align_corners else ((g + 1) * n - 1) / 2


def reflect(c, twice_lo, twice_hi):
    if twice_lo == twice_hi:
        return np.zeros_like(c)
    lo, span = twice_lo / 2, (twice_hi - twice_lo) / 2
    c = np.abs(c - lo)
    extra = np.fmod(c, span)
    return np.where(np.floor(c / span) % 2 == 0, extra + lo, span - extra + lo)


def pad(c, n, padding, align_corners):
    if padding == "border":
        return np.clip(c, 0, n - 1)
    if padding == "reflection":
        c = reflect(c, 0, 2 * (n - 1)) if align_corners else reflect(c, -1, 2 * n - 1)
        return np.clip(c, 0, n - 1)
    return c


def gather(x, idx):
    """x [N, C, *S] read at integer indices idx[d] [N, *P] -> [N, C, *P], 0 outside."""
    spatial = x.shape[2:]
    inside = np.ones(idx[0].shape, bool)
    for d, i in enumerate(idx):
        inside &= (i >= 0) & (i < spatial[d])
    clipped = [np.clip(i, 0, spatial[d] - 1) for d, i in enumerate(idx)]
    n = np.arange(x.shape[0]).reshape((-1,) + (1,) * (idx[0].ndim - 1))
    v = np.moveaxis(x, 1, -1)[(n, *clipped)] * inside[..., None]  # [N, *P, C]
    return np.moveaxis(v, -1, 1)


def keys(x, a=-0.75):
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def reference(x, grid, mode="bilinear", padding="zeros", align_corners=False):
    """torch.nn.functional.grid_sample in float64."""
    nd = x.ndim - 2
    spatial = x.shape[2:]
    coords = [unnormalize(grid[..., nd - 1 - d], spatial[d], align_corners) for d in range(nd)]
    if mode == "bicubic":
        out = 0.0
        floors = [np.floor(c) for c in coords]
        for taps in itertools.product(range(4), repeat=nd):
            w = np.ones(grid.shape[:-1])
            idx = []
            for d, j in enumerate(taps):
                w = w * keys(coords[d] - floors[d] - (j - 1))
                idx.append(pad(floors[d] - 1 + j, spatial[d], padding, align_corners).astype(np.int64))
            out = out + w[:, None] * gather(x, idx)
        return out
    coords = [pad(c, spatial[d], padding, align_corners) for d, c in enumerate(coords)]
    if mode == "nearest":
        return gather(x, [np.rint(c).astype(np.int64) for c in coords])
    out = 0.0
    floors = [np.floor(c) for c in coords]
    for corner in itertools.product(range(2), repeat=nd):
        w = np.ones(grid.shape[:-1])
        for d, b in enumerate(corner):
            t = coords[d] - floors[d]
            w = w * (t if b else 1 - t)
        out = out + w[:, None] * gather(x, [(f + b).astype(np.int64) for f, b in zip(floors, corner)])
    return out


def cases():
    for nd, modes in ((2, MODES_2D), (3, ["bilinear", "nearest"])):
        for mode, padding, ac in itertools.product(modes, PADDINGS, (False, True)):
            yield nd, mode, padding, ac


def shapes(nd):
    if nd == 2:
        return (2, 3, 5, 4), (2, 6, 7, 2)
    return (2, 2, 3, 4, 5), (2, 3, 2, 4, 3)


@pytest.mark.parametrize("nd,mode,padding,align_corners", list(cases()))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_matches_reference(nd, mode, padding, align_corners, dtype):
    xs, gs = shapes(nd)
    x = RNG.standard_normal(xs).astype(dtype)
    g = RNG.uniform(-1.4, 1.4, gs).astype(dtype)
    got = F.grid_sample(kiln.tensor(x), kiln.tensor(g), mode=mode, padding_mode=padding,
                        align_corners=align_corners)
    assert got.dtype == getattr(kiln, dtype) and tuple(got.shape) == xs[:2] + gs[1:-1]
    want = reference(x.astype(np.float64), g.astype(np.float64), mode, padding, align_corners)
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_reflection_far_outside_matches_reference(mode, align_corners):
    # Points many spans outside the input: reflected once, twice and many times
    # (the kernel skips fmod within two spans; the reference always takes it).
    x = RNG.standard_normal((1, 3, 4, 5))
    g = RNG.uniform(-6, 6, (1, 9, 11, 2))
    got = F.grid_sample(kiln.tensor(x), kiln.tensor(g), mode=mode, padding_mode="reflection",
                        align_corners=align_corners)
    want = reference(x, g, mode, "reflection", align_corners)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nd,mode,padding,align_corners", list(cases()))
def test_gradients_match_central_differences(nd, mode, padding, align_corners):
    xs, gs = shapes(nd)
    x = RNG.standard_normal(xs)
    g = RNG.uniform(-1.2, 1.2, gs)
    w = RNG.standard_normal(xs[:2] + gs[1:-1])  # the output's gradient
    kx = kiln.tensor(x, requires_grad=True)
    kg = kiln.tensor(g, requires_grad=True)
    (F.grid_sample(kx, kg, mode=mode, padding_mode=padding, align_corners=align_corners) * kiln.tensor(w)).sum().backward()

    def loss(xv, gv):
        return float((reference(xv, gv, mode, padding, align_corners) * w).sum())

    h = 1e-6
    for arr, grad, tol in ((x, kx.grad.numpy(), 1e-7), (g, kg.grad.numpy(), 1e-5)):
        want = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            old = arr[i]
            arr[i] = old + h
            up = loss(x, g)
            arr[i] = old - h
            down = loss(x, g)
            arr[i] = old
            want[i] = (up - down) / (2 * h)
        np.testing.assert_allclose(grad, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_dtypes_compute_in_float32(dtype):
    x = RNG.standard_normal((1, 2, 6, 5)).astype(np.float32)
    g = RNG.uniform(-1, 1, (1, 4, 3, 2)).astype(np.float32)
    kx, kg = kiln.tensor(x).to(getattr(kiln, dtype)), kiln.tensor(g).to(getattr(kiln, dtype))
    got = F.grid_sample(kx, kg, align_corners=True)
    assert got.dtype == getattr(kiln, dtype)
    want = F.grid_sample(kx.float(), kg.float(), align_corners=True).to(getattr(kiln, dtype))
    assert np.array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_bits_do_not_depend_on_threads(mode):
    # Many points land on few pixels (a zoom into a corner), so the input's
    # gradient sums long runs; channels > the block of 16 and a batch of 3.
    x = RNG.standard_normal((3, 20, 9, 11)).astype(np.float32)
    g = RNG.uniform(-1, -0.6, (3, 40, 37, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 20, 40, 37)).astype(np.float32)
    results = []
    before = kiln.get_num_threads()
    try:
        for n in (1, 2, 3):
            kiln.set_num_threads(n)
            kx, kg = kiln.tensor(x, requires_grad=True), kiln.tensor(g, requires_grad=True)
            y = F.grid_sample(kx, kg, mode=mode, padding_mode="border", align_corners=False)
            (y * kiln.tensor(w)).sum().backward()
            results.append((y.detach().numpy(), kx.grad.numpy(), kg.grad.numpy()))
    finally:
        kiln.set_num_threads(before)
    for r in results[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(results[0], r))
    np.testing.assert_allclose(results[0][0], reference(x.astype(np.float64), g.astype(np.float64), mode, "border"),
                               rtol=2e-5, atol=2e-5)


def test_grid_from_affine_grid_identity_reproduces_the_input():
    x = kiln.tensor(RNG.standard_normal((2, 3, 7, 9)))
    theta = kiln.tensor(np.tile(np.array([[1.0, 0, 0], [0, 1.0, 0]]), (2, 1, 1)))
    for ac in (False, True):
        grid = F.affine_grid(theta, [2, 3, 7, 9], align_corners=ac)
        np.testing.assert_allclose(F.grid_sample(x, grid, align_corners=ac).numpy(), x.numpy(), atol=1e-12)


def test_empty_batch_and_channels():
    out = F.grid_sample(kiln.zeros(0, 3, 4, 4), kiln.zeros(0, 2, 2, 2), align_corners=False)
    assert tuple(out.shape) == (0, 3, 2, 2)
    x = kiln.zeros(2, 0, 4, 4, requires_grad=True)
    g = kiln.tensor(RNG.uniform(-1, 1, (2, 3, 3, 2)), dtype=kiln.float32, requires_grad=True)
    out = F.grid_sample(x, g, align_corners=False)
    assert tuple(out.shape) == (2, 0, 3, 3)
    out.sum().backward()
    assert np.array_equal(g.grad.numpy(), np.zeros((2, 3, 3, 2), np.float32))


def test_non_finite_grid_points_read_zero_with_zeros_padding():
    x = kiln.ones(1, 1, 3, 3)
    g = kiln.tensor([[[[float("nan"), 0.0], [float("inf"), 0.0], [0.0, -1e30]]]])
    assert F.grid_sample(x, g, align_corners=False).numpy().tolist() == [[[[0.0, 0.0, 0.0]]]]


def test_double_backward_raises():
    # torch has no derivative of grid_sampler_2d_backward either; kiln says so
    # when the graph of the gradient is asked for.
    x = kiln.tensor(RNG.standard_normal((1, 1, 3, 3)), requires_grad=True)
    g = kiln.tensor(RNG.uniform(-1, 1, (1, 2, 2, 2)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="grid_sampler_backward"):
        kiln.autograd.grad(F.grid_sample(x, g, align_corners=False).sum(), [x], create_graph=True)
    (gx,) = kiln.autograd.grad(F.grid_sample(x, g, align_corners=False).sum(), [x])
    assert not gx.requires_grad


@pytest.mark.parametrize(
    "x_shape,g_shape,kw,exc,match",
    [
        ((1, 1, 3, 3), (1, 2, 2, 2), {"mode": "linear"}, ValueError, "expected mode"),
        ((1, 1, 3, 3), (1, 2, 2, 2), {"padding_mode": "wrap"}, ValueError, "expected padding_mode"),
        ((1, 1, 2, 3, 3), (1, 2, 2, 2, 3), {"mode": "bicubic"}, ValueError, "bicubic interpolation only supports 4-d"),
        ((1, 1, 3), (1, 2, 1), {}, ValueError, "4-d or 5-d input"),
        ((1, 1, 3, 3), (1, 2, 2, 3), {}, ValueError, "size 2 in its last dim"),
        ((2, 1, 3, 3), (1, 2, 2, 2), {}, ValueError, "same batch size"),
        ((1, 1, 3, 3), (1, 2, 2, 2, 2), {}, ValueError, "expected grid to have 4 dims"),
        ((1, 1, 0, 3), (1, 2, 2, 2), {}, ValueError, "non-empty spatial dims"),
    ],
)
def test_errors(x_shape, g_shape, kw, exc, match):
    with pytest.raises(exc, match=match):
        F.grid_sample(kiln.zeros(*x_shape), kiln.zeros(*g_shape), align_corners=False, **kw)


def test_dtype_errors():
    with pytest.raises(TypeError, match="same dtype"):
        F.grid_sample(kiln.zeros(1, 1, 3, 3), kiln.zeros(1, 2, 2, 2, dtype=kiln.float64), align_corners=False)
    with pytest.raises(TypeError, match="must be float16, bfloat16, float32 or float64"):
        F.grid_sample(kiln.zeros(1, 1, 3, 3, dtype=kiln.int64), kiln.zeros(1, 2, 2, 2, dtype=kiln.int64))


@pytest.mark.parametrize("nd,mode,padding,align_corners", list(cases()))
def test_matches_torch(nd, mode, padding, align_corners):
    torch = pytest.importorskip("torch")
    xs, gs = shapes(nd)
    x = RNG.standard_normal(xs).astype(np.float32)
    g = RNG.uniform(-1.3, 1.3, gs).astype(np.float32)
    w = RNG.standard_normal(xs[:2] + gs[1:-1]).astype(np.float32)
    tx, tg = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    ty = torch.nn.functional.grid_sample(tx, tg, mode=mode, padding_mode=padding, align_corners=align_corners)
    (ty * torch.tensor(w)).sum().backward()
    kx, kg = kiln.tensor(x, requires_grad=True), kiln.tensor(g, requires_grad=True)
    ky = F.grid_sample(kx, kg, mode=mode, padding_mode=padding, align_corners=align_corners)
    (ky * kiln.tensor(w)).sum().backward()
    np.testing.assert_allclose(ky.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kg.grad.numpy(), tg.grad.numpy(), rtol=1e-4, atol=1e-4)
