"""kiln.fft against scipy.fft (the same definitions and argument rules as
torch.fft: n / s cut or zero-pad, norm= modes, dims) over dtypes, layouts and
sizes; its gradients against finite differences (and torch when installed)."""

import numpy as np
import pytest
import scipy.fft as sfft

import kiln

RNG = np.random.default_rng(2026)
NORMS = [None, "backward", "forward", "ortho"]


def real(*shape, dtype=np.float64):
    return RNG.uniform(-2, 2, shape).astype(dtype)


def cplx(*shape, dtype=np.complex128):
    return (RNG.uniform(-2, 2, shape) + 1j * RNG.uniform(-2, 2, shape)).astype(dtype)


def tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype in (np.float32, np.complex64) else dict(rtol=1e-12, atol=1e-12)


ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
# Which inputs each function takes: complex inputs are refused by rfft / ihfft.
TAKES_COMPLEX = {"fft", "ifft", "irfft", "hfft", "fft2", "ifft2", "irfft2", "hfft2", "fftn", "ifftn", "irfftn",
                 "hfftn"}


def inputs(name, shape):
    out = [real(*shape, dtype=np.float32), real(*shape)]
    if name in TAKES_COMPLEX:
        out += [cplx(*shape, dtype=np.complex64), cplx(*shape)]
    return out


def expected_dtype(name, xn):
    single = xn.dtype in (np.float32, np.complex64)
    complex_out = name in ("fft", "ifft", "rfft", "ihfft", "fft2", "ifft2", "rfft2", "ihfft2", "fftn", "ifftn",
                           "rfftn", "ihfftn")
    if complex_out:
        return np.complex64 if single else np.complex128
    return np.float32 if single else np.float64


@pytest.mark.parametrize("name", ONE_DIM)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,dim", [(None, -1), (None, 0), (5, -1), (12, 0), (1, 1)])
def test_one_dim_matches_scipy(name, norm, n, dim):
    for xn in inputs(name, (7, 9)):
        got = getattr(kiln.fft, name)(kiln.tensor(xn), n=n, dim=dim, norm=norm)
        want = getattr(sfft, name)(xn, n=n, axis=dim, norm=norm)
        assert got.numpy().dtype == expected_dtype(name, xn), (name, xn.dtype)
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, **tol(xn.dtype))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", [(None, (-2, -1)), (None, (0, 2)), ((6, 5), (-2, -1)), ((3, 10), (2, 0)),
                                   ((-1, 4), (1, 2))])
def test_two_dim_matches_scipy(name, norm, s, dim):
    for xn in inputs(name, (4, 5, 6)):
        got = getattr(kiln.fft, name)(kiln.tensor(xn), s=s, dim=dim, norm=norm)
        sn = None if s is None else tuple(xn.shape[d] if v == -1 else v for v, d in zip(s, dim))
        want = getattr(sfft, name)(xn, s=sn, axes=dim, norm=norm)
        assert got.numpy().dtype == expected_dtype(name, xn)
        np.testing.assert_allclose(got.numpy(), want, **tol(xn.dtype))


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", [(None, None), ((4, 3), None), (None, (2, 0, 1)), ((2, 7, 4), (1, 0, 2)),
                                   (None, 1), (6, -1)])
def test_n_dim_matches_scipy(name, norm, s, dim):
    for xn in inputs(name, (3, 4, 5)):
        got = getattr(kiln.fft, name)(kiln.tensor(xn), s=s, dim=dim, norm=norm)
        want = getattr(sfft, name)(xn, s=s, axes=dim, norm=norm)
        np.testing.assert_allclose(got.numpy(), want, **tol(xn.dtype))


def test_non_contiguous_and_expanded_inputs():
    xn = cplx(6, 8)
    xt = kiln.tensor(xn.T.copy()).t()  # logical [6, 8], strides not innermost
    np.testing.assert_allclose(kiln.fft.fft(xt).numpy(), sfft.fft(xn), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kiln.fft.fftn(xt, dim=(0, 1)).numpy(), sfft.fftn(xn), rtol=1e-12, atol=1e-12)
    row = real(1, 8)
    xe = kiln.tensor(row).expand(5, 8)
    np.testing.assert_allclose(kiln.fft.rfft(xe).numpy(), sfft.rfft(np.broadcast_to(row, (5, 8))), atol=1e-12)
    np.testing.assert_allclose(kiln.fft.rfft(xe, dim=0).numpy(), sfft.rfft(np.broadcast_to(row, (5, 8)), axis=0),
                               atol=1e-12)
    half = cplx(5, 7)
    xs = kiln.tensor(half)[:, ::2]  # a stride-2 view, [5, 4]
    np.testing.assert_allclose(kiln.fft.irfft(xs).numpy(), sfft.irfft(half[:, ::2]), atol=1e-12)


