"""Outputs of 16 MiB and more are written with non-temporal stores
(src/cpu/stream_store.h): tril/triu, the gathers (repeat, flip, roll) and
cat/stack. Odd shapes put every run at an unaligned start with a ragged tail,
so the plain-store head and tail around the streamed body are exercised; the
results must equal NumPy's, and the same ops on small outputs (plain stores)."""
import numpy as np
import pytest

import kiln

MIB16 = 16 << 20


@pytest.fixture(scope="module", params=[np.float32, np.int64], ids=["float32", "int64"])
def big(request):
    rng = np.random.default_rng(11)
    cols = 4099 if request.param == np.float32 else 2051
    a = (rng.standard_normal((1031, cols)) * 100).astype(request.param)
    assert a.nbytes > MIB16
    return a


def test_tril_triu(big):
    t = kiln.tensor(big)
    for k in (0, 3, -700, 5000):
        np.testing.assert_array_equal(kiln.tril(t, k).numpy(), np.tril(big, k))
        np.testing.assert_array_equal(kiln.triu(t, k).numpy(), np.triu(big, k))
    batched = np.stack([big[:, :2049], big[:, 1:2050]])  # two matrices of > 8 MiB each
    np.testing.assert_array_equal(kiln.tril(kiln.tensor(batched), 1).numpy(), np.tril(batched, 1))


def test_gathers(big):
    t = kiln.tensor(big)
    np.testing.assert_array_equal(kiln.flip(t, [0]).numpy(), big[::-1])
    np.testing.assert_array_equal(kiln.flip(t, [1]).numpy(), big[:, ::-1])
    np.testing.assert_array_equal(kiln.roll(t, 777, -1).numpy(), np.roll(big, 777, -1))
    np.testing.assert_array_equal(kiln.roll(t, -5, 0).numpy(), np.roll(big, -5, 0))
    half = big[:520, :1025]
    np.testing.assert_array_equal(kiln.tensor(half).repeat(2, 2).numpy(), np.tile(half, (2, 2)))
    row = big[3, 1:]
    np.testing.assert_array_equal(kiln.tensor(row).repeat(1100).numpy(), np.tile(row, 1100))


def test_cat_and_stack(big):
    parts = [big[:, :1000], big[:, 1000:2001], big[:, 2001:]]
    ts = [kiln.tensor(np.ascontiguousarray(p)) for p in parts]
    np.testing.assert_array_equal(kiln.cat(ts, -1).numpy(), big)
    rows = [big[:400], big[400:1031]]
    np.testing.assert_array_equal(kiln.cat([kiln.tensor(r) for r in rows], 0).numpy(), big)
    q = big[:, :2048]
    np.testing.assert_array_equal(kiln.stack([kiln.tensor(q), kiln.tensor(q[::-1].copy())], 1).numpy(),
                                  np.stack([q, q[::-1]], 1))
    # a strided input into a streamed output slab
    np.testing.assert_array_equal(kiln.cat([kiln.tensor(big).t(), kiln.tensor(big).t()], 0).numpy(),
                                  np.concatenate([big.T, big.T], 0))


def test_scans(big):
    """cumsum / cumprod into a streamed float32 output: along the last dim (eight
    lines staged at a time, 1031 lines = 128 groups and 7 single lines, 4099 =
    16 chunks and a ragged one) and down the rows (each row staged). Each line is
    summed in float64 in order, so the results equal NumPy's sequential scan."""
    if big.dtype != np.float32:
        pytest.skip("the staged scan paths are float32's")
    x = big / 100
    near1 = (1 + x / 300).astype(np.float32)
    for a in (x, near1):
        t = kiln.tensor(a)
        for dim in (-1, 0):
            np.testing.assert_array_equal(kiln.cumsum(t, dim).numpy(),
                                          np.cumsum(a.astype(np.float64), dim).astype(np.float32))
        np.testing.assert_array_equal(kiln.cumprod(t, -1).numpy(),
                                      np.cumprod(a.astype(np.float64), -1).astype(np.float32))
