"""kiln.Tensor attributes, views (checked against NumPy's views of the same data),
copies, factories and errors."""
import math

import numpy as np
import pytest

import kiln


def pair(shape=(2, 3, 4), dtype=np.float32):
    """A kiln tensor and a NumPy array holding the same values (independent memory)."""
    a = np.arange(math.prod(shape), dtype=dtype).reshape(shape)
    return kiln.tensor(a), a


def elem_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def same_storage(view, base):
    """True when the view's first element lies inside the base tensor's memory."""
    lo = base.data_ptr()
    hi = lo + base.numel() * base.element_size()
    return view.numel() == 0 or lo <= view.data_ptr() < hi


def check_view(v, expected, base):
    """v matches the NumPy view `expected` in shape, strides and values, and shares base's memory."""
    assert v.shape == expected.shape
    # Strides of size-1 dims are arbitrary (NumPy and torch pick differently).
    keep = [i for i, n in enumerate(expected.shape) if n != 1]
    assert [v.strides[i] for i in keep] == [elem_strides(expected)[i] for i in keep]
    np.testing.assert_array_equal(v.numpy(), expected)
    assert same_storage(v, base)


# ---- attributes ------------------------------------------------------------------


def test_attributes():
    t, a = pair((2, 3, 4))
    assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
    assert t.strides == (12, 4, 1)
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12 and t.stride(-1) == 1
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.dtype == kiln.float32
    assert t.device == kiln.device("cpu") and str(t.device) == "cpu"
    assert t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24 and len(t) == 2
    assert t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 96
    assert t.is_contiguous()
    assert isinstance(t.data_ptr(), int) and t.data_ptr() != 0
    assert t.tolist() == a.tolist()
    assert t.is_floating_point() and not t.is_complex()


