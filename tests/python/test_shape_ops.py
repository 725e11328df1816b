# cat/stack and the stacking helpers, the split family: against NumPy (and torch
# when installed) over dtypes, negative dims, empty and non-contiguous inputs,
# out= and the error cases.
import ml_dtypes
import numpy as np
import pytest

import kiln

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.int16,
          np.int8, np.uint8, np.bool_, np.complex64, np.complex128]


def arr(shape, dtype, rng):
    a = rng.standard_normal(shape) * 5
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    if dtype is np.bool_:
        return a > 0
    return a.astype(dtype)


def np_of(t):
    return np.asarray(t.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_matches_numpy(dtype, dim, rng):
    a, b, c = arr((3, 4), dtype, rng), arr((3, 4), dtype, rng), arr((3, 4), dtype, rng)
    r = kiln.cat([kiln.tensor(a), kiln.tensor(b), kiln.tensor(c)], dim)
    np.testing.assert_array_equal(np_of(r), np.concatenate([a, b, c], axis=dim))
    for alias in (kiln.concat, kiln.concatenate):
        np.testing.assert_array_equal(np_of(alias((kiln.tensor(a), kiln.tensor(b)), dim=dim)),
                                      np.concatenate([a, b], axis=dim))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_matches_numpy(dtype, dim, rng):
    a, b = arr((3, 4), dtype, rng), arr((3, 4), dtype, rng)
    r = kiln.stack([kiln.tensor(a), kiln.tensor(b)], dim=dim)
    np.testing.assert_array_equal(np_of(r), np.stack([a, b], axis=dim))


def test_cat_promotes_like_torch(rng):
    i = kiln.tensor(np.arange(3, dtype=np.int32))
    f = kiln.tensor(np.ones(2, dtype=np.float16))
    b = kiln.tensor(np.array([True]))
    assert kiln.cat([i, f]).dtype == kiln.float16
    assert kiln.cat([b, i]).dtype == kiln.int32
    assert kiln.cat([i, kiln.tensor(np.ones(1, np.complex64))]).dtype == kiln.complex64
    np.testing.assert_array_equal(np_of(kiln.cat([b, i])), [1, 0, 1, 2])
    assert kiln.stack([i, i.to(kiln.float64)]).dtype == kiln.float64


def test_cat_non_contiguous_and_expanded(rng):
    a = arr((4, 6), np.float32, rng)
    ta = kiln.tensor(a)
    t = ta.t()  # [6, 4], transposed strides
    s = ta[:, ::2]  # [4, 3], strided
    e = kiln.tensor(a[:1]).expand(4, 6)
    np.testing.assert_array_equal(np_of(kiln.cat([t, t], 1)), np.concatenate([a.T, a.T], 1))
    np.testing.assert_array_equal(np_of(kiln.cat([s, ta, e], 1)),
                                  np.concatenate([a[:, ::2], a, np.broadcast_to(a[:1], (4, 6))], 1))
    np.testing.assert_array_equal(np_of(kiln.stack([t, t], 1)), np.stack([a.T, a.T], 1))


def test_cat_empty_inputs():
    x = kiln.ones(2, 3)
    legacy = kiln.empty(0)
    r = kiln.cat([legacy, x, legacy], dim=1)
    assert tuple(r.shape) == (2, 3)
    assert tuple(kiln.cat([kiln.empty(0, 3), x]).shape) == (2, 3)
    assert tuple(kiln.cat([legacy, legacy]).shape) == (0,)
    assert tuple(kiln.stack([kiln.empty(0, 3)] * 2, 1).shape) == (0, 2, 3)
    # the skipped input still takes part in promotion
    assert kiln.cat([x, kiln.empty(0, dtype=kiln.float64)]).dtype == kiln.float64


def test_cat_stack_out():
    a, b = kiln.ones(2, 3), kiln.zeros(1, 3)
    out = kiln.empty(3, 3, dtype=kiln.float64)
    r = kiln.cat([a, b], out=out)
    assert r is out
    np.testing.assert_array_equal(np_of(out), np.concatenate([np.ones((2, 3)), np.zeros((1, 3))]))
    out2 = kiln.empty(2, 3, 2)
    assert kiln.stack([a, a + 1], dim=-1, out=out2) is out2
    np.testing.assert_array_equal(np_of(out2)[..., 1], np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match=r"\[cat\] out has shape"):
        kiln.cat([a, b], out=kiln.empty(4, 3))
    with pytest.raises(TypeError, match=r"\[cat\].*can't be cast"):
        kiln.cat([a, b], out=kiln.empty(3, 3, dtype=kiln.int64))


def test_cat_stack_errors():
    with pytest.raises(ValueError, match=r"\[cat\] expected a non-empty"):
        kiln.cat([])
    with pytest.raises(ValueError, match=r"\[cat\] zero-dimensional tensor \(at position 1\)"):
        kiln.cat([kiln.ones(1), kiln.tensor(1.0)])
    with pytest.raises(ValueError, match=r"\[cat\] sizes of tensors must match except in dimension 0"):
        kiln.cat([kiln.ones(2, 3), kiln.ones(2, 4)])
    with pytest.raises(ValueError, match=r"\[cat\] tensors must have the same number of dimensions"):
        kiln.cat([kiln.ones(2, 3), kiln.ones(2)])
    with pytest.raises(IndexError, match=r"\[cat\]"):
        kiln.cat([kiln.ones(2, 3)], dim=2)
    with pytest.raises(ValueError, match=r"\[stack\] expects each tensor to be equal size"):
        kiln.stack([kiln.ones(2, 3), kiln.ones(3, 2)])
    with pytest.raises(ValueError, match=r"\[stack\] expected a non-empty"):
        kiln.stack([])
    with pytest.raises(IndexError, match=r"\[stack\]"):
        kiln.stack([kiln.ones(2)], dim=2)
    with pytest.raises(TypeError, match=r"\[cat\] expected a sequence of tensors"):
        kiln.cat(kiln.ones(2))


@pytest.mark.parametrize("shapes", [[(), ()], [(3,), (3,)], [(2, 3), (2, 1)], [(2, 3, 4), (2, 3, 1)],
                                    [(1, 3), (3,)], [(2, 3), (3,)]])
@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
def test_stacking_helpers_match_numpy(name, shapes, rng):
    arrs = [arr(s, np.float32, rng) for s in shapes]
    ts = [kiln.tensor(a) for a in arrs]
    try:
        want = getattr(np, "vstack" if name == "row_stack" else name)(arrs)
    except ValueError:  # numpy refuses: so must kiln
        with pytest.raises(ValueError, match=r"\[cat\]"):
            getattr(kiln, name)(ts)
        return
    np.testing.assert_array_equal(np_of(getattr(kiln, name)(ts)), want)


def test_stacking_helpers_out():
    out = kiln.empty(2, 3)
    assert kiln.vstack([kiln.ones(3), kiln.zeros(3)], out=out) is out
    np.testing.assert_array_equal(np_of(out), [[1, 1, 1], [0, 0, 0]])


def same(parts, want):
    assert len(parts) == len(want)
    for p, w in zip(parts, want):
        np.testing.assert_array_equal(np_of(p), w)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_splits_match_numpy(dim, rng):
    a = arr((7, 5), np.float32, rng)
    t = kiln.tensor(a)
    n = a.shape[dim]
    same(kiln.split(t, 2, dim), np.array_split(a, range(2, n, 2), axis=dim))
    same(t.split(2, dim), np.array_split(a, range(2, n, 2), axis=dim))
    same(kiln.split(t, [1, n - 1], dim=dim), np.split(a, [1], axis=dim))
    same(kiln.split_with_sizes(t, [n - 2, 0, 2], dim), np.split(a, [n - 2, n - 2], axis=dim))
    same(kiln.tensor_split(t, 3, dim), np.array_split(a, 3, axis=dim))
    same(kiln.tensor_split(t, [1, -1, 100], dim), np.split(a, [1, n - 1, 100], axis=dim))
    same(kiln.tensor_split(t, kiln.tensor([2, 3]), dim), np.split(a, [2, 3], axis=dim))
    same(kiln.tensor_split(t, kiln.tensor(2), dim), np.array_split(a, 2, axis=dim))
    same(kiln.unbind(t, dim), [np.take(a, i, axis=dim) for i in range(n)])
    same(t.unbind(dim), [np.take(a, i, axis=dim) for i in range(n)])
    k = -(-n // 3)
    same(kiln.chunk(t, 3, dim), np.array_split(a, range(k, n, k), axis=dim))
    same(t.chunk(3, dim), np.array_split(a, range(k, n, k), axis=dim))


def test_splits_are_views():
    t = kiln.zeros(4, 6)
    a = np.zeros((4, 6))
    for piece in (kiln.split(t, 2)[1], kiln.chunk(t, 3, 1)[0], kiln.unbind(t)[2],
                  kiln.tensor_split(t, 3, 1)[2], kiln.hsplit(t, 2)[0]):
        piece.fill_(1)
    for piece in (np.split(a, 2)[1], np.split(a, 3, 1)[0], a[2], np.array_split(a, 3, 1)[2], np.hsplit(a, 2)[0]):
        piece[...] = 1
    np.testing.assert_array_equal(np_of(t), a)


def test_chunk_and_split_edge_cases():
    e = kiln.empty(0, 3)
    assert [tuple(p.shape) for p in kiln.chunk(e, 3)] == [(0, 3)] * 3
    assert [tuple(p.shape) for p in kiln.split(e, 0)] == [(0, 3)]
    assert [tuple(p.shape) for p in kiln.split(e, 2)] == [(0, 3)]
    assert [tuple(p.shape) for p in kiln.chunk(kiln.ones(5), 4)] == [(2,), (2,), (1,)]
    assert len(kiln.tensor_split(kiln.ones(2), 4)) == 4


@pytest.mark.parametrize("shape", [(4,), (4, 6), (2, 4, 6)])
def test_hvd_split_match_numpy(shape, rng):
    a = arr(shape, np.float64, rng)
    t = kiln.tensor(a)
    same(kiln.hsplit(t, 2), np.hsplit(a, 2))
    same(kiln.hsplit(t, [1, 3]), np.hsplit(a, [1, 3]))
    if a.ndim >= 2:
        same(kiln.vsplit(t, 2), np.vsplit(a, 2))
        same(t.vsplit([1]), np.vsplit(a, [1]))
    else:
        with pytest.raises(ValueError, match=r"\[vsplit\] requires a tensor with at least 2 dimensions"):
            kiln.vsplit(t, 2)
    if a.ndim >= 3:
        same(kiln.dsplit(t, 3), np.dsplit(a, 3))
        same(kiln.dsplit(t, [5]), np.dsplit(a, [5]))
    else:
        with pytest.raises(ValueError, match=r"\[dsplit\]"):
            kiln.dsplit(t, 2)


def test_split_errors():
    t = kiln.ones(5, 3)
    with pytest.raises(ValueError, match=r"\[split\] expects split_size be non-negative"):
        kiln.split(t, -1)
    with pytest.raises(ValueError, match=r"\[split\] split_size can only be 0"):
        kiln.split(t, 0)
    with pytest.raises(ValueError, match=r"\[split_with_sizes\] expects split_sizes to sum exactly to 5"):
        kiln.split(t, [2, 2])
    with pytest.raises(ValueError, match=r"\[split_with_sizes\].*non-negative"):
        kiln.split_with_sizes(t, [6, -1])
    with pytest.raises(ValueError, match=r"\[chunk\] expects `chunks` to be greater than 0"):
        kiln.chunk(t, 0)
    with pytest.raises(ValueError, match=r"\[chunk\] expects at least a 1-dimensional"):
        kiln.chunk(kiln.tensor(1.0), 2)
    with pytest.raises(ValueError, match=r"\[tensor_split\] number of sections must be larger than 0"):
        kiln.tensor_split(t, 0)
    with pytest.raises(ValueError, match=r"\[tensor_split\] expected at least a 1-dimensional"):
        kiln.tensor_split(kiln.tensor(1.0), 2)
    with pytest.raises(IndexError, match=r"\[unbind\]"):
        kiln.unbind(kiln.tensor(1.0))
    with pytest.raises(IndexError, match=r"\[split\]"):
        kiln.split(t, 2, dim=2)
    with pytest.raises(ValueError, match=r"\[hsplit\] attempted to split along dimension 1.*size of the dimension 3"):
        kiln.hsplit(t, 2)
    with pytest.raises(TypeError, match=r"\[chunk\] chunks must be an int"):
        kiln.chunk(t, 1.5)


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    a = arr((4, 6), np.float32, rng)
    b = arr((4, 6), np.int64, rng)
    for dim in (0, 1, -1):
        want = torch.cat([torch.from_numpy(a), torch.from_numpy(b)], dim)
        got = kiln.cat([kiln.tensor(a), kiln.tensor(b)], dim)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(np_of(got), want.numpy())
        want = torch.stack([torch.from_numpy(a)] * 2, dim)
        np.testing.assert_array_equal(np_of(kiln.stack([kiln.tensor(a)] * 2, dim)), want.numpy())
    ta, ka = torch.from_numpy(a), kiln.tensor(a)
    for args in ((3,), ([1, 5],)):
        same(kiln.split(ka, *args, dim=1), [p.numpy() for p in torch.split(ta, *args, dim=1)])
    same(kiln.chunk(ka, 4, 1), [p.numpy() for p in torch.chunk(ta, 4, 1)])
    same(kiln.tensor_split(ka, 4, 1), [p.numpy() for p in torch.tensor_split(ta, 4, 1)])
    same(kiln.tensor_split(ka, [-2, 1, 9], 1), [p.numpy() for p in torch.tensor_split(ta, [-2, 1, 9], 1)])


# ---- flip, roll, rot90, tril/triu, repeat, tile, repeat_interleave -----------

@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_roll_match_numpy(dtype, rng):
    a = arr((3, 4, 5), dtype, rng)
    t = kiln.tensor(a)
    for dims in ([0], [-1], [0, 2], [1, -1], []):
        np.testing.assert_array_equal(np_of(kiln.flip(t, dims)), np.flip(a, dims) if dims else a)
    np.testing.assert_array_equal(np_of(t.flip(0, 2)), np.flip(a, (0, 2)))
    np.testing.assert_array_equal(np_of(t.flip([1])), np.flip(a, 1))
    np.testing.assert_array_equal(np_of(kiln.fliplr(t)), np.fliplr(a))
    np.testing.assert_array_equal(np_of(kiln.flipud(t)), np.flipud(a))
    for shifts, dims in ((2, 0), (-7, -1), ((1, 2), (0, 2)), ((1, 3), (1, 1)), (13, None), (-1, None)):
        np.testing.assert_array_equal(np_of(kiln.roll(t, shifts, dims)), np.roll(a, shifts, dims))
    np.testing.assert_array_equal(np_of(t.roll(1, 1)), np.roll(a, 1, 1))


def test_flip_roll_non_contiguous_and_empty(rng):
    a = arr((6, 8), np.float32, rng)
    t = kiln.tensor(a)
    for v, av in ((t.t(), a.T), (t[:, ::3], a[:, ::3]), (kiln.tensor(a[:1]).expand(4, 8), np.broadcast_to(a[:1], (4, 8)))):
        np.testing.assert_array_equal(np_of(kiln.flip(v, [0, 1])), np.flip(av, (0, 1)))
        np.testing.assert_array_equal(np_of(kiln.roll(v, (1, -3), (0, 1))), np.roll(av, (1, -3), (0, 1)))
        np.testing.assert_array_equal(np_of(kiln.roll(v, 5)), np.roll(av, 5))
    e = kiln.empty(0, 3)
    assert tuple(kiln.flip(e, [0]).shape) == (0, 3)
    assert tuple(kiln.roll(e, 2, 0).shape) == (0, 3)
    assert kiln.flip(kiln.tensor(2.0), [0]).item() == 2.0
    f = kiln.flip(t, [0])
    f.fill_(0)  # a copy, not a view
    assert np_of(t).tolist() == a.tolist()


@pytest.mark.parametrize("k", [-5, -1, 0, 1, 2, 3, 4])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0), (0, 2)])
def test_rot90_matches_numpy(k, dims, rng):
    a = arr((2, 3, 4), np.float32, rng)
    np.testing.assert_array_equal(np_of(kiln.rot90(kiln.tensor(a), k, dims)), np.rot90(a, k, dims))
    np.testing.assert_array_equal(np_of(kiln.tensor(a).rot90()), np.rot90(a))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("diagonal", [-6, -1, 0, 2, 9])
