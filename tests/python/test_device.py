"""kiln.device (torch.device's behaviour), tensor.device, device= on every factory,
Tensor.to(device)/cpu(), and the device DLPack reports. Only the CPU is compiled in:
a CUDA device can be named but not used; a tensor whose storage claims CUDA (made by
kiln._C._claim_device over host memory) shows what kiln does with one."""
import copy
import ctypes
import pickle

import numpy as np
import pytest

import kiln

try:
    import torch
except ImportError:  # the torch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

# (constructor arguments, type, index, str, repr)
DEVICES = [
    (("cpu",), "cpu", None, "cpu", "device(type='cpu')"),
    (("cpu:0",), "cpu", 0, "cpu:0", "device(type='cpu', index=0)"),
    (("cpu", 0), "cpu", 0, "cpu:0", "device(type='cpu', index=0)"),
    (("cuda",), "cuda", None, "cuda", "device(type='cuda')"),
    (("cuda:0",), "cuda", 0, "cuda:0", "device(type='cuda', index=0)"),
    (("cuda:1",), "cuda", 1, "cuda:1", "device(type='cuda', index=1)"),
    (("cuda", 3), "cuda", 3, "cuda:3", "device(type='cuda', index=3)"),
    (("cuda:12",), "cuda", 12, "cuda:12", "device(type='cuda', index=12)"),
    ((2,), "cuda", 2, "cuda:2", "device(type='cuda', index=2)"),  # torch's legacy ordinal
]

BAD_STRINGS = ["gpu", "", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:+1", "cuda:1:0", "cuda:1.0", " cpu",
               "cpu:1", "mps", "cuda:99999999999"]


def claimed(t, device):
    """t's memory in a storage that says it lives on `device` (kiln has no CUDA here)."""
    return kiln._C._claim_device(t, device)


@pytest.mark.parametrize("args, type_, index, text, rep", DEVICES)
def test_device_object(args, type_, index, text, rep):
    d = kiln.device(*args)
    assert d.type == type_ and d.index == index
    assert str(d) == text and repr(d) == rep
    assert kiln.device(text) == d and kiln.device(d) == d
    assert pickle.loads(pickle.dumps(d)) == d and copy.deepcopy(d) == d
    assert hash(kiln.device(text)) == hash(d)


@pytest.mark.parametrize("bad", BAD_STRINGS)
def test_device_bad_string(bad):
    with pytest.raises(ValueError, match=r"^\[device\] "):
        kiln.device(bad)


def test_device_bad_arguments():
    with pytest.raises(ValueError, match="must not include an index"):
        kiln.device("cuda:0", 1)
    with pytest.raises(ValueError, match="CPU device index must be 0"):
        kiln.device("cpu", 1)
    with pytest.raises(ValueError, match="must not be negative"):
        kiln.device("cuda", -2)
    with pytest.raises(ValueError, match="must not be negative, got -1$"):
        kiln.device(-1)
    with pytest.raises(ValueError, match="must not be negative, got -1180591620717411303424$"):
        kiln.device("cuda", -2**70)
    with pytest.raises(ValueError, match=r"must be below 2\*\*31, got 2147483648$"):
        kiln.device("cuda", 2**31)
    with pytest.raises(ValueError, match=r"must be below 2\*\*31"):
        kiln.device(2**70)
    assert kiln.device("cuda", -1) == kiln.device("cuda")  # -1: no index, as torch
    for bad in (1.5, None, True, b"cpu", ["cpu"]):
        with pytest.raises(TypeError, match=r"^\[device\] "):
            kiln.device(bad)
    with pytest.raises(TypeError):
        kiln.device("cuda", "1")
    with pytest.raises(TypeError):
        kiln.device("cuda", 1.0)


def test_device_equality_and_hash():
    cpu, cpu0, cuda, cuda0, cuda1 = (kiln.device(s) for s in ("cpu", "cpu:0", "cuda", "cuda:0", "cuda:1"))
    assert cpu == kiln.device("cpu") and not cpu != kiln.device("cpu")
    # The index is part of the identity, as in torch: None is not 0.
    assert cpu != cpu0 and cuda != cuda0 and cuda0 != cuda1 and cpu != cuda
    # A device never equals a string (torch.device("cpu") == "cpu" is False).
    assert not (cpu == "cpu") and cpu != "cpu" and "cpu" != cpu
    assert cpu != 0 and cpu is not None
    assert len({cpu, kiln.device("cpu"), cpu0, cuda, cuda0, kiln.device("cuda", 0)}) == 4
    assert {cuda1: "x"}[kiln.device("cuda", 1)] == "x"


