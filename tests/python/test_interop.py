"""Zero-copy exchange with NumPy (incl. ml_dtypes) and DLPack, and the lifetimes
of shared memory in both directions."""
import gc
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import kiln

NP_DTYPES = [
    np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128,
    ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
]


def sample(dtype, shape=(3, 4)):
    a = (np.arange(np.prod(shape)) % 7).reshape(shape)
    return a.astype(np.float32).astype(dtype) if dtype not in (np.bool_,) else (a % 2 == 1)


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_from_numpy_zero_copy(dtype):
    a = sample(dtype)
    t = kiln.from_numpy(a)
    assert t.dtype.name == np.dtype(dtype).name
    assert t.shape == a.shape and t.strides == (4, 1)
    assert t.data_ptr() == a.__array_interface__["data"][0]
    # mutate the tensor, see it in the array
    t.fill_(1)
    assert (a == a.dtype.type(1)).all()
    # and the other way
    a[...] = a.dtype.type(0)
    assert not any(t.reshape(-1).tolist())


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_export_zero_copy(dtype):
    t = kiln.tensor(sample(dtype))
    a = t.numpy()
    assert a.dtype == np.dtype(dtype)
    assert a.__array_interface__["data"][0] == t.data_ptr()
    np.testing.assert_array_equal(a, sample(dtype))
    b = np.asarray(t)
    assert b.dtype == a.dtype and b.__array_interface__["data"][0] == t.data_ptr()
    a[0, 0] = a.dtype.type(1)
    assert t.tolist()[0][0] in (1, True)
    # The array's dtype round-trips back through from_numpy to the same kiln dtype.
    assert kiln.from_numpy(a).dtype == t.dtype


def test_from_numpy_strides():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (base[:, ::2], base.T, base[1:3, 2:], base[:, 1],
                 np.lib.stride_tricks.as_strided(base[0], (3, 6), (0, 4))):
        t = kiln.from_numpy(view)
        assert t.strides == tuple(s // 4 for s in view.strides)
        np.testing.assert_array_equal(t.numpy(), view)
        assert t.clone().tolist() == view.tolist()
    with pytest.raises(ValueError, match="negative"):
        kiln.from_numpy(base[::-1])
    packed = np.zeros(4, dtype=np.dtype([("a", "i1"), ("b", "<f4")], align=False))["b"]
    with pytest.raises(ValueError, match="multiple"):
        kiln.from_numpy(packed)


def test_from_numpy_bad_inputs():
    with pytest.raises(TypeError):
        kiln.from_numpy([1, 2])
    with pytest.raises(TypeError):
        kiln.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError):
        kiln.from_numpy(np.zeros(2, dtype=object))
    with pytest.raises(TypeError, match="byte order"):
        kiln.from_numpy(np.zeros(2, dtype=">f4"))
    # kiln.tensor copies any of those that are numeric
    assert kiln.tensor(np.arange(3, dtype=">i4")).tolist() == [0, 1, 2]


def test_readonly_array_warns():
    a = np.zeros(3, np.float32)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        kiln.from_numpy(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            kiln.from_numpy(a)


def test_zero_dim_and_empty():
    t = kiln.from_numpy(np.array(3.5, np.float64))
    assert t.shape == () and t.item() == 3.5
    assert kiln.tensor(2.0).numpy().shape == ()
    e = kiln.zeros(0, 3)
    assert e.numpy().shape == (0, 3)
    assert kiln.from_numpy(np.zeros((0, 2), np.int8)).shape == (0, 2)


def test_non_contiguous_tensor_export():
    t = kiln.arange(12).reshape(3, 4)
    v = t.t()
    a = v.numpy()
    assert a.strides == (8, 32)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4).T)
    e = kiln.tensor([1.0, 2.0]).expand(3, 2)
    assert e.numpy().strides == (0, 4)


def test_array_dunder_dtype_and_copy():
    t = kiln.tensor([1, 2, 3], dtype=kiln.int32)
    a = np.asarray(t, dtype=np.float64)
    assert a.dtype == np.float64 and a.tolist() == [1.0, 2.0, 3.0]
    c = np.array(t, copy=True)
    c[0] = 9
    assert t.tolist() == [1, 2, 3]
    assert np.add(t, 1).tolist() == [2, 3, 4]  # NumPy functions accept tensors


# ---- lifetimes -----------------------------------------------------------------------


def test_tensor_outlives_array():
    a = np.arange(1000, dtype=np.float64)
    ref = sys.getrefcount(a)
    t = kiln.from_numpy(a)
    assert sys.getrefcount(a) == ref + 1  # the tensor holds the array
    v = t.narrow(0, 10, 5)
    del a, t
    gc.collect()
    assert v.tolist() == [10.0, 11.0, 12.0, 13.0, 14.0]