def test_tril_triu_match_numpy(dtype, diagonal, rng):
    a = arr((2, 4, 5), dtype, rng)
    t = kiln.tensor(a)
    np.testing.assert_array_equal(np_of(kiln.tril(t, diagonal)), np.tril(a, diagonal))
    np.testing.assert_array_equal(np_of(kiln.triu(t, diagonal)), np.triu(a, diagonal))
    np.testing.assert_array_equal(np_of(t.triu(diagonal=diagonal)), np.triu(a, diagonal))
    u = kiln.tensor(a)
    assert u.tril_(diagonal) is u
    np.testing.assert_array_equal(np_of(u), np.tril(a, diagonal))
    kiln.triu_(u, diagonal + 1)
    np.testing.assert_array_equal(np_of(u), np.triu(np.tril(a, diagonal), diagonal + 1))


def test_tril_triu_non_contiguous_out_and_errors(rng):
    a = arr((5, 7), np.float64, rng)
    t = kiln.tensor(a)
    np.testing.assert_array_equal(np_of(kiln.tril(t.t(), 1)), np.tril(a.T, 1))
    np.testing.assert_array_equal(np_of(kiln.triu(t[:, ::2])), np.triu(a[:, ::2]))
    out = kiln.empty(7, 5, dtype=kiln.float64)
    assert kiln.triu(t.t(), -1, out=out) is out
    np.testing.assert_array_equal(np_of(out), np.triu(a.T, -1))
    v = kiln.tensor(a).t()  # in place through a transposed view
    v.tril_()
    np.testing.assert_array_equal(np_of(v), np.tril(a.T))
    assert tuple(kiln.tril(kiln.empty(0, 3)).shape) == (0, 3)
    with pytest.raises(ValueError, match=r"\[tril\] input tensor must have at least 2 dimensions"):
        kiln.tril(kiln.ones(3))
    with pytest.raises(ValueError, match=r"\[triu\] out has shape"):
        kiln.triu(t, out=kiln.empty(5, 5, dtype=kiln.float64))
    with pytest.raises(TypeError, match=r"\[triu\] out has dtype"):
        kiln.triu(t, out=kiln.empty(5, 7))


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_tile_match_numpy(dtype, rng):
    a = arr((2, 3), dtype, rng)
    t = kiln.tensor(a)
    for reps in ((1, 1), (2, 3), (3, 1, 2), (0, 2), (2, 1, 1, 1)):
        np.testing.assert_array_equal(np_of(t.repeat(*reps)), np.tile(a, reps))
        np.testing.assert_array_equal(np_of(t.repeat(reps)), np.tile(a, reps))
    for reps in ((2,), (2, 2), (1, 2, 3)):
        np.testing.assert_array_equal(np_of(kiln.tile(t, reps)), np.tile(a, reps))
        np.testing.assert_array_equal(np_of(t.tile(*reps)), np.tile(a, reps))
    np.testing.assert_array_equal(np_of(t.t().repeat(2, 2)), np.tile(a.T, (2, 2)))
    np.testing.assert_array_equal(np_of(kiln.tensor(5).repeat(3)), [5, 5, 5])
    with pytest.raises(ValueError, match=r"\[repeat\] number of dimensions of repeat dims"):
        t.repeat(2)
    with pytest.raises(ValueError, match=r"\[repeat\] repeats must be non-negative"):
        t.repeat(2, -1)