def test_tensor_device_attribute():
    t = kiln.ones(2, 3)
    assert isinstance(t.device, kiln.device)
    assert t.device == kiln.device("cpu") and t.device.index is None
    assert repr(t.device) == "device(type='cpu')" and str(t.device) == "cpu"
    assert t.is_cpu and not t.is_cuda
    for u in (t[1], t.T, kiln.from_numpy(np.zeros(3)), kiln.from_dlpack(np.zeros(2)), kiln.tensor(5)):
        assert u.device == kiln.device("cpu")


SHAPE_FACTORIES = {
    "empty": lambda device: kiln.empty(2, 3, device=device),
    "zeros": lambda device: kiln.zeros(2, 3, device=device),
    "ones": lambda device: kiln.ones((2, 3), device=device),
    "full": lambda device: kiln.full((2,), 7.0, device=device),
    "arange": lambda device: kiln.arange(5, device=device),
    "linspace": lambda device: kiln.linspace(0, 1, 4, device=device),
    "logspace": lambda device: kiln.logspace(0, 1, 4, device=device),
    "eye": lambda device: kiln.eye(3, device=device),
    "tensor": lambda device: kiln.tensor([1, 2], device=device),
    "as_tensor": lambda device: kiln.as_tensor([1, 2], device=device),
    "rand": lambda device: kiln.rand(3, device=device),
    "randn": lambda device: kiln.randn(3, device=device),
    "randint": lambda device: kiln.randint(0, 5, (3,), device=device),
    "empty_like": lambda device: kiln.empty_like(kiln.ones(2), device=device),
    "zeros_like": lambda device: kiln.zeros_like(kiln.ones(2), device=device),
    "ones_like": lambda device: kiln.ones_like(kiln.ones(2), device=device),
    "full_like": lambda device: kiln.full_like(kiln.ones(2), 3, device=device),
    "rand_like": lambda device: kiln.rand_like(kiln.ones(2), device=device),
    "randn_like": lambda device: kiln.randn_like(kiln.ones(2), device=device),
    "Tensor": lambda device: kiln.Tensor([1.0, 2.0], device=device),
}


@pytest.mark.parametrize("name", sorted(SHAPE_FACTORIES))
def test_factories_take_a_device(name):
    make = SHAPE_FACTORIES[name]
    for device in (None, "cpu", "cpu:0", kiln.device("cpu"), kiln.device("cpu", 0)):
        assert make(device).device == kiln.device("cpu")
    for device in ("cuda", "cuda:1", kiln.device("cuda"), kiln.device("cuda", 0), 0):
        expect = str(kiln.device(device))
        with pytest.raises(NotImplementedError,
                           match=rf"^\[{name}\] device {expect} is not available in this build; only cpu is$"):
            make(device)
    with pytest.raises(ValueError, match=rf"^\[{name}\] .*'gpu'"):
        make("gpu")
    with pytest.raises(TypeError, match=rf"^\[{name}\] expected a device"):
        make(1.5)


def test_to_and_cpu_on_the_same_device_return_the_tensor_itself():
    t = kiln.arange(6).reshape(2, 3)
    for args, kwargs in [(("cpu",), {}), (("cpu:0",), {}), ((kiln.device("cpu"),), {}),
                         ((), {"device": "cpu"}), ((), {"device": kiln.device("cpu")}),
                         ((t,), {}), (("cpu", kiln.int64), {}), ((), {})]:
        assert t.to(*args, **kwargs) is t, (args, kwargs)
    assert t.cpu() is t
    assert t.to(t.dtype) is t
    c = t.to("cpu", copy=True)
    assert c is not t and c.data_ptr() != t.data_ptr() and c.tolist() == t.tolist()
    f = t.to("cpu", kiln.float64)
    assert f.dtype == kiln.float64 and f.device == t.device and f.tolist() == t.tolist()
    assert t.to(device="cpu", dtype=kiln.float32).dtype == kiln.float32