def test_repr():
    assert repr(kiln.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(kiln.tensor([1, 2])) == "tensor([1, 2])"
    assert "dtype=kiln.float16" in repr(kiln.tensor([1.0], dtype=kiln.float16))
    assert str(kiln.zeros(0, 2)).startswith("tensor([]")


@pytest.mark.parametrize(
    "dtype, value, expected",
    [
        (kiln.float32, 1.5, 1.5),
        (kiln.int64, -7, -7),
        (kiln.uint64, 2**64 - 1, 2**64 - 1),
        (kiln.bool, True, True),
        (kiln.complex64, 1 + 2j, 1 + 2j),
        (kiln.bfloat16, 0.5, 0.5),
        (kiln.float8_e4m3fn, 448.0, 448.0),
    ],
)
def test_item(dtype, value, expected):
    x = kiln.full((1,), value, dtype=dtype).item()
    assert x == expected and type(x) is type(expected)


def test_item_and_len_errors():
    with pytest.raises(ValueError):
        kiln.zeros(2).item()
    with pytest.raises(TypeError):
        len(kiln.zeros(()))
    assert kiln.zeros(()).item() == 0.0
    assert float(kiln.tensor([2.5])) == 2.5 and int(kiln.tensor(3)) == 3 and bool(kiln.tensor([1]))
    with pytest.raises(ValueError):
        bool(kiln.zeros(2))


def test_tolist_shapes():
    assert kiln.zeros(()).tolist() == 0.0
    assert kiln.zeros(0).tolist() == []
    assert kiln.zeros(2, 0).tolist() == [[], []]
    t, a = pair((2, 3))
    assert t.t().tolist() == a.T.tolist()


# ---- views -----------------------------------------------------------------------


def test_views_match_numpy():
    t, a = pair((2, 3, 4))
    check_view(t.view(6, 4), a.reshape(6, 4), t)
    check_view(t.view((4, -1)), a.reshape(4, -1), t)
    check_view(t.reshape([3, 8]), a.reshape(3, 8), t)
    check_view(t.permute(2, 0, 1), a.transpose(2, 0, 1), t)
    check_view(t.permute((1, 2, 0)), a.transpose(1, 2, 0), t)
    check_view(t.transpose(0, 2), a.swapaxes(0, 2), t)
    check_view(t.transpose(-1, -2), a.swapaxes(-1, -2), t)
    check_view(t.select(0, 0), a[0], t)
    check_view(t.select(1, 2), a[:, 2], t)
    check_view(t.select(-1, -1), a[..., -1], t)
    check_view(t.narrow(2, 1, 2), a[:, :, 1:3], t)
    check_view(t.narrow(0, -1, 1), a[-1:], t)
    check_view(t.unsqueeze(1), np.expand_dims(a, 1), t)
    check_view(t.unsqueeze(-1), np.expand_dims(a, -1), t)
    check_view(t.flatten(), a.reshape(-1), t)
    check_view(t.flatten(1), a.reshape(2, -1), t)
    check_view(t.T, a.T, t)
    check_view(t.mT, a.swapaxes(-1, -2), t)
    m = t.select(0, 1)
    check_view(m.t(), a[1].T, t)
    u = t.unsqueeze(0).unsqueeze(3)
    check_view(u.squeeze(), a, t)
    check_view(u.squeeze(0), a[None, :, :, None, :][0], t)
    check_view(u.squeeze((0, 3)), a, t)
    check_view(u.squeeze(1), a[None, :, :, None, :], t)  # size 2: unchanged


def test_expand_and_as_strided_match_numpy():
    t, a = pair((3, 1))
    e = t.expand(2, 3, 4)
    check_view(e, np.broadcast_to(a, (2, 3, 4)), t)
    assert e.strides == (0, 1, 0)
    check_view(t.expand(-1, 5), np.broadcast_to(a, (3, 5)), t)
    check_view(t.expand_as(kiln.zeros(3, 2)), np.broadcast_to(a, (3, 2)), t)

    t, a = pair((12,))
    v = t.as_strided((3, 2), (4, 1))
    check_view(v, np.lib.stride_tricks.as_strided(a, (3, 2), (16, 4)), t)
    v = t.as_strided((2, 2), (1, 3), 2)
    check_view(v, np.lib.stride_tricks.as_strided(a[2:], (2, 2), (4, 12)), t)
    with pytest.raises(IndexError):
        t.as_strided((4, 4), (4, 1))  # past the storage


def test_views_share_storage():
    t = kiln.zeros(3, 4)
    t.transpose(0, 1).select(0, 2).fill_(7)  # column 2
    t.narrow(0, 1, 1).fill_(1)  # row 1
    expected = np.zeros((3, 4), np.float32)
    expected[:, 2] = 7
    expected[1] = 1
    np.testing.assert_array_equal(t.numpy(), expected)
    v = t.view(12)
    v.zero_()
    assert t.tolist() == [[0.0] * 4] * 3


def test_reshape_copies_when_needed():
    t, a = pair((3, 4))
    tt = t.t()  # non-contiguous
    assert not tt.is_contiguous()
    r = tt.reshape(12)
    np.testing.assert_array_equal(r.numpy(), a.T.reshape(12))
    assert r.is_contiguous() and not same_storage(r, t)
    r.fill_(-1)
    np.testing.assert_array_equal(t.numpy(), a)  # the copy is independent
    # ... and a view when the layout allows it.
    r2 = t.reshape(2, 6)
    assert same_storage(r2, t) and r2.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError, match="view"):
        tt.view(12)
    f = tt.flatten()
    np.testing.assert_array_equal(f.numpy(), a.T.reshape(-1))


def test_view_errors():
    t = kiln.zeros(2, 3)
    with pytest.raises(ValueError):
        t.view(4)
    with pytest.raises(ValueError):
        t.view(-1, -1)
    with pytest.raises(ValueError):
        t.permute(0)
    with pytest.raises(ValueError):
        t.permute(0, 0)
    with pytest.raises(IndexError):
        t.transpose(0, 2)
    with pytest.raises(IndexError):
        t.select(0, 2)
    with pytest.raises(IndexError):
        t.narrow(1, 2, 2)
    with pytest.raises(IndexError):
        t.unsqueeze(4)
    with pytest.raises(ValueError):
        t.expand(3, 3)
    with pytest.raises(ValueError):
        kiln.zeros(2, 2, 2).t()
    with pytest.raises(TypeError):
        t.view("a")