def test_repeat_interleave_matches_numpy(rng):
    a = arr((3, 4), np.float32, rng)
    t = kiln.tensor(a)
    np.testing.assert_array_equal(np_of(kiln.repeat_interleave(t, 2)), np.repeat(a, 2))
    for dim in (0, 1, -1):
        np.testing.assert_array_equal(np_of(kiln.repeat_interleave(t, 3, dim)), np.repeat(a, 3, dim))
        np.testing.assert_array_equal(np_of(t.repeat_interleave(0, dim=dim)), np.repeat(a, 0, dim))
    r = [2, 0, 1]
    np.testing.assert_array_equal(np_of(kiln.repeat_interleave(t, kiln.tensor(r), 0)), np.repeat(a, r, 0))
    np.testing.assert_array_equal(np_of(t.repeat_interleave(kiln.tensor([2]), dim=1)), np.repeat(a, 2, 1))
    np.testing.assert_array_equal(np_of(kiln.repeat_interleave(kiln.tensor([1, 0, 3]))), [0, 2, 2, 2])
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] repeats must have the same size"):
        kiln.repeat_interleave(t, kiln.tensor([1, 2]), 0)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] repeats can not be negative"):
        kiln.repeat_interleave(t, -1)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] repeats can not be negative"):
        kiln.repeat_interleave(t, kiln.tensor([1, -1, 0]), 0)


