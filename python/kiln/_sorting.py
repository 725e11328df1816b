"""torch's order statistics written over kiln's sort (a kernel of its own):
kthvalue, median, nanmedian, mode and unique / unique_consecutive along a dim,
each a sort (O(n log n)) where torch has a dedicated kernel; results, dtypes and
tie rules follow torch's. unique, unique_consecutive (dim=None), searchsorted
and bucketize take their arguments here and run as C++ kernels."""

from collections import namedtuple

from . import _C

_values_indices = {n: namedtuple(n, ["values", "indices"]) for n in ("kthvalue", "median", "nanmedian", "mode")}


def _dim(x, dim):
    return dim % x.dim() if x.dim() > 0 else 0


def _flat_or_dim(x, dim):
    """x with `dim` moved last (dim None: flattened), and how to undo that."""
    if dim is None:
        return x.reshape([-1]), None
    d = _dim(x, dim)
    return x.movedim(d, -1) if x.dim() > 0 else x.reshape([1]), d


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of input (flattened) in ascending order, or the
    distinct slices along dim; with the inverse indices and the counts."""
    if dim is not None:
        return _unique_dim(input, _dim(input, dim), return_inverse, return_counts)
    return _pick(_C._unique(input, bool(return_inverse), bool(return_counts)), return_inverse, return_counts)


def _pick(result, return_inverse, return_counts):
    values, inverse, counts = result
    out = [values] + ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return out[0] if len(out) == 1 else tuple(out)


def _unique_dim(input, d, return_inverse, return_counts):
    # Slices along d compared lexicographically: sort by each column in turn,
    # last key first, with stable sorts.
    x = input.movedim(d, 0)
    m = x.size(0)
    rows = x.reshape([m, -1])
    order = _C.arange(m)
    for c in range(rows.size(1) - 1, -1, -1):
        _, o = _C.sort(rows.index_select(0, order)[:, c], stable=True)
        order = order.index_select(0, o)
    srt = rows.index_select(0, order)
    if m == 0:
        new = _C.zeros(0, dtype=_C.bool)
    else:
        diff = _C.any(srt.narrow(0, 1, m - 1) != srt.narrow(0, 0, m - 1), 1) if rows.size(1) else \
            _C.zeros(m - 1, dtype=_C.bool)
        new = _C.cat([_C.ones(1, dtype=_C.bool), diff])
    run = _C.cumsum(new.to(_C.int64), 0) - 1
    keep = _C.nonzero(new).reshape([-1])
    uniq = x.index_select(0, order.index_select(0, keep)).movedim(0, d)
    out = [uniq]
    if return_inverse:
        out.append(_C.zeros(m, dtype=_C.int64).scatter(0, order, run))
    if return_counts:
        out.append(_C.bincount(run, minlength=keep.numel()))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        return _pick(_C._unique_consecutive(input, bool(return_inverse), bool(return_counts)), return_inverse,
                     return_counts)
    flat = input.movedim(_dim(input, dim), 0)
    m = flat.size(0)
    if m == 0:
        new = _C.zeros(0, dtype=_C.bool)
    elif flat.dim() == 1:
        new = _C.cat([_C.ones(1, dtype=_C.bool), flat.narrow(0, 1, m - 1) != flat.narrow(0, 0, m - 1)])
    else:
        rows = flat.reshape([m, -1])
        new = _C.cat([_C.ones(1, dtype=_C.bool), _C.any(rows.narrow(0, 1, m - 1) != rows.narrow(0, 0, m - 1), 1)])
    keep = _C.nonzero(new).reshape([-1])
    uniq = flat.index_select(0, keep).movedim(0, _dim(input, dim))
    out = [uniq]
    run = _C.cumsum(new.to(_C.int64), 0) - 1
    if return_inverse:
        out.append(run)
    if return_counts:
        out.append(_C.bincount(run, minlength=keep.numel()))
    return out[0] if len(out) == 1 else tuple(out)


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


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    x, d = _flat_or_dim(input, dim)
    n = x.size(-1)
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim} of size {n}")
    vals, idx = _C.sort(x, -1, stable=True)
    v, i = vals.narrow(-1, k - 1, 1), idx.narrow(-1, k - 1, 1)
    return _finish("kthvalue", input, d, v, i, keepdim)


def _finish(name, input, d, v, i, keepdim):
    """v, i: [..., 1] with the reduced dim last; back to input's layout."""
    if input.dim() == 0:
        return _values_indices[name](v.reshape([]), i.reshape([]))
    v, i = v.movedim(-1, d), i.movedim(-1, d)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return _values_indices[name](v, i)