# ---- copies ----------------------------------------------------------------------


def test_contiguous_clone_copy_fill():
    t, a = pair((3, 4))
    c = t.t().contiguous()
    assert c.is_contiguous() and c.strides == (3, 1)
    np.testing.assert_array_equal(c.numpy(), a.T)
    assert t.contiguous().data_ptr() == t.data_ptr()  # already contiguous: same tensor
    k = t.clone()
    k.fill_(0)
    np.testing.assert_array_equal(t.numpy(), a)

    d = kiln.zeros(2, 3, 4, dtype=kiln.float64)
    assert d.copy_(kiln.tensor([1, 2, 3, 4])) is d  # broadcast + convert, returns self
    np.testing.assert_array_equal(d.numpy(), np.broadcast_to(np.arange(1, 5.0), (2, 3, 4)))
    d.copy_(np.ones((3, 1)))  # NumPy sources work too
    assert d.tolist() == np.ones((2, 3, 4)).tolist()
    with pytest.raises(ValueError):
        d.copy_(kiln.zeros(5))
    assert d.fill_(2.5) is d and d.zero_() is d
    d.fill_(kiln.tensor(3.0))
    assert d.numpy().min() == 3.0
    with pytest.raises(ValueError):
        d.fill_(kiln.zeros(2))


@pytest.mark.parametrize(
    "method, dtype",
    [
        ("float", kiln.float32), ("double", kiln.float64), ("half", kiln.float16),
        ("bfloat16", kiln.bfloat16), ("int", kiln.int32), ("long", kiln.int64),
        ("bool", kiln.bool), ("short", kiln.int16), ("byte", kiln.uint8), ("char", kiln.int8),
    ],
)
def test_dtype_shortcuts(method, dtype):
    t = kiln.tensor([0.0, 1.0, 2.0])
    r = getattr(t, method)()
    assert r.dtype == dtype
    np.testing.assert_array_equal(r.numpy().astype(np.float64), np.array([0.0, 1.0, 2.0]).astype(dtype.to_numpy()).astype(np.float64))


def test_to_forms():
    t = kiln.tensor([1.7, -2.2])
    assert t.to(kiln.int32).tolist() == [1, -2]
    assert t.to("float64").dtype == kiln.float64
    assert t.to(dtype=kiln.float16).dtype == kiln.float16
    assert t.to("cpu") is t or t.to("cpu").data_ptr() == t.data_ptr()
    assert t.to("cpu", kiln.float64).dtype == kiln.float64
    assert t.to(kiln.zeros(1, dtype=kiln.int8)).dtype == kiln.int8
    assert t.to(kiln.float32).data_ptr() == t.data_ptr()
    assert t.to(kiln.float32, copy=True).data_ptr() != t.data_ptr()
    with pytest.raises(NotImplementedError):
        t.to("cuda")


# ---- factories -------------------------------------------------------------------


def test_shape_factories():
    assert kiln.zeros(2, 3).shape == (2, 3)
    assert kiln.zeros((2, 3)).shape == (2, 3)
    assert kiln.ones([4]).tolist() == [1.0] * 4
    assert kiln.empty(2, 2, dtype=kiln.int8).dtype == kiln.int8
    assert kiln.zeros(()).shape == ()
    assert kiln.zeros(3, dtype=kiln.float64, device="cpu").dtype == kiln.float64
    f = kiln.full((2, 2), 7)
    assert f.dtype == kiln.int64 and f.tolist() == [[7, 7], [7, 7]]
    assert kiln.full((1,), 1.5).dtype == kiln.float32
    assert kiln.full((1,), True).dtype == kiln.bool
    assert kiln.full((1,), 1j).dtype == kiln.complex64
    assert kiln.full((2,), 3, dtype=kiln.float16).tolist() == [3.0, 3.0]
    with pytest.raises(ValueError):
        kiln.zeros(-1)
    with pytest.raises(NotImplementedError):
        kiln.zeros(2, device="cuda")