def test_reorder_errors():
    t = kiln.ones(2, 3)
    with pytest.raises(ValueError, match=r"\[flip\] dim 0 appears multiple times"):
        kiln.flip(t, [0, -2])
    with pytest.raises(IndexError, match=r"\[flip\]"):
        kiln.flip(t, [2])
    with pytest.raises(ValueError, match=r"\[fliplr\] input must be >= 2-d"):
        kiln.fliplr(kiln.ones(3))
    with pytest.raises(ValueError, match=r"\[roll\] shifts and dimensions must align"):
        kiln.roll(t, (1, 2))
    with pytest.raises(ValueError, match=r"\[roll\] shifts and dimensions must align"):
        kiln.roll(t, 1, (0, 1))
    with pytest.raises(ValueError, match=r"\[rot90\] expected total rotation dims == 2"):
        kiln.rot90(t, 1, [0])
    with pytest.raises(ValueError, match=r"\[rot90\] expected rotation dims to be different"):
        kiln.rot90(t, 1, [0, -2])
    with pytest.raises(ValueError, match=r"\[rot90\] expected total dims >= 2"):
        kiln.rot90(kiln.ones(3))


def test_reorder_against_torch(rng):
    torch = pytest.importorskip("torch")
    a = arr((3, 4, 5), np.float32, rng)
    ta, ka = torch.from_numpy(a), kiln.tensor(a)
    np.testing.assert_array_equal(np_of(kiln.roll(ka, (2, -1), (0, -1))), torch.roll(ta, (2, -1), (0, -1)).numpy())
    np.testing.assert_array_equal(np_of(kiln.roll(ka, 7)), torch.roll(ta, 7).numpy())
    np.testing.assert_array_equal(np_of(kiln.rot90(ka, 3, (2, 0))), torch.rot90(ta, 3, (2, 0)).numpy())
    np.testing.assert_array_equal(np_of(ka.repeat(2, 1, 1, 2)), ta.repeat(2, 1, 1, 2).numpy())
    np.testing.assert_array_equal(np_of(kiln.tril(ka, -1)), torch.tril(ta, -1).numpy())
    r = [1, 0, 2, 1]
    np.testing.assert_array_equal(np_of(kiln.repeat_interleave(ka, kiln.tensor(r), 1)),
                                  torch.repeat_interleave(ta, torch.tensor(r), 1).numpy())


