"""kthvalue, median, nanmedian and mode against a NumPy reference written from
their definitions (a stable ascending order with NaN last; the mode's smallest
most frequent value at its last index), over dtypes, dims, keepdim, ties, NaNs,
non-contiguous and empty inputs; gradients; errors; and torch when it imports."""

import collections

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(41)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8"]


def make(dtype, shape, ties, nans=False):
    """Values exact in every dtype: integers (ties: from a narrow range) or halves."""
    lo, hi = (0, 4) if ties else (0, 120)
    a = RNG.integers(lo, hi, shape).astype(np.float64)
    if dtype.startswith(("float", "bfloat")):
        a = a / 2 - 20
        if nans:
            a[RNG.random(shape) < 0.3] = np.nan
    return a


def tensor(a, dtype):
    if dtype == "bfloat16":
        return kiln.tensor(a.astype(np.float32)).to(kiln.bfloat16)
    return kiln.tensor(a.astype(dtype))


def as_np(t):
    return (t.float() if t.dtype == kiln.bfloat16 else t).numpy().astype(np.float64)


def pick(line, op, k=None):
    """The index op picks in one line (float64, NaN last in a stable order)."""
    order = np.argsort(line, kind="stable")
    n, nans = len(line), int(np.isnan(line).sum())
    if op == "kthvalue":
        return order[k - 1]
    if op == "median":
        return order[n - nans] if nans else order[(n - 1) // 2]
    if op == "nanmedian":
        return order[(n - nans - 1) // 2] if nans < n else order[0]
    counts = collections.Counter(v for v in line if not np.isnan(v))
    if not counts:
        return 0
    top = max(counts.values())
    best = min(v for v, c in counts.items() if c == top)
    return int(np.nonzero(line == best)[0][-1])


def reference(a, op, dim, keepdim, k=None):
    moved = np.moveaxis(a, dim, -1)
    idx = np.apply_along_axis(lambda line: pick(line, op, k), -1, moved.reshape(-1, moved.shape[-1]))
    idx = idx.reshape(moved.shape[:-1])
    vals = np.take_along_axis(moved, idx[..., None], -1)[..., 0]
    if keepdim:
        idx, vals = np.expand_dims(idx, dim), np.expand_dims(vals, dim)
    return vals, idx


def call(op, x, dim, keepdim, k):
    if op == "kthvalue":
        return kiln.kthvalue(x, k, dim, keepdim)
    return getattr(kiln, op)(x, dim, keepdim)


@pytest.mark.parametrize("op", ["kthvalue", "median", "nanmedian", "mode"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_reference(op, dtype):
    for shape, dim, keepdim, ties in [((5, 37), -1, False, True), ((37, 5), 0, True, False),
                                      ((3, 4, 70), 1, False, True), ((2, 300), 1, True, True)]:
        a = make(dtype, shape, ties, nans=op != "mode")
        x = tensor(a, dtype)
        n = shape[dim]
        for k in ([1, n // 2 + 1, n] if op == "kthvalue" else [None]):
            got = call(op, x, dim, keepdim, k)
            want_v, want_i = reference(a, op, dim, keepdim, k)
            np.testing.assert_array_equal(got.indices.numpy(), want_i, err_msg=f"{op} {shape} {dim} {k}")
            np.testing.assert_array_equal(as_np(got.values), want_v)
            assert got.values.dtype == x.dtype and got.indices.dtype == kiln.int64


@pytest.mark.parametrize("op", ["kthvalue", "median", "nanmedian", "mode"])
def test_strided_inputs_scalars_and_empty_lines(op):
    a = make("float32", (6, 40), ties=True, nans=op != "mode")
    x = kiln.tensor(a.astype(np.float32)).t()  # [40, 6], lines along dim 0 strided
    got = call(op, x, 0, False, 7)
    want_v, want_i = reference(a.T, op, 0, False, 7)
    np.testing.assert_array_equal(got.indices.numpy(), want_i)
    np.testing.assert_array_equal(got.values.numpy(), want_v.astype(np.float32))
    s = call(op, kiln.tensor(2.5), 0, False, 1)
    assert s.values.shape == () and float(s.values) == 2.5 and int(s.indices) == 0
    e = call(op, kiln.zeros(0, 3), 1, False, 1)  # no lines: empty results
    assert tuple(e.values.shape) == (0,) and tuple(e.indices.shape) == (0,)
    with pytest.raises(IndexError, match="non-zero size|out of range"):
        call(op, kiln.zeros(0, 3), 0, False, 1)


def test_whole_tensor_median():
    a = make("float64", (7, 9), ties=True)
    assert float(kiln.median(kiln.tensor(a))) == np.sort(a.ravel())[(a.size - 1) // 2]
    b = a.copy()
    b[2, 3] = np.nan
    assert np.isnan(float(kiln.median(kiln.tensor(b))))
    clean = np.sort(b[~np.isnan(b)])
    assert float(kiln.nanmedian(kiln.tensor(b))) == clean[(clean.size - 1) // 2]
    assert np.isnan(float(kiln.nanmedian(kiln.full((2, 3), float("nan")))))
    assert np.isnan(float(kiln.median(kiln.zeros(0))))
    with pytest.raises(ValueError, match="no median"):
        kiln.median(kiln.zeros(0, dtype=kiln.int64))
    assert int(kiln.tensor(np.array([[5, 1], [3, 3]])).median()) == 3


@pytest.mark.parametrize("threads", [1, 2])
def test_one_long_line_split_over_threads(threads):
    # A single line of >= 2^18 entries is selected in parts, one per thread.
    a = RNG.integers(0, 60, 300_001).astype(np.float64) / 4 - 7
    a[RNG.random(a.size) < 0.01] = np.nan
    before = kiln.get_num_threads()
    try:
        kiln.set_num_threads(threads)
        x = kiln.tensor(a.astype(np.float32))
        for op, k in [("kthvalue", 1), ("kthvalue", 150_000), ("kthvalue", 300_001), ("median", None),
                      ("nanmedian", None)]:
            got = call(op, x, 0, False, k)
            i = pick(a, op, k)
            assert int(got.indices) == i, op
            np.testing.assert_array_equal(got.values.numpy(), np.float32(a[i]))
        clean = np.sort(a[~np.isnan(a)])
        assert float(kiln.nanmedian(x)) == clean[(clean.size - 1) // 2]
    finally:
        kiln.set_num_threads(before)


def test_results_do_not_depend_on_threads():
    a = make("float32", (64, 513), ties=True, nans=True)
    before = kiln.get_num_threads()
    try:
        runs = []
        for n in (1, 2):
            kiln.set_num_threads(n)
            x = kiln.tensor(a.astype(np.float32))
            runs.append([r.numpy() for op in ("median", "nanmedian", "mode") for r in call(op, x, 1, False, 1)])
    finally:
        kiln.set_num_threads(before)
    for p, q in zip(*runs):
        np.testing.assert_array_equal(p, q)


def test_gradients():
    a = make("float64", (4, 9), ties=False)
    for op in ("kthvalue", "median", "nanmedian", "mode"):
        x = kiln.tensor(a, requires_grad=True)
        r = call(op, x, 1, False, 3)
        g = RNG.standard_normal(4)
        (r.values * kiln.tensor(g)).sum().backward()
        want = np.zeros_like(a)
        want[np.arange(4), r.indices.numpy()] = g
        np.testing.assert_array_equal(x.grad.numpy(), want, err_msg=op)
    # The whole-tensor median shares its gradient among the entries equal to it.
    x = kiln.tensor(np.array([1.0, 2.0, 2.0, 3.0]), requires_grad=True)
    kiln.median(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0.5, 0.5, 0])
    x = kiln.tensor(np.array([1.0, 2.0, np.nan, np.nan]), requires_grad=True)
    kiln.median(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0.5, 0.5])


def test_out_and_methods():
    a = make("float32", (3, 8), ties=True).astype(np.float32)
    x = kiln.tensor(a)
    v, i = kiln.empty(3), kiln.empty(3, dtype=kiln.int64)
    r = kiln.kthvalue(x, 2, 1, out=(v, i))
    np.testing.assert_array_equal(v.numpy(), np.sort(a, 1)[:, 1])
    assert r.values is v and r.indices is i
    with pytest.raises(ValueError, match="out tensors"):
        kiln.median(x, 1, out=(kiln.empty(4), kiln.empty(4, dtype=kiln.int64)))
    np.testing.assert_array_equal(x.mode(0).values.numpy(), kiln.mode(x, 0).values.numpy())
    np.testing.assert_array_equal(x.nanmedian(1, keepdim=True).indices.numpy(),
                                  kiln.nanmedian(x, 1, True).indices.numpy())


def test_errors():
    x = kiln.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError, match="out of range"):
        kiln.kthvalue(x, 4, 1)
    with pytest.raises(IndexError, match="out of range"):
        kiln.kthvalue(x, 0, 1)
    with pytest.raises(IndexError):
        kiln.median(x, 2)
    for op in ("kthvalue", "median", "nanmedian"):
        with pytest.raises(NotImplementedError, match="bool"):
            call(op, x > 1, 1, False, 1)
    np.testing.assert_array_equal(kiln.mode(x > 1, 1).values.numpy(), [False, True])
    with pytest.raises(TypeError):
        kiln.median(kiln.tensor(np.ones(3, np.complex64)), 0)


@pytest.mark.parametrize("op", ["kthvalue", "median", "nanmedian", "mode"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_matches_torch(op, dtype):
    torch = pytest.importorskip("torch")
    for shape, dim, ties in [((6, 33), 1, True), ((40, 5), 0, False), ((3, 129), -1, True)]:
        a = make(dtype, shape, ties, nans=False)
        got = call(op, kiln.tensor(a.astype(dtype)), dim, True, 2)
        ta = torch.tensor(a.astype(dtype))
        want = torch.kthvalue(ta, 2, dim, True) if op == "kthvalue" else getattr(torch, op)(ta, dim, True)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        if op in ("kthvalue", "mode"):
            # torch's index among equal values is whatever its quickselect (kthvalue) or
            # unstable sort (mode) leaves there; kiln's is the stable order's (above).
            np.testing.assert_array_equal(np.take_along_axis(a, got.indices.numpy(), dim).astype(dtype),
                                          want.values.numpy())
        else:
            np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    b = make("float64", (5, 11), ties=True, nans=True)
    for f in ("median", "nanmedian"):
        np.testing.assert_array_equal(getattr(kiln, f)(kiln.tensor(b), 1).values.numpy(),
                                      getattr(torch, f)(torch.tensor(b), 1).values.numpy())
        np.testing.assert_array_equal(getattr(kiln, f)(kiln.tensor(b), 1).indices.numpy(),
                                      getattr(torch, f)(torch.tensor(b), 1).indices.numpy())