def test_batches_split_across_threads_and_odd_sizes():
    # Large enough (> 64K elements) for the per-thread plans; a prime size and
    # a power of two.
    for shape in [(64, 2048), (97, 1031), (3, 40000)]:
        xn = cplx(*shape)
        np.testing.assert_allclose(kiln.fft.fft(kiln.tensor(xn)).numpy(), sfft.fft(xn), rtol=1e-9, atol=1e-9)
        rn = real(*shape)
        np.testing.assert_allclose(kiln.fft.rfft(kiln.tensor(rn), dim=0).numpy(), sfft.rfft(rn, axis=0),
                                   rtol=1e-9, atol=1e-9)
        half = sfft.rfft(rn)
        np.testing.assert_allclose(kiln.fft.irfft(kiln.tensor(half), n=shape[1]).numpy(), rn, atol=1e-12)


def test_round_trips_and_parseval():
    xn = real(16, 33)
    x = kiln.tensor(xn)
    np.testing.assert_allclose(kiln.fft.irfft(kiln.fft.rfft(x), n=33).numpy(), xn, atol=1e-13)
    np.testing.assert_allclose(kiln.fft.ifftn(kiln.fft.fftn(x)).numpy().real, xn, atol=1e-13)
    np.testing.assert_allclose(kiln.fft.hfft(kiln.fft.ihfft(x), n=33).numpy(), xn, atol=1e-13)
    y = kiln.fft.fft(x, norm="ortho").numpy()
    np.testing.assert_allclose((np.abs(y) ** 2).sum(), (xn ** 2).sum(), rtol=1e-13)


def test_dtypes_promote_as_torch():
    xi = kiln.tensor(np.arange(8, dtype=np.int64))
    assert kiln.fft.fft(xi).dtype == kiln.complex64
    assert kiln.fft.rfft(xi).dtype == kiln.complex64
    assert kiln.fft.irfft(xi).dtype == kiln.float32
    np.testing.assert_allclose(kiln.fft.fft(xi).numpy(), sfft.fft(np.arange(8.0)), atol=1e-5)
    xb = kiln.tensor(np.array([True, False, True]))
    assert kiln.fft.fft(xb).dtype == kiln.complex64
    for d in (kiln.float16, kiln.bfloat16):
        with pytest.raises(TypeError, match=r"\[fft.fft\] Unsupported dtype"):
            kiln.fft.fft(kiln.ones(4, dtype=d))


def test_errors_name_the_function():
    x = kiln.tensor(real(4, 6))
    with pytest.raises(ValueError, match=r"\[fft.fft\] Invalid normalization mode"):
        kiln.fft.fft(x, norm="sideways")
    with pytest.raises(ValueError, match=r"Invalid number of data points \(0\)"):
        kiln.fft.fft(x, n=0)
    with pytest.raises(ValueError, match=r"Invalid number of data points \(0\)"):
        kiln.fft.irfft(kiln.tensor(cplx(4, 1)))
    with pytest.raises(ValueError, match="FFT dims must be unique"):
        kiln.fft.fftn(x, dim=(1, -1))
    with pytest.raises(ValueError, match="must have the same length"):
        kiln.fft.fftn(x, s=(4, 6), dim=(0,))
    with pytest.raises(ValueError, match="only has 2 dimensions"):
        kiln.fft.fftn(x, s=(1, 4, 6))
    with pytest.raises(TypeError, match=r"\[fft.rfft\] expects a real input"):
        kiln.fft.rfft(kiln.tensor(cplx(4)))
    with pytest.raises(TypeError, match=r"\[fft.ihfft2\] expects a real input"):
        kiln.fft.ihfft2(kiln.tensor(cplx(4, 4)))
    with pytest.raises(IndexError):
        kiln.fft.fft(x, dim=2)
    with pytest.raises(IndexError, match="has no dimensions"):
        kiln.fft.fft(kiln.tensor(1.0))