# ---- module-level view functions, in-place view methods, diagonals -----------

def test_module_level_views_match_numpy(rng):
    a = arr((2, 3, 4), np.float32, rng)
    t = kiln.tensor(a)
    cases = [
        (kiln.reshape(t, (4, 6)), a.reshape(4, 6)),
        (kiln.reshape(t, (-1,)), a.reshape(-1)),
        (kiln.permute(t, (2, 0, 1)), a.transpose(2, 0, 1)),
        (kiln.transpose(t, 0, -1), np.swapaxes(a, 0, -1)),
        (kiln.swapaxes(t, 1, 2), np.swapaxes(a, 1, 2)),
        (kiln.swapdims(t, 1, 2), np.swapaxes(a, 1, 2)),
        (t.swapdims(0, 1), np.swapaxes(a, 0, 1)),
        (kiln.squeeze(kiln.unsqueeze(t, 1)), a),
        (kiln.unsqueeze(t, -1), a[..., None]),
        (kiln.narrow(t, 2, 1, 2), a[:, :, 1:3]),
        (kiln.select(t, 1, -1), a[:, -1]),
        (kiln.flatten(t, 1), a.reshape(2, 12)),
        (kiln.ravel(t.permute(2, 1, 0)), a.transpose(2, 1, 0).ravel()),
        (kiln.t(kiln.tensor(a[0])), a[0].T),
        (kiln.clone(t), a),
        (kiln.as_strided(t, (2, 2), (1, 4)), np.lib.stride_tricks.as_strided(a, (2, 2), (4, 16))),
        (kiln.movedim(t, 0, -1), np.moveaxis(a, 0, -1)),
        (kiln.moveaxis(t, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0))),
        (t.movedim(-1, 0), np.moveaxis(a, -1, 0)),
        (kiln.unflatten(t, 2, (2, -1)), a.reshape(2, 3, 2, 2)),
        (t.unflatten(0, (1, 2)), a.reshape(1, 2, 3, 4)),
        (kiln.broadcast_to(kiln.tensor(a[:, :1]), (5, 2, 3, 4)), np.broadcast_to(a[:, :1], (5, 2, 3, 4))),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(np_of(got), want)
    assert kiln.numel(t) == 24
    v = kiln.reshape(t, (24,))
    v.fill_(0)  # a view
    assert np_of(t).sum() == 0