def _median(name, input, dim, keepdim, skip_nan):
    """The lower median (torch's: element (n - 1) // 2 of the sorted values).
    median: a slice holding a NaN gives NaN (its first NaN, as NaN sorts last);
    nanmedian: the median of the non-NaN values (NaN when all are NaN)."""
    if dim is None:
        flat = input.reshape([-1])
        vals, _ = _C.sort(flat)
        nans = int(_C.sum(_C.isnan(flat)).item()) if flat.is_floating_point() else 0
        count = flat.numel() - nans if skip_nan else flat.numel()
        if count == 0 or (nans and not skip_nan):
            return _C.full([], float("nan"), dtype=input.dtype)
        return vals[(count - 1) // 2]
    x, d = _flat_or_dim(input, dim)
    n = x.size(-1)
    if n == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    vals, idx = _C.sort(x, -1, stable=True)
    if x.is_floating_point():
        nans = _C.sum(_C.isnan(x).to(_C.int64), -1, keepdim=True)
        if skip_nan:
            pos = _C.where(nans < n, (n - nans - 1) // 2, 0)
        else:
            pos = _C.where(nans > 0, n - nans, (n - 1) // 2)
    else:
        pos = _C.full(list(x.shape[:-1]) + [1], (n - 1) // 2, dtype=_C.int64)
    return _finish(name, input, d, vals.gather(-1, pos), idx.gather(-1, pos), keepdim)


def median(input, dim=None, keepdim=False):
    return _median("median", input, dim, keepdim, skip_nan=False)


def nanmedian(input, dim=None, keepdim=False):
    return _median("nanmedian", input, dim, keepdim, skip_nan=True)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value of each slice (the smallest among ties) and an
    index where it occurs (its last occurrence, as torch's CPU kernel)."""
    x, d = _flat_or_dim(input, dim)
    n = x.size(-1)
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {dim} to have non-zero size.")
    vals, idx = _C.sort(x, -1, stable=True)
    new = _C.cat([_C.ones(list(x.shape[:-1]) + [1], dtype=_C.bool),
                  vals.narrow(-1, 1, n - 1) != vals.narrow(-1, 0, n - 1)], -1)
    run = _C.cumsum(new.to(_C.int64), -1) - 1  # run id of each sorted element
    ones = _C.ones(list(run.shape), dtype=_C.int64)
    counts = _C.zeros(list(run.shape), dtype=_C.int64).scatter_add(-1, run, ones)
    length = counts.gather(-1, run)  # each element's run length
    # The longest run; among equal lengths the first (smallest value): the
    # maximum of length * n - run picks it.
    best = _C.argmax(length * n - run, -1, keepdim=True)
    best_run = run.gather(-1, best)
    value = vals.gather(-1, best)
    # The last occurrence in input order: the largest original index in that run.
    in_run = run == best_run
    index = _C.amax(_C.where(in_run, idx, -1), -1, keepdim=True)
    return _finish("mode", input, d, value, index, keepdim)


FUNCTIONS = ["unique", "unique_consecutive", "searchsorted", "bucketize", "kthvalue", "median", "nanmedian", "mode"]
METHODS = ["unique", "unique_consecutive", "kthvalue", "median", "nanmedian", "mode"]

for _name in METHODS:
    setattr(_C.Tensor, _name, globals()[_name])
del _name