def test_empty_batches():
    x = kiln.tensor(np.zeros((0, 6)))
    assert kiln.fft.fft(x).shape == (0, 6)
    assert kiln.fft.rfft(x).shape == (0, 4)
    assert kiln.fft.irfft(kiln.fft.rfft(x)).shape == (0, 6)
    assert kiln.fft.fftn(x, dim=(1,)).shape == (0, 6)


def test_out_writes_and_checks():
    xn = cplx(3, 8)
    out = kiln.empty(3, 8, dtype=kiln.complex128)
    r = kiln.fft.fft(kiln.tensor(xn), out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), sfft.fft(xn), atol=1e-12)
    with pytest.raises(ValueError, match="out has shape"):
        kiln.fft.fft(kiln.tensor(xn), out=kiln.empty(3, 7, dtype=kiln.complex128))
    with pytest.raises(TypeError, match="out has dtype"):
        kiln.fft.rfft(kiln.tensor(real(3, 8)), out=kiln.empty(3, 5, dtype=kiln.complex64))
    o2 = kiln.empty(3, 5, dtype=kiln.complex128)
    kiln.fft.rfftn(kiln.tensor(real(3, 8)), dim=(1,), out=o2)
    assert o2.shape == (3, 5)
    leaf = kiln.tensor(real(3, 8), requires_grad=True)
    with pytest.raises(RuntimeError, match="out="):
        kiln.fft.rfft(leaf, out=kiln.empty(3, 5, dtype=kiln.complex128))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies_match_numpy(n, d):
    if n == 0:  # NumPy divides by zero; torch gives [] and [nan]
        assert kiln.fft.fftfreq(0, d).shape == (0,)
        assert np.isnan(kiln.fft.rfftfreq(0, d).numpy()).all() and kiln.fft.rfftfreq(0, d).shape == (1,)
        return
    np.testing.assert_allclose(kiln.fft.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d), rtol=1e-7)
    np.testing.assert_allclose(kiln.fft.rfftfreq(n, d).numpy(), np.fft.rfftfreq(n, d), rtol=1e-7)
    f = kiln.fft.fftfreq(n, d, dtype=kiln.float64)
    assert f.dtype == kiln.float64
    np.testing.assert_array_equal(f.numpy(), np.fft.fftfreq(n, d))
    assert kiln.fft.fftfreq(n).dtype == kiln.float32
    assert kiln.fft.rfftfreq(n, requires_grad=True).requires_grad


def test_frequency_errors():
    with pytest.raises(ValueError, match="non-negative"):
        kiln.fft.fftfreq(-1)
    with pytest.raises(TypeError, match="floating point"):
        kiln.fft.fftfreq(4, dtype=kiln.int64)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2), -1])
def test_shifts_match_numpy(dim):
    for shape in [(4, 5, 6), (1, 7, 3)]:
        xn = real(*shape)
        x = kiln.tensor(xn)
        np.testing.assert_array_equal(kiln.fft.fftshift(x, dim).numpy(), np.fft.fftshift(xn, dim))
        np.testing.assert_array_equal(kiln.fft.ifftshift(x, dim).numpy(), np.fft.ifftshift(xn, dim))
        np.testing.assert_array_equal(kiln.fft.ifftshift(kiln.fft.fftshift(x, dim), dim).numpy(), xn)


def test_namespace_is_complete():
    names = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
             "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift",
             "ifftshift"]
    assert sorted(kiln.fft.__all__) == sorted(names)
    from kiln.fft import rfftn  # noqa: F401  (a real module)


# ---- gradients --------------------------------------------------------------


def numeric_grad(f, xn, wn, h=1e-6):
    """d/dx of L = sum(Re(conj(w) * f(x))) by central differences, in torch's
    convention for complex x (dL/dRe + i dL/dIm)."""
    def loss(v):
        return float(np.sum(np.real(np.conj(wn) * f(kiln.tensor(v)).numpy())))
    g = np.zeros_like(xn)
    flat, gf = xn.reshape(-1), g.reshape(-1)
    parts = [1.0, 1j] if np.iscomplexobj(xn) else [1.0]
    for i in range(flat.size):
        for p in parts:
            v = flat.copy()
            v[i] += h * p
            up = loss(v.reshape(xn.shape))
            v[i] -= 2 * h * p
            down = loss(v.reshape(xn.shape))
            gf[i] += p * (up - down) / (2 * h)
    return g