def test_broadcast_tensors_and_atleast(rng):
    a, b = np.ones((3, 1)), np.arange(4.0)
    r = kiln.broadcast_tensors(kiln.tensor(a), kiln.tensor(b))
    for got, want in zip(r, np.broadcast_arrays(a, b)):
        np.testing.assert_array_equal(np_of(got), want)
    assert kiln.broadcast_shapes((3, 1), (4,), (2, 1, 1)) == (2, 3, 4)
    with pytest.raises(ValueError, match=r"\[broadcast_shapes\]"):
        kiln.broadcast_tensors(kiln.ones(3), kiln.ones(4))
    for fn, nfn in ((kiln.atleast_1d, np.atleast_1d), (kiln.atleast_2d, np.atleast_2d), (kiln.atleast_3d, np.atleast_3d)):
        for shape in ((), (3,), (2, 3), (2, 3, 4)):
            x = np.arange(float(np.prod(shape))).reshape(shape)
            assert tuple(fn(kiln.tensor(x)).shape) == nfn(x).shape
        pair = fn(kiln.tensor(1.0), kiln.ones(2))
        assert [tuple(p.shape) for p in pair] == [nfn(1.0).shape, nfn(np.ones(2)).shape]
        assert len(fn([kiln.ones(2), kiln.ones(3)])) == 2


