"""Tensor pickling and copying: every dtype round-trips bit for bit through
pickle and deepcopy, layouts and requires_grad are kept, a Parameter stays a
Parameter (so copy.deepcopy of a module works), and deepcopy refuses a
non-leaf as torch does. dir(kiln) lists public names only."""

import copy
import pickle

import numpy as np
import pytest

import kiln

DTYPES = ["float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8", "uint8", "int16",
          "int32", "int64", "bool", "complex64", "complex128"]


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_round_trips_bit_for_bit(name):
    d = getattr(kiln, name)
    x = kiln.tensor(np.random.default_rng(0).uniform(-3, 3, (3, 4))).to(d)
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x)):
        assert y.dtype == d and y.shape == x.shape
        np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_layouts_grad_and_independence():
    base = kiln.arange(12.0).reshape(3, 4)
    t = base.t()  # non-contiguous
    u = pickle.loads(pickle.dumps(t))
    np.testing.assert_array_equal(u.numpy(), t.numpy())
    u[0, 0] = 100.0
    assert float(base[0, 0].item()) == 0.0  # a copy of its own
    assert pickle.loads(pickle.dumps(kiln.tensor(2.5))).shape == ()
    assert pickle.loads(pickle.dumps(kiln.empty(0, 3))).shape == (0, 3)
    leaf = kiln.ones(3, requires_grad=True)
    c = copy.deepcopy(leaf)
    assert c.requires_grad and c.is_leaf
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(leaf * 2)
    shared = kiln.ones(2)
    a, b = copy.deepcopy([shared, shared])
    assert a is b  # the memo keeps one copy per object


def test_parameters_and_modules_deepcopy():
    lin = kiln.nn.Linear(4, 3)
    twin = copy.deepcopy(lin)
    assert isinstance(twin.weight, kiln.nn.Parameter) and twin.weight.requires_grad
    np.testing.assert_array_equal(twin.weight.detach().numpy(), lin.weight.detach().numpy())
    with kiln.no_grad():
        twin.weight.fill_(0.0)
    assert float(lin.weight.detach().abs().sum().item()) > 0
    p = pickle.loads(pickle.dumps(lin.bias))
    assert isinstance(p, kiln.nn.Parameter)


def test_dir_lists_public_names_only():
    names = dir(kiln)
    assert "tensor" in names and "fft" in names and "einsum" in names
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
