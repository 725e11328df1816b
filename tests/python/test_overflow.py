"""Size, stride and offset arithmetic that overflows int64 raises instead of wrapping.

Each reproduction wrapped before: a view reaching far outside its storage passed the
bounds check (and crashed or read foreign memory), or an element count wrapped to 0.
Exception types follow kiln's convention, not torch's RuntimeError: a view reaching
outside its storage (or an offset that does not fit) is IndexError, an impossible shape
or element count is ValueError.
"""

import ctypes
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln

P61, P62 = 2**61, 2**62


def run_isolated(code):
    """Runs code in a fresh interpreter, so a regression that crashes fails one test."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"exit status {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


# The reproductions: the first two crashed the process, the third read the
# bytes before the buffer. Printing the view reads its elements.
@pytest.mark.parametrize("call", [
    "as_strided((2,), (2**61,))",
    "as_strided((1,), (1,), 2**61)",
    "as_strided((2,), (1,), 2**62 - 1)",
    "as_strided((3, 2), (1, 2**63 - 1))",
])
def test_as_strided_outside_storage_raises_index_error(call):
    out = run_isolated(f"""
        import kiln
        try:
            v = kiln.ones(3).{call}
        except IndexError as e:
            print("IndexError", e)
        else:
            print("no error", v)
    """)
    assert out.startswith("IndexError [as_strided]"), out
    assert "12 bytes" in out  # names the storage it would leave


def test_as_strided_in_bounds_matches_numpy():
    a = np.arange(6, dtype=np.float32)
    want = np.lib.stride_tricks.as_strided(a[1:], shape=(2, 2), strides=(4, 8))
    got = kiln.from_numpy(a).as_strided((2, 2), (1, 2), 1)
    np.testing.assert_array_equal(got.numpy(), want)
    # The last element of the storage is reachable, one past it is not.
    assert kiln.from_numpy(a).as_strided((1,), (1,), 5).item() == 5.0
    with pytest.raises(IndexError):
        kiln.from_numpy(a).as_strided((1,), (1,), 6)
    # An empty view reads nothing, so any stride goes (as torch), but its count must fit.
    assert kiln.ones(3).as_strided((0, 2), (1, P62)).numel() == 0
    with pytest.raises(ValueError, match=r"^\[as_strided\]"):
        kiln.ones(3).as_strided((0, P62, 4), (1, 1, 1))


def test_expand_numel_overflow_raises():
    # 2**62 * 4 elements wrapped to numel() == 0, and the sum to 0.
    with pytest.raises(ValueError, match=r"^\[expand\].*\[4611686018427387904, 4\]"):
        kiln.ones(1).expand(P62, 4)
    with pytest.raises(ValueError, match=r"^\[expand\]"):
        kiln.ones(1, 1).expand(2**63 - 1, 2)
    big = kiln.ones(1).expand(2**31, 2**31)
    assert big.numel() == 2**31 * 2**31
    assert big.stride() == (0, 0)


def test_view_and_reshape_size_product_does_not_wrap():
    x = kiln.arange(8)
    # 4 * (2**62 + 1) wraps to 4 (so -1 became 2), and * 2 wraps to exactly 8.
    for shape in [(4, P62 + 1, -1), (4, P62 + 1, 2), (P62, P62, -1)]:
        with pytest.raises(ValueError, match=r"^\[view\]"):
            x.view(*shape)
        with pytest.raises(ValueError, match=r"^\[reshape\]"):
            x.reshape(*shape)
    assert x.view(2, -1).shape == (2, 4)


def test_narrow_and_slice_bounds_do_not_wrap():
    a = np.arange(3)
    x = kiln.from_numpy(a)
    # start + length wrapped negative and passed the check: a 2**63 - 1 element view.
    with pytest.raises(IndexError, match=r"^\[narrow\]"):
        x.narrow(0, 1, 2**63 - 1)
    # The slice size (end - start + step - 1) / step wrapped negative.
    np.testing.assert_array_equal(x[1:3:2**63 - 1].numpy(), a[1:3:2**63 - 1])
    t = kiln.arange(8).reshape(4, 2).t()  # stride 2 times the step does not fit
    np.testing.assert_array_equal(t[:, 1::2**63 - 1].numpy(), np.arange(8).reshape(4, 2).T[:, 1::2**63 - 1])
    # Empty views may have strides whose multiples overflow the offset.
    e = kiln.ones(3).as_strided((0, 4), (1, P62))
    with pytest.raises(IndexError, match=r"^\[select\]"):
        e.select(1, 3)
    with pytest.raises(IndexError, match=r"^\[narrow\]"):
        e.narrow(1, 3, 1)
    assert e.unsqueeze(0).stride()[0] >= 0


# ---- DLPack capsules with hostile shapes and strides ----------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def _capsule(buf, shape, strides):
    """An unversioned DLPack capsule over the float32 array buf, with the given shape and
    element strides, and no deleter. Returns (capsule, objects to keep alive)."""
    n = len(shape)
    sh = (ctypes.c_int64 * n)(*shape)
    st = (ctypes.c_int64 * n)(*strides)
    mt = _DLManagedTensor()
    mt.dl_tensor.data = buf.ctypes.data
    mt.dl_tensor.device = _DLDevice(1, 0)  # kDLCPU
    mt.dl_tensor.ndim = n
    mt.dl_tensor.dtype = _DLDataType(2, 32, 1)  # kDLFloat, 32 bits
    mt.dl_tensor.shape = sh
    mt.dl_tensor.strides = st
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(mt), b"dltensor", None), (buf, sh, st, mt)


def test_from_dlpack_capsule_is_read_as_described():
    buf = np.arange(6, dtype=np.float32)
    cap, keep = _capsule(buf, (3, 2), (1, 3))
    t = kiln.from_dlpack(cap)
    np.testing.assert_array_equal(t.numpy(), buf.reshape(2, 3).T)
    assert t.stride() == (1, 3)
    buf[4] = -1.0  # shares the memory
    assert t[1, 1].item() == -1.0
    del t, keep


@pytest.mark.parametrize("shape, strides", [
    ((2,), (P62,)),          # stride * 4 bytes wrapped to 0: a view repeating element 0
    ((5,), (P62,)),          # extent 1 + 4 * 2**62 wrapped to 1
    ((P62, 4), (0, 0)),      # element count wrapped to 0
    ((2, 2), (2**63 - 1, 1)),
])
def test_from_dlpack_hostile_capsule_raises(shape, strides):
    buf = np.zeros(4, dtype=np.float32)
    cap, keep = _capsule(buf, shape, strides)
    with pytest.raises(ValueError, match=r"^\[from_dlpack\]"):
        kiln.from_dlpack(cap)
    del keep