def test_in_place_view_methods():
    t = kiln.tensor(np.arange(6.0).reshape(2, 3))
    same_obj = t.t_()
    assert same_obj is t and tuple(t.shape) == (3, 2)
    np.testing.assert_array_equal(np_of(t), np.arange(6.0).reshape(2, 3).T)
    assert tuple(t.transpose_(0, 1).shape) == (2, 3)
    assert tuple(t.unsqueeze_(0).shape) == (1, 2, 3)
    assert tuple(t.squeeze_(0).shape) == (2, 3)
    assert tuple(t.swapdims_(0, 1).shape) == (3, 2)
    assert tuple(t.swapaxes_(0, 1).shape) == (2, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.complex64])
def test_diagonals_match_numpy(dtype, rng):
    a = arr((3, 4, 5), dtype, rng)
    t = kiln.tensor(a)
    for offset in (-4, -1, 0, 2, 7):
        for d1, d2 in ((0, 1), (1, 2), (-1, 0), (2, 0)):
            np.testing.assert_array_equal(np_of(kiln.diagonal(t, offset, d1, d2)), np.diagonal(a, offset, d1, d2))
        m = a[0]
        np.testing.assert_array_equal(np_of(kiln.diag(kiln.tensor(m), offset)), np.diag(m, offset))
        np.testing.assert_array_equal(np_of(kiln.diag(kiln.tensor(m[0]), offset)), np.diag(m[0], offset))
        np.testing.assert_array_equal(np_of(kiln.diagflat(kiln.tensor(m), offset)), np.diagflat(m, offset))
    np.testing.assert_array_equal(np_of(t.diagonal(1)), np.diagonal(a, 1))
    e = np_of(kiln.diag_embed(kiln.tensor(a[0]), 1))
    np.testing.assert_array_equal(e, np.stack([np.diag(r, 1) for r in a[0]]))
    e = np_of(kiln.diag_embed(kiln.tensor(a[0]), -1, 0, 2))
    np.testing.assert_array_equal(e, np.moveaxis(np.stack([np.diag(r, -1) for r in a[0]]), 0, 1))
    if dtype is not np.bool_:
        np.testing.assert_allclose(np_of(kiln.trace(kiln.tensor(a[0]))), np.trace(a[0]), rtol=1e-6)