def test_to_an_unavailable_device_raises():
    t = kiln.ones(3)
    for args, kwargs, name in [(("cuda",), {}, "cuda"), (("cuda:1",), {}, "cuda:1"),
                               ((kiln.device("cuda", 2),), {}, "cuda:2"), ((), {"device": "cuda"}, "cuda"),
                               (("cuda", kiln.float16), {}, "cuda")]:
        with pytest.raises(NotImplementedError, match=rf"^\[to\] device {name} is not available in this build"):
            t.to(*args, **kwargs)
    with pytest.raises(ValueError, match=r"^\[to\] .*'gpu:0'"):
        t.to("gpu:0")


def test_a_tensor_on_a_missing_device():
    base = kiln.arange(6, dtype=kiln.float32).reshape(2, 3)
    t = claimed(base, "cuda:1")
    assert t.device == kiln.device("cuda", 1) and repr(t.device) == "device(type='cuda', index=1)"
    assert t.is_cuda and not t.is_cpu
    assert t[1].device == t.device and t.T.device == t.device
    assert claimed(base, "cuda").device == kiln.device("cuda:0")  # a storage always has its index
    assert t.to("cuda:1") is t and t.to(kiln.device("cuda", 1)) is t
    with pytest.raises(NotImplementedError, match=r"^\[to\] device cuda:1 is not available in this build"):
        t.cpu()
    with pytest.raises(NotImplementedError, match=r"^\[to\] device cuda:1 is not available in this build"):
        base.to(t)  # to(other) moves to other's device
    with pytest.raises(TypeError, match=r"^\[numpy\] cannot convert a tensor on cuda:1 to NumPy"):
        t.numpy()
    with pytest.raises(TypeError, match=r"cuda:1"):
        np.asarray(t)


# ---- DLPack ----------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


def capsule_device(cap):
    """(data pointer, device type, device id) of an unversioned DLPack capsule."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    head = _DLTensorHead.from_address(get(cap, b"dltensor"))
    return head.data, head.device.device_type, head.device.device_id


def test_dlpack_reports_the_device():
    t = kiln.ones(2, 3)
    assert t.__dlpack_device__() == (1, 0)  # kDLCPU
    assert capsule_device(t.__dlpack__()) == (t.data_ptr(), 1, 0)
    for name, index in (("cuda:0", 0), ("cuda:3", 3)):
        c = claimed(t, name)
        assert c.__dlpack_device__() == (2, index)  # kDLCUDA
        assert capsule_device(c.__dlpack__()) == (t.data_ptr(), 2, index)


# ---- against torch -----------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("args, type_, index, text, rep", DEVICES)
def test_device_matches_torch(args, type_, index, text, rep):
    k, t = kiln.device(*args), torch.device(*args)
    assert (k.type, k.index, str(k), repr(k)) == (t.type, t.index, str(t), repr(t))
    others = [kiln.device(*a) for a, *_ in DEVICES]
    torch_others = [torch.device(*a) for a, *_ in DEVICES]
    assert [k == o for o in others] == [t == o for o in torch_others]
    assert (k == text) == (t == text) and (k != text) == (t != text)


@needs_torch
@pytest.mark.parametrize("bad", BAD_STRINGS)
def test_bad_strings_match_torch(bad):
    with pytest.raises(Exception):
        torch.device(bad)
    with pytest.raises(ValueError):
        kiln.device(bad)


@needs_torch
def test_tensor_device_matches_torch():
    k, t = kiln.ones(2), torch.ones(2)
    assert repr(k.device) == repr(t.device) and str(k.device) == str(t.device)
    assert k.device.index == t.device.index
    assert (k.device == "cpu") == (t.device == "cpu")
    assert (k.to("cpu") is k) == (t.to("cpu") is t) and (k.cpu() is k) == (t.cpu() is t)
    assert k.__dlpack_device__() == tuple(int(x) for x in t.__dlpack_device__())
    # kiln takes torch's device objects for device=
    assert kiln.zeros(2, device=t.device).device == kiln.device("cpu")
