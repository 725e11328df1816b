"""Tensor pickling and copying (pickle, copy.copy, copy.deepcopy), as torch's:
a tensor pickles as its dtype, shape, device, requires_grad and its elements'
bytes (row-major), and unpickles into a new tensor of its own; a Parameter stays
a Parameter. deepcopy, like torch's, takes leaves only (a tensor inside a graph
raises) and keeps requires_grad. Unpickling builds tensors from data alone: no
code is named in the stream but kiln's own rebuild functions."""

from . import _C


def _rebuild_tensor(data, dtype_name, shape, device, requires_grad):
    import numpy as np

    dtype = getattr(_C, dtype_name)
    np_dtype = _C.empty(0, dtype=dtype).numpy().dtype
    flat = np.frombuffer(bytearray(data), dtype=np_dtype)  # a writable copy of the bytes
    t = _C.from_numpy(flat).clone().reshape(list(shape))
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_() if requires_grad else t


def _rebuild_parameter(data, dtype_name, shape, device, requires_grad):
    from .nn.parameter import Parameter

    return Parameter(_rebuild_tensor(data, dtype_name, shape, device, False), requires_grad)


def _state(t):
    host = t.detach().cpu().contiguous()
    return (host.numpy().tobytes(), str(t.dtype).split(".")[-1], tuple(t.shape), str(t.device), t.requires_grad)


def _reduce_ex(self, protocol):
    from .nn.parameter import Parameter

    return (_rebuild_parameter if isinstance(self, Parameter) else _rebuild_tensor), _state(self)


def _deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                           "protocol at the moment")
    if id(self) in memo:
        return memo[id(self)]
    fn, args = _reduce_ex(self, 2)
    result = fn(*args)
    memo[id(self)] = result
    return result


_C.Tensor.__reduce_ex__ = _reduce_ex
_C.Tensor.__deepcopy__ = _deepcopy