def test_like_factories():
    t = kiln.zeros(2, 3, dtype=kiln.float16)
    for f in (kiln.zeros_like, kiln.ones_like, kiln.empty_like):
        r = f(t)
        assert r.shape == (2, 3) and r.dtype == kiln.float16
    assert kiln.ones_like(t, dtype=kiln.int32).tolist() == [[1, 1, 1]] * 2
    assert kiln.full_like(t, 4).tolist() == [[4.0] * 3] * 2
    assert kiln.zeros_like(t.t()).shape == (3, 2)


def test_ranges_match_numpy():
    np.testing.assert_array_equal(kiln.arange(5).numpy(), np.arange(5))
    assert kiln.arange(5).dtype == kiln.int64
    assert kiln.arange(0, 1, 0.25).dtype == kiln.float32
    np.testing.assert_allclose(kiln.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25))
    np.testing.assert_array_equal(kiln.arange(10, 0, -3).numpy(), np.arange(10, 0, -3))
    np.testing.assert_array_equal(kiln.arange(4, dtype=kiln.float64).numpy(), np.arange(4.0))
    np.testing.assert_allclose(kiln.linspace(-1, 1, 7).numpy(), np.linspace(-1, 1, 7, dtype=np.float32), rtol=1e-6)
    np.testing.assert_allclose(
        kiln.logspace(0, 3, 4, dtype=kiln.float64).numpy(), np.logspace(0, 3, 4), rtol=1e-12
    )
    np.testing.assert_allclose(kiln.logspace(0, 3, 4, base=2.0).numpy(), np.logspace(0, 3, 4, base=2.0), rtol=1e-6)
    np.testing.assert_array_equal(kiln.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(kiln.eye(2, 4, dtype=kiln.int32).numpy(), np.eye(2, 4, dtype=np.int32))
    assert kiln.linspace(0, 1, 0).shape == (0,)
    with pytest.raises(ValueError):
        kiln.arange(0, 5, 0)


def test_tensor_from_data():
    assert kiln.tensor([1, 2]).dtype == kiln.int64
    assert kiln.tensor([1, 2.0]).dtype == kiln.float32
    assert kiln.tensor([True, False]).dtype == kiln.bool
    assert kiln.tensor([True, 2]).dtype == kiln.int64
    assert kiln.tensor([1, 2j]).dtype == kiln.complex64
    assert kiln.tensor(3.5).shape == () and kiln.tensor(3.5).item() == 3.5
    assert kiln.tensor([]).dtype == kiln.float32 and kiln.tensor([]).shape == (0,)
    assert kiln.tensor([[1, 2], [3, 4]], dtype=kiln.float64).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert kiln.tensor((1.9, -1.9), dtype=kiln.int32).tolist() == [1, -1]  # truncation, as torch
    assert kiln.tensor([np.float32(1.5), np.int64(2)]).tolist() == [1.5, 2.0]
    assert kiln.tensor([2**63 - 1]).item() == 2**63 - 1
    assert kiln.tensor([kiln.tensor(1.0), kiln.tensor(2.0)]).tolist() == [1.0, 2.0]
    # NumPy arrays: copied, dtype kept.
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = kiln.tensor(a)
    assert t.dtype == kiln.int16
    a[0, 0] = 99
    assert t.tolist()[0][0] == 0
    np.testing.assert_array_equal(kiln.tensor(a[::-1, ::2]).numpy(), a[::-1, ::2])  # negative strides copy
    # A tensor source is copied too.
    s = kiln.ones(2)
    c = kiln.tensor(s)
    c.zero_()
    assert s.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        kiln.tensor([[1, 2], [3]])
    with pytest.raises(ValueError):
        kiln.tensor([1, [2]])
    with pytest.raises(TypeError):
        kiln.tensor(["a"])
    with pytest.raises(OverflowError):
        kiln.tensor([2**70])


def test_as_tensor_shares_numpy_memory():
    a = np.zeros(3, np.float32)
    t = kiln.as_tensor(a)
    t.fill_(1)
    assert a.tolist() == [1.0, 1.0, 1.0]
    assert kiln.as_tensor([1, 2]).dtype == kiln.int64


def test_random_reproducible():
    g1, g2 = kiln.Generator(42), kiln.Generator(42)
    a = kiln.rand(1000, generator=g1)
    b = kiln.rand(1000, generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(kiln.rand(1000, generator=g1).numpy(), a.numpy())  # stream advances
    x = a.numpy()
    assert x.min() >= 0 and x.max() < 1 and 0.4 < x.mean() < 0.6

    kiln.manual_seed(7)
    r1 = kiln.randn(4, 5)
    kiln.manual_seed(7)
    r2 = kiln.randn((4, 5))
    np.testing.assert_array_equal(r1.numpy(), r2.numpy())
    assert kiln.randn(2, dtype=kiln.float64).dtype == kiln.float64
    assert kiln.default_generator.initial_seed() == 7
    assert g1.manual_seed(42) is g1
    np.testing.assert_array_equal(kiln.rand(1000, generator=g1).numpy(), a.numpy())


def test_randint():
    r = kiln.randint(3, 10, (10000,), generator=kiln.Generator(0)).numpy()
    assert r.dtype == np.int64 and r.min() == 3 and r.max() == 9
    r = kiln.randint(5, (2, 3))
    assert r.shape == (2, 3) and r.numpy().max() < 5
    assert kiln.randint(0, 4, size=(3,), dtype=kiln.int32).dtype == kiln.int32
    with pytest.raises(ValueError):
        kiln.randint(5, 5, (2,))


def test_numpy_operands_and_errors_map_to_python_types():
    with pytest.raises(TypeError):
        kiln.zeros(2, dtype="notadtype")
    with pytest.raises(TypeError):
        kiln.promote_types(kiln.float8_e5m2, kiln.float16)
    with pytest.raises(IndexError):
        kiln.zeros(2).size(3)
    with pytest.raises(ValueError):
        kiln.set_num_threads(0)


def test_writes_into_expanded_views_raise():
    base = kiln.zeros(3)
    e = base.expand(2, 3)
    for write in (lambda: e.add_(1), lambda: e.fill_(1), lambda: e.copy_(kiln.ones(2, 3)),
                  lambda: e.exp_(), lambda: e.__setitem__((0, 0), 5.0),
                  lambda: e.masked_fill_(kiln.ones(2, 3, dtype=kiln.bool), 1.0)):
        with pytest.raises(ValueError, match="single memory location"):
            write()
    np.testing.assert_array_equal(base.numpy(), np.zeros(3, np.float32))  # nothing written


def test_reviewed_edge_cases():
    with pytest.raises(ValueError):
        kiln.zeros(1, 1, 3).squeeze((0, 0))
    with pytest.raises(ValueError):
        kiln.eye(3, -2)
    with pytest.raises(OverflowError, match="does not fit int64"):
        kiln.tensor([2**63])
    assert kiln.tensor([2**64 - 1], dtype=kiln.uint64).tolist() == [2**64 - 1]
    assert kiln.tensor([2**64 - 1], dtype=kiln.float64).tolist() == [float(2**64 - 1)]
    with pytest.raises((ValueError, MemoryError)):
        kiln.empty(2**62, dtype=kiln.float64)
    nan_inf = np.array([np.nan, np.inf, -np.inf, 3e9, -1.5], np.float64)
    for dt, npdt in ((kiln.int64, np.int64), (kiln.int32, np.int32), (kiln.int16, np.int16)):
        with np.errstate(invalid="ignore"):
            want = nan_inf.astype(npdt)
        np.testing.assert_array_equal(kiln.from_numpy(nan_inf).to(dt).numpy(), want)
