"""scatter_reduce and index_reduce (kiln/_scatter_reduce.py) against a NumPy loop
written from torch's definition, for every reduction, both include_self
settings, float and integer dtypes, both dims; the in-place methods; the
errors; a gradient through sum and amax."""

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(8)


def reference(x, dim, index, src, reduce, include_self):
    out = x.copy()
    groups = {}
    for pos in np.ndindex(index.shape):
        dest = list(pos)
        dest[dim] = index[pos]
        groups.setdefault(tuple(dest), []).append(src[pos])
    for dest, vals in groups.items():
        vals = ([x[dest]] if include_self else []) + vals
        if reduce == "sum":
            out[dest] = np.sum(vals)
        elif reduce == "prod":
            out[dest] = np.prod(vals)
        elif reduce == "mean":
            out[dest] = np.sum(vals) / len(vals) if x.dtype.kind == "f" else np.sum(vals) // len(vals)
        elif reduce == "amax":
            out[dest] = np.max(vals)
        else:
            out[dest] = np.min(vals)
    return out


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_reduce_matches_the_definition(reduce, include_self, dtype, dim):
    x = RNG.integers(-4, 5, (4, 5)).astype(dtype)
    ishape = (3, 4) if dim == 0 else (4, 3)
    index = RNG.integers(0, x.shape[dim], ishape)
    src = RNG.integers(-4, 5, (4, 5)).astype(dtype)
    got = kiln.scatter_reduce(kiln.tensor(x), dim, kiln.tensor(index), kiln.tensor(src), reduce,
                              include_self=include_self)
    want = reference(x, dim, index, src[:ishape[0], :ishape[1]], reduce, include_self)
    assert got.dtype == kiln.tensor(x).dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if dtype == np.float32 else 1e-12)


def test_index_reduce_and_in_place_methods():
    x = np.ones((3, 2))
    src = np.array([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    got = kiln.tensor(x).index_reduce(0, kiln.tensor(np.array([0, 2, 0])), kiln.tensor(src), "prod")
    np.testing.assert_array_equal(got.numpy(), [[12.0, 21.0], [1.0, 1.0], [4.0, 5.0]])
    got = kiln.index_reduce(kiln.tensor(x), 0, kiln.tensor(np.array([0, 2, 0])), kiln.tensor(src), "amax",
                            include_self=False)
    np.testing.assert_array_equal(got.numpy(), [[6.0, 7.0], [1.0, 1.0], [4.0, 5.0]])
    y = kiln.tensor(np.zeros(4))
    assert y.scatter_reduce_(0, kiln.tensor(np.array([0, 0, 3])), kiln.tensor(np.array([1.0, 5.0, 2.0])), "amax") is y
    np.testing.assert_array_equal(y.numpy(), [5.0, 0.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="reduce"):
        kiln.scatter_reduce(kiln.tensor(x), 0, kiln.tensor(np.zeros((1, 1), dtype=np.int64)), kiln.tensor(src), "max")
    with pytest.raises(IndexError):
        kiln.scatter_reduce(kiln.tensor(x), 0, kiln.tensor(np.full((1, 1), 7)), kiln.tensor(src), "sum")


def test_gradients_flow_to_the_chosen_sources():
    src = kiln.tensor(np.array([1.0, 5.0, 2.0, 3.0]), requires_grad=True)
    index = kiln.tensor(np.array([0, 0, 1, 1]))
    kiln.scatter_reduce(kiln.zeros(2, dtype=kiln.float64), 0, index, src, "amax", include_self=False).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [0.0, 1.0, 0.0, 1.0])
    src2 = kiln.tensor(np.array([1.0, 5.0, 2.0]), requires_grad=True)
    kiln.scatter_reduce(kiln.zeros(2, dtype=kiln.float64), 0, kiln.tensor(np.array([0, 0, 1])), src2,
                        "mean").sum().backward()
    np.testing.assert_allclose(src2.grad.numpy(), [1 / 3, 1 / 3, 1 / 2])
