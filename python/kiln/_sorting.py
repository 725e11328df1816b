"""The Python faces of kiln's ordering functions: unique / unique_consecutive
(flattened or along a dim, C++ kernels), searchsorted, bucketize, and the order
statistics kthvalue, median, nanmedian and mode (C++ kernels: selection, and a
sort per line for mode) with torch's named tuples and out=."""

from collections import namedtuple

from . import _C

_values_indices = {n: namedtuple(n, ["values", "indices"]) for n in ("kthvalue", "median", "nanmedian", "mode")}


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (flattened) in ascending order, or the
    distinct slices along dim; with the inverse indices and the counts."""
    if dim is not None:
        return _pick(_C._unique_dim(input, dim, True, bool(return_inverse), bool(return_counts)), return_inverse,
                     return_counts)
    return _pick(_C._unique(input, bool(return_inverse), bool(return_counts)), return_inverse, return_counts)


def _pick(result, return_inverse, return_counts):
    values, inverse, counts = result
    out = [values] + ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first of each run of equal neighbours of input (flattened), or of
    equal neighbouring slices along dim; with the inverse indices and the counts."""
    if dim is None:
        return _pick(_C._unique_consecutive(input, bool(return_inverse), bool(return_counts)), return_inverse,
                     return_counts)
    return _pick(_C._unique_dim(input, dim, False, bool(return_inverse), bool(return_counts)), return_inverse,
                 return_counts)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """For each value, the index where it would be inserted into the sorted last
    dim of sorted_sequence (left: before equal values; right: after them): a
    binary search per value in C++ (kiln::searchsorted)."""
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise ValueError("side and right can't be set to opposites, got side of left while right was True")
        right = side == "right"
    vals = input if hasattr(input, "shape") else _C.tensor(input, dtype=sorted_sequence.dtype)
    r = _C._searchsorted(sorted_sequence, vals, bool(right), bool(out_int32), sorter)
    return r if out is None else out.copy_(r)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """torch.bucketize: the bucket of each value among 1-D boundaries (right=False:
    boundaries[i-1] < x <= boundaries[i])."""
    if boundaries.dim() != 1:
        raise ValueError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def _result(name, pair, out):
    """(values, indices) -> torch.return_types.<name>, or copied into out's pair."""
    if out is None:
        return _values_indices[name](*pair)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{name}(): out must be a (values, indices) pair of tensors")
    for o, r in zip(out, pair):
        if tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype:
            raise ValueError(f"{name}(): out tensors must be {r.dtype} of shape {tuple(r.shape)}, "
                             f"got {o.dtype} of shape {tuple(o.shape)}")
        o.copy_(r)
    return _values_indices[name](*out)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest entry along dim and its index (C++ kiln::kthvalue, by selection)."""
    return _result("kthvalue", _C._kthvalue(input, int(k), int(dim), bool(keepdim)), out)


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median along dim (NaN when the line holds one), or of every entry when
    dim is None (then a 0-d tensor)."""
    if dim is None:
        return _C._median(input, None, False, False)
    return _result("median", _C._median(input, int(dim), bool(keepdim), False), out)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median over the non-NaN entries (NaN when all are NaN)."""
    if dim is None:
        return _C._median(input, None, False, True)
    return _result("nanmedian", _C._median(input, int(dim), bool(keepdim), True), out)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value of each line along dim (the smallest among ties) and
    the last index holding it."""
    return _result("mode", _C._mode(input, int(dim), bool(keepdim)), out)


FUNCTIONS = ["unique", "unique_consecutive", "searchsorted", "bucketize", "kthvalue", "median", "nanmedian", "mode"]
METHODS = ["unique", "unique_consecutive", "kthvalue", "median", "nanmedian", "mode"]

for _name in METHODS:
    setattr(_C.Tensor, _name, globals()[_name])
del _name