GRAD_CASES = [
    ("fft", lambda x: kiln.fft.fft(x, n=7), True),
    ("ifft ortho", lambda x: kiln.fft.ifft(x, dim=0, norm="ortho"), True),
    ("fft of real", lambda x: kiln.fft.fft(x), False),
    ("rfft", lambda x: kiln.fft.rfft(x, n=9), False),
    ("rfftn forward", lambda x: kiln.fft.rfftn(x, norm="forward"), False),
    ("irfft even", lambda x: kiln.fft.irfft(x), True),
    ("irfft odd", lambda x: kiln.fft.irfft(x, n=9), True),
    ("irfftn", lambda x: kiln.fft.irfftn(x, s=(4, 8)), True),
    ("hfft", lambda x: kiln.fft.hfft(x, n=7), True),
    ("ihfft", lambda x: kiln.fft.ihfft(x), False),
    ("hfft2", lambda x: kiln.fft.hfft2(x), True),
    ("ihfftn", lambda x: kiln.fft.ihfftn(x, norm="ortho"), False),
]


@pytest.mark.parametrize("name,f,complex_in", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_finite_differences(name, f, complex_in):
    xn = cplx(3, 5) if complex_in else real(3, 5)
    x = kiln.tensor(xn, requires_grad=True)
    y = f(x)
    yn = y.detach().numpy()
    wn = cplx(*yn.shape) if np.iscomplexobj(yn) else real(*yn.shape)
    w = kiln.tensor(wn)
    (kiln.real(kiln.conj(w) * y) if y.is_complex() else w * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(f, xn, wn), rtol=1e-6, atol=1e-7)


def test_second_derivative_of_a_spectrum_norm():
    # L = sum |rfft(x)|^4: its gradient goes through r2c and c2c, and
    # differentiating that again through both once more.
    xn = real(6)
    x = kiln.tensor(xn, requires_grad=True)
    (g,) = kiln.autograd.grad((kiln.abs(kiln.fft.rfft(x)) ** 4).sum(), x, create_graph=True)
    (h,) = kiln.autograd.grad(g.sum(), x)

    def grad_at(v):
        t = kiln.tensor(v, requires_grad=True)
        (kiln.abs(kiln.fft.rfft(t)) ** 4).sum().backward()
        return t.grad.numpy().sum()

    eps = 1e-6
    want = np.array([(grad_at(xn + eps * e) - grad_at(xn - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-5, atol=1e-6)


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    for name, f, complex_in in GRAD_CASES:
        xn = cplx(3, 5) if complex_in else real(3, 5)
        x = kiln.tensor(xn, requires_grad=True)
        y = f(x)
        tx = torch.tensor(xn, requires_grad=True)
        ty = _torch_call(name, tx, torch)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().resolve_conj().numpy(), rtol=1e-10, atol=1e-10)
        wn = cplx(*ty.shape) if ty.is_complex() else real(*ty.shape)
        (kiln.real(kiln.conj(kiln.tensor(wn)) * y) if y.is_complex() else kiln.tensor(wn) * y).sum().backward()
        tw = torch.tensor(wn)
        (torch.real(torch.conj(tw) * ty) if ty.is_complex() else tw * ty).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)


def _torch_call(name, x, torch):
    return {
        "fft": lambda: torch.fft.fft(x, n=7),
        "ifft ortho": lambda: torch.fft.ifft(x, dim=0, norm="ortho"),
        "fft of real": lambda: torch.fft.fft(x),
        "rfft": lambda: torch.fft.rfft(x, n=9),
        "rfftn forward": lambda: torch.fft.rfftn(x, norm="forward"),
        "irfft even": lambda: torch.fft.irfft(x),
        "irfft odd": lambda: torch.fft.irfft(x, n=9),
        "irfftn": lambda: torch.fft.irfftn(x, s=(4, 8)),
        "hfft": lambda: torch.fft.hfft(x, n=7),
        "ihfft": lambda: torch.fft.ihfft(x),
        "hfft2": lambda: torch.fft.hfft2(x),
        "ihfftn": lambda: torch.fft.ihfftn(x, norm="ortho"),
    }[name]()