def test_array_released_with_last_view():
    a = np.arange(10, dtype=np.float32)
    ref = sys.getrefcount(a)
    t = kiln.from_numpy(a)
    v = t.view(2, 5)
    del t
    assert sys.getrefcount(a) == ref + 1
    del v
    gc.collect()
    assert sys.getrefcount(a) == ref


def test_array_outlives_tensor():
    t = kiln.arange(1000, dtype=kiln.float32)
    a = t.numpy()
    b = np.asarray(t.narrow(0, 500, 3))
    del t
    gc.collect()
    kiln.ones(1000)  # reuse of freed memory would corrupt a
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float32))
    assert b.tolist() == [500.0, 501.0, 502.0]


def test_numpy_export_keeps_storage_counted():
    kiln.empty_cache()
    before = kiln.memory_stats()["current_bytes"]
    a = kiln.zeros(1 << 16).numpy()
    assert kiln.memory_stats()["current_bytes"] >= before + (1 << 18)
    del a
    gc.collect()
    assert kiln.memory_stats()["current_bytes"] == before


# ---- DLPack ---------------------------------------------------------------------------

DLPACK_NP = [np.bool_, np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
             np.float16, np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DLPACK_NP, ids=lambda d: np.dtype(d).name)
def test_dlpack_roundtrip_numpy(dtype):
    a = sample(dtype)
    t = kiln.from_dlpack(a)
    assert t.dtype.name == np.dtype(dtype).name
    assert t.data_ptr() == a.__array_interface__["data"][0]
    b = np.from_dlpack(t)
    assert b.dtype == a.dtype and b.__array_interface__["data"][0] == t.data_ptr()
    np.testing.assert_array_equal(b, a)
    b[1, 1] = b.dtype.type(0)
    assert a[1, 1] == 0  # all three share memory
    del a, t
    gc.collect()
    assert b.shape == (3, 4)


def test_dlpack_device_and_capsules():
    t = kiln.ones(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    cap = t.__dlpack__()
    assert type(cap).__name__ == "PyCapsule"
    assert "dltensor" in repr(cap)
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    # a raw capsule is accepted by from_dlpack
    u = kiln.from_dlpack(t.__dlpack__())
    assert u.data_ptr() == t.data_ptr()
    # copy=True gives independent memory
    c = np.from_dlpack(t, copy=True)
    c[0, 0] = 5
    assert t.tolist()[0][0] == 1.0
    assert kiln.from_dlpack(t).data_ptr() == t.data_ptr()


def test_dlpack_non_contiguous():
    t = kiln.arange(12, dtype=kiln.float32).reshape(3, 4).t()
    b = np.from_dlpack(t)
    np.testing.assert_array_equal(b, np.arange(12, dtype=np.float32).reshape(3, 4).T)
    e = np.from_dlpack(kiln.tensor([1, 2]).expand(3, 2))
    assert e.strides == (0, 8)
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    k = kiln.from_dlpack(a)
    assert k.strides == (4, 2) and k.tolist() == a.tolist()


def test_from_dlpack_ml_dtypes_arrays():
    # NumPy refuses DLPack export of ml_dtypes arrays; kiln reads them directly (zero-copy).
    a = np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16)
    t = kiln.from_dlpack(a)
    assert t.dtype == kiln.bfloat16 and t.data_ptr() == a.__array_interface__["data"][0]


def test_from_dlpack_rejects_non_arrays():
    with pytest.raises(TypeError):
        kiln.from_dlpack(3)


def test_torch_interop():
    torch = pytest.importorskip("torch")
    t = kiln.arange(6, dtype=kiln.float32).reshape(2, 3)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr() and x.tolist() == t.tolist()
    x[0, 0] = 42
    assert t.tolist()[0][0] == 42
    b = torch.ones(3, dtype=torch.bfloat16)
    k = kiln.from_dlpack(b)
    assert k.dtype == kiln.bfloat16 and k.data_ptr() == b.data_ptr()
    xb = torch.from_dlpack(kiln.ones(2, dtype=kiln.bfloat16))
    assert xb.dtype == torch.bfloat16 and xb.tolist() == [1.0, 1.0]
    assert kiln.zeros(1, dtype=torch.float16).dtype == kiln.float16
    # FP8 over DLPack needs a torch whose DLPack knows the FP8 codes (DLPack >= 1.1).
    try:
        x8 = torch.from_dlpack(kiln.ones(2, dtype=kiln.float8_e4m3fn))
    except (BufferError, RuntimeError, TypeError):
        warnings.warn("this torch cannot import FP8 over DLPack")
    else:
        assert x8.dtype == torch.float8_e4m3fn and x8.float().tolist() == [1.0, 1.0]
