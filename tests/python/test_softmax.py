"""softmax / log_softmax against NumPy float64 references."""
import ml_dtypes
import numpy as np
import pytest

import kiln

F = kiln.nn.functional


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def ref(x, dim, log):
    x = x.astype(np.float64)
    m = np.max(x, axis=dim, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        z = x - m
        s = np.sum(np.exp(z), axis=dim, keepdims=True)
        return z - np.log(s) if log else np.exp(z) / s


def close(got, want, dtype, x, log=False):
    # Relative error grows with |x - max| (rounding of x - max is amplified by exp);
    # the sum's rounding gives log_softmax an absolute error of a few eps; float16
    # results below 6.1e-5 are subnormal (spacing 6e-8); float64 sums 1e5 terms.
    got = np.asarray(got).astype(np.float64)
    eps = {"float16": 2**-10, "bfloat16": 2**-7, "float32": 2**-23, "float64": 2**-52}[dtype]
    atol = 8 * eps if log else {"float16": 3e-8, "bfloat16": 1e-6}.get(dtype, 1e-30)
    np.testing.assert_allclose(got, want, rtol=eps * (8 + np.abs(x).max() * 2) + (1e-13 if dtype == "float64" else 0),
                               atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 1000), 1), ((3, 1000), 0), ((4, 5, 6), 1), ((2, 70000), -1),
                                       ((1, 151936), -1)])
@pytest.mark.parametrize("log", [False, True])
def test_values(dtype, shape, dim, log, rng):
    x = (rng.standard_normal(shape) * 3).astype(np_dtype(dtype))
    fn = kiln.log_softmax if log else kiln.softmax
    y = fn(kiln.tensor(x), dim)
    assert y.dtype == getattr(kiln, dtype)
    close(y, ref(x, dim, log), dtype, np.abs(x.astype(np.float64)), log)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 46, 63, 64, 65])
@pytest.mark.parametrize("rows", [1, 5, 2000])
@pytest.mark.parametrize("log", [False, True])
def test_short_rows(n, rows, log, rng):
    # Rows of a few vectors take a register-resident path, two rows at a time
    # (and an odd row last); 2000 rows also split over threads.
    x = (rng.standard_normal((rows, n)) * 3).astype(np.float32)
    y = (kiln.log_softmax if log else kiln.softmax)(kiln.tensor(x), -1)
    close(y, ref(x, -1, log), "float32", np.abs(x.astype(np.float64)), log)


def test_short_rows_special_values_per_row():
    # A poisoned row must not leak into the row it is paired with.
    inf, nan = np.inf, np.nan
    x = np.tile(np.linspace(-2, 2, 46, dtype=np.float32), (6, 1))
    x[1, 5], x[2, :], x[4, 7], x[5, 0] = nan, -inf, inf, -inf
    want_nan = [False, True, True, False, True, False]
    for fn, log in ((kiln.softmax, False), (kiln.log_softmax, True)):
        y = np.asarray(fn(kiln.tensor(x), -1))
        for r in range(6):
            assert np.all(np.isnan(y[r])) == want_nan[r], (log, r)
        np.testing.assert_allclose(y[[0, 3]], ref(x[[0, 3]], -1, log), rtol=1e-5, atol=1e-6)
        assert y[5, 0] == (-inf if log else 0.0)
        np.testing.assert_allclose(y[5, 1:], ref(x[5:6], -1, log)[0, 1:], rtol=1e-5, atol=1e-6)


def test_namespaces_methods_and_dtype(rng):
    x = rng.standard_normal((4, 9)).astype(np.float32)
    t = kiln.tensor(x)
    for y in (F.softmax(t, dim=-1), t.softmax(-1), kiln.softmax(t, -1)):
        np.testing.assert_allclose(np.asarray(y), ref(x, -1, False), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t.log_softmax(1)), ref(x, 1, True), rtol=1e-5, atol=1e-6)
    # Implicit dim of F.softmax: 1 for 2-D.
    np.testing.assert_allclose(np.asarray(F.softmax(t)), ref(x, 1, False), rtol=1e-5)
    # dtype= computes and returns float32 from bfloat16.
    b = t.to(kiln.bfloat16)
    y = F.log_softmax(b, dim=1, dtype=kiln.float32)
    assert y.dtype == kiln.float32
    np.testing.assert_allclose(np.asarray(y), ref(np.asarray(b).astype(np.float64), 1, True), rtol=1e-5, atol=1e-5)


def test_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([[0, -inf, 1], [-inf, -inf, -inf], [1, nan, 2], [1, inf, 2]], np.float32)
    y = np.asarray(kiln.softmax(kiln.tensor(x), 1))
    assert y[0, 1] == 0 and np.all(np.isnan(y[1:]))
    ly = np.asarray(kiln.log_softmax(kiln.tensor(x), 1))
    assert ly[0, 1] == -inf and np.all(np.isnan(ly[1:]))


def test_empty_scalar_noncontiguous_and_errors(rng):
    assert kiln.softmax(kiln.zeros(0, 3), 1).shape == (0, 3)
    assert float(kiln.softmax(kiln.tensor(2.0), 0)) == 1.0
    x = rng.standard_normal((5, 6)).astype(np.float32)
    t = kiln.tensor(x).t()
    np.testing.assert_allclose(np.asarray(kiln.softmax(t, 1)), ref(x.T, 1, False), rtol=1e-5)
    with pytest.raises(TypeError):
        kiln.softmax(kiln.arange(4), 0)
    np.testing.assert_allclose(np.asarray(kiln.softmax(kiln.arange(4), 0, dtype=kiln.float32)),
                               ref(np.arange(4.0), 0, False), rtol=1e-6)
    with pytest.raises(IndexError):
        kiln.softmax(t, 2)


@pytest.mark.skipif(__import__("shutil").which("kiln") is None, reason="kiln CLI not on PATH")
@pytest.mark.parametrize("what", ["softmax", "attention", "sample"])
def test_bench_quick_json(what):
    import json
    import subprocess
    out = subprocess.run(["kiln", "bench", what, "--quick", "--json", "--repeat", "2"], check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["kiln_version"] == kiln.__version__ and doc["results"]
    for r in doc["results"]:
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
    assert any(m["name"] == "torch peer" for m in doc["missing"])
