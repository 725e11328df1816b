"""kiln.save / kiln.load: a dict name -> Tensor (a state_dict) as a safetensors file."""

import os

from . import _C


def save(obj, f):
    """Writes obj, a dict str -> kiln.Tensor (e.g. module.state_dict()), to the path f
    as safetensors. Other objects (an optimizer's nested state_dict, lists, numbers)
    are refused with TypeError: kiln has no pickle format."""
    if not isinstance(obj, dict):
        raise TypeError(f"[save] kiln.save writes a dict str -> Tensor (a state_dict), got {type(obj).__name__}")
    tensors = {}
    for k, v in obj.items():
        if not isinstance(k, str):
            raise TypeError(f"[save] keys must be str, got {type(k).__name__}")
        if not isinstance(v, _C.Tensor):
            raise TypeError(f"[save] value of '{k}' must be a kiln.Tensor, got {type(v).__name__}")
        tensors[k] = v.detach().contiguous()
    _C.io_save_file(tensors, os.fspath(f))


def load(f):
    """Reads a file written by kiln.save (any safetensors file) as a dict str -> Tensor
    (in the file's order, which need not be the saved dict's). The tensors are
    copy-on-write views of the mapped file."""
    return _C.io_load_file(os.fspath(f))
