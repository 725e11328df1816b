"""kiln.linalg.eigvals, ldl_factor / ldl_factor_ex and kiln.geqrf against NumPy
and SciPy's own LAPACK bindings (scipy.linalg.lapack), over dtypes, batches,
non-contiguous and empty inputs, and their errors."""
import numpy as np
import pytest
import scipy.linalg.lapack as lapack

import kiln
import kiln.linalg as LA

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.float64: 1e-11, np.complex64: 2e-4, np.complex128: 1e-11}


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def as_set_close(got, want, tol):
    """Eigenvalues have no defined order: match each wanted value to the nearest got."""
    got = list(got)
    for w in want:
        j = int(np.argmin([abs(g - w) for g in got]))
        assert abs(got[j] - w) <= tol * max(1.0, abs(w)), (got, want)
        got.pop(j)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigvals_matches_numpy(dtype):
    rng = np.random.default_rng(0)
    a = rand(rng, (3, 6, 6), dtype)
    w = LA.eigvals(kiln.tensor(a))
    assert w.dtype == (kiln.complex64 if dtype in (np.float32, np.complex64) else kiln.complex128)
    assert tuple(w.shape) == (3, 6)
    got = w.numpy()
    for b in range(3):
        as_set_close(got[b], np.linalg.eigvals(a[b].astype(np.complex128)), 50 * TOL[dtype])


def test_eigvals_noncontiguous_empty_and_errors():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5))
    t = kiln.tensor(a).transpose(0, 1)  # A^T has A's eigenvalues
    as_set_close(LA.eigvals(t).numpy(), np.linalg.eigvals(a), 1e-10)
    assert tuple(LA.eigvals(kiln.zeros([0, 3, 3])).shape) == (0, 3)
    # a rotation: eigenvalues +-i
    rot = kiln.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=kiln.float64)
    as_set_close(LA.eigvals(rot).numpy(), [1j, -1j], 1e-12)
    with pytest.raises(Exception, match="square"):
        LA.eigvals(kiln.zeros([2, 3]))
    with pytest.raises(Exception, match="non-finite|NaN"):
        LA.eigvals(kiln.tensor([[1.0, float("nan")], [0.0, 1.0]]))


def sytrf(a, hermitian):
    """SciPy's LAPACK: (ldu, ipiv, info), lower."""
    t = a.dtype.char
    if hermitian and t in "FD":
        fn = {"F": lapack.chetrf, "D": lapack.zhetrf}[t]
    else:
        fn = {"f": lapack.ssytrf, "d": lapack.dsytrf, "F": lapack.csytrf, "D": lapack.zsytrf}[t]
    return fn(a, lower=1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_factor_matches_lapack(dtype, hermitian):
    rng = np.random.default_rng(2)
    n = 7
    a = rand(rng, (2, n, n), dtype)  # indefinite: Bunch-Kaufman pivots, 2x2 blocks
    LD, piv = LA.ldl_factor(kiln.tensor(a), hermitian=hermitian)
    assert LD.dtype == kiln.tensor(a).dtype and piv.dtype == kiln.int32
    for b in range(2):
        ldu, ipiv, info = sytrf(a[b].copy(), hermitian)
        assert info == 0
        np.testing.assert_array_equal(piv.numpy()[b], ipiv)
        np.testing.assert_allclose(LD.numpy()[b], np.tril(ldu), rtol=TOL[dtype], atol=TOL[dtype] * 10)


def test_ldl_factor_ex_info_and_errors():
    z = kiln.zeros([3, 3], dtype=kiln.float64)
    r = LA.ldl_factor_ex(z)
    assert r.info.item() > 0
    with pytest.raises(Exception, match="singular"):
        LA.ldl_factor(z)
    with pytest.raises(Exception, match="singular"):
        LA.ldl_factor_ex(z, check_errors=True)
    e = LA.ldl_factor_ex(kiln.zeros([0, 4, 4]))
    assert tuple(e.LD.shape) == (0, 4, 4) and tuple(e.pivots.shape) == (0, 4) and tuple(e.info.shape) == (0,)
    with pytest.raises(Exception, match="square"):
        LA.ldl_factor(kiln.zeros([2, 3]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5)])
def test_geqrf_matches_lapack(dtype, shape):
    rng = np.random.default_rng(3)
    a = rand(rng, shape, dtype)
    r = kiln.geqrf(kiln.tensor(a))
    assert tuple(r.a.shape) == shape and tuple(r.tau.shape) == shape[:-2] + (min(shape[-2:]),)
    fn = {"f": lapack.sgeqrf, "d": lapack.dgeqrf, "F": lapack.cgeqrf, "D": lapack.zgeqrf}[a.dtype.char]
    for idx in np.ndindex(*shape[:-2]):
        qr, tau, _, info = fn(a[idx].copy())
        assert info == 0
        np.testing.assert_allclose(r.a.numpy()[idx], qr, rtol=TOL[dtype], atol=TOL[dtype] * 10)
        np.testing.assert_allclose(r.tau.numpy()[idx], tau, rtol=TOL[dtype], atol=TOL[dtype] * 10)
    # Q from the raw form equals linalg.qr's Q; the method spelling works too
    k = min(shape[-2:])
    q = LA.householder_product(r.a[..., :k], r.tau)  # the first k reflectors' columns
    np.testing.assert_allclose(q.numpy(), LA.qr(kiln.tensor(a)).Q.numpy(), rtol=0, atol=TOL[dtype] * 100)
    np.testing.assert_array_equal(kiln.tensor(a).geqrf().tau.numpy(), r.tau.numpy())


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 5, 5))
    for name, fk, ft in [
        ("ldl_factor", lambda x: LA.ldl_factor(x).LD, lambda x: torch.linalg.ldl_factor(x).LD),
        ("ldl pivots", lambda x: LA.ldl_factor(x).pivots, lambda x: torch.linalg.ldl_factor(x).pivots),
        ("geqrf a", lambda x: kiln.geqrf(x).a, lambda x: torch.geqrf(x).a),
        ("geqrf tau", lambda x: kiln.geqrf(x).tau, lambda x: torch.geqrf(x).tau),
    ]:
        np.testing.assert_allclose(fk(kiln.tensor(a)).numpy(), ft(torch.from_numpy(a)).numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=name)
    got = LA.eigvals(kiln.tensor(a)).numpy()
    want = torch.linalg.eigvals(torch.from_numpy(a)).numpy()
    for b in range(2):
        as_set_close(got[b], want[b], 1e-10)