def test_diagonal_is_a_view_and_errors():
    t = kiln.zeros(3, 3)
    kiln.diagonal(t).fill_(1)
    np.testing.assert_array_equal(np_of(t), np.eye(3))
    t.diagonal(-1).fill_(2)
    assert np_of(t)[2, 1] == 2
    with pytest.raises(ValueError, match=r"\[diagonal\] dimensions cannot be identical"):
        kiln.diagonal(t, 0, 0, -2)
    with pytest.raises(ValueError, match=r"\[diag\] matrix or a vector expected"):
        kiln.diag(kiln.ones(2, 2, 2))
    with pytest.raises(ValueError, match=r"\[trace\] expected a matrix"):
        kiln.trace(kiln.ones(3))
    with pytest.raises(ValueError, match=r"\[movedim\] repeated dim in `source`"):
        kiln.movedim(t, (0, 0), (0, 1))
    with pytest.raises(ValueError, match=r"\[movedim\] invalid source or destination dims"):
        kiln.movedim(t, (0, 1), (0,))


def test_linalg_diagonal_defaults_to_the_last_two_dims(rng):
    a = arr((2, 3, 4), np.float64, rng)
    got = kiln.linalg.diagonal(kiln.tensor(a), offset=1)
    np.testing.assert_array_equal(np_of(got), np.diagonal(a, 1, -2, -1))
