"""torch.<name> composites written in Python over kiln's ops, as torch writes them:
constructors (asarray, frombuffer, meshgrid, cartesian_prod, block_diag,
combinations, vander, empty_strided, range), indexing (take_along_dim, index_fill,
index_copy, masked_scatter, unravel_index, isin) and elementwise helpers (addcdiv,
rsub, renorm, cross, mvlgamma, conj/neg views)."""

import itertools
import math

from . import _C
from .nn import functional as F


def _tensor(x, like=None):
    if hasattr(x, "shape") and not isinstance(x, (int, float, complex, bool)):
        return x
    return _C.tensor(x) if like is None else _C.tensor(x, dtype=like.dtype)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    r = input + value * (tensor1 / tensor2)
    return r if out is None else out.copy_(r)


def rsub(input, other, alpha=1):
    return other - alpha * input if alpha != 1 else other - input


def adjoint(input):
    t = input.transpose(-2, -1)
    return _C.conj(t) if t.is_complex() else t


def resolve_conj(input):
    # kiln's conj is eager (no lazy conjugate bit): nothing to resolve.
    return input


def resolve_neg(input):
    return input


def conj_physical(input, *, out=None):
    r = _C.conj(input) if input.is_complex() else input.clone()
    return r if out is None else out.copy_(r)


def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape([-1]) for g in grids], 1)


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    sizes = [t.numel() for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(tensors):
        pos = i
        if swap and i < 2:
            pos = 1 - i
        shape = [1] * len(tensors)
        shape[pos] = t.numel()
        out.append(t.reshape(shape).expand(sizes))
    return tuple(out)


def block_diag(*tensors):
    mats = [t.reshape([1, 1]) if t.dim() == 0 else t.reshape([1, -1]) if t.dim() == 1 else t for t in tensors]
    for t in mats:
        if t.dim() != 2:
            raise ValueError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has {t.dim()}")
    if not mats:
        return _C.zeros(1, 0)
    dtype = mats[0].dtype
    for t in mats[1:]:
        dtype = _C.promote_types(dtype, t.dtype)
    rows = sum(t.size(0) for t in mats)
    cols = sum(t.size(1) for t in mats)
    parts, c = [], 0
    for t in mats:
        parts.append(F.pad(t.to(dtype), (c, cols - c - t.size(1))))
        c += t.size(1)
    return _C.cat(parts, 0) if rows else _C.zeros(0, cols, dtype=dtype)


def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise ValueError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise ValueError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty(0, dtype=input.dtype)
    n = input.size(0)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(n), r))
    if not idx:
        return _C.empty(0, r, dtype=input.dtype)
    cols = [_C.tensor([c[k] for c in idx], dtype=_C.int64) for k in range(r)]
    return _C.stack([input.index_select(0, c) for c in cols], 1)


def vander(x, N=None, increasing=False):
    """torch.vander: columns x^(N-1), ..., x^0 (increasing: x^0 first)."""
    if x.dim() != 1:
        raise ValueError("x must be a one-dimensional tensor.")
    n = x.size(0) if N is None else N
    if n < 0:
        raise ValueError("N must be non-negative.")
    dtype = _C.promote_types(x.dtype, _C.int64)
    xs = x.to(dtype)
    cols = [_C.ones_like(xs)]
    for _ in range(1, n):
        cols.append(cols[-1] * xs)
    if n == 0:
        return _C.empty(x.size(0), 0, dtype=dtype)
    m = _C.stack(cols, 1)
    return m if increasing else _C.flip(m, [1])


def take_along_dim(input, indices, dim=None, *, out=None):
    if dim is None:
        r = input.reshape([-1]).gather(0, indices.reshape([-1]))
    else:
        d = dim % input.dim()
        shape = [max(a, b) if i != d else None for i, (a, b) in enumerate(zip(input.shape, indices.shape))]
        ishape = [s if s is not None else input.size(d) for s in shape]
        jshape = [s if s is not None else indices.size(d) for s in shape]
        r = input.expand(ishape).gather(d, indices.expand(jshape))
    return r if out is None else out.copy_(r)


def msort(input):
    return _C.sort(input, 0)[0]


def renorm(input, p, dim, maxnorm):
    d = dim % input.dim()
    others = [i for i in range(input.dim()) if i != d]
    norms = _C.linalg_vector_norm(input, p, others, keepdim=True)
    factor = _C.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def index_fill(input, dim, index, value):
    d = dim % max(input.dim(), 1)
    mask_shape = [1] * input.dim()
    if input.dim() > 0:
        mask_shape[d] = input.size(d)
    # The positions along dim that index names (each counted, then > 0).
    counts = _C.zeros(input.size(d) if input.dim() > 0 else 1, dtype=_C.int64)
    hit = counts.index_add_(0, index.reshape([-1]), _C.ones(index.numel(), dtype=_C.int64)) > 0
    return _C.where(hit.reshape(mask_shape) if input.dim() > 0 else hit.reshape([]), value, input)


def unravel_index(indices, shape):
    if isinstance(shape, int):
        shape = (shape,)
    idx = _tensor(indices)
    if idx.is_floating_point() or idx.dtype == _C.bool:
        raise TypeError("expected 'indices' to be integer dtype")
    out = []
    rem = idx.to(_C.int64)
    total = math.prod(shape)
    if idx.numel() > 0 and (int(_C.amin(rem).item()) < -total or int(_C.amax(rem).item()) >= total):
        raise ValueError("index out of bounds for the given shape")
    rem = _C.where(rem < 0, rem + total, rem)
    for s in reversed(shape):
        out.append(_C.remainder(rem, s))
        rem = _C.floor_divide(rem, s)
    return tuple(reversed(out))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    e = _tensor(elements)
    t = _tensor(test_elements, e).reshape([-1])
    hit = _C.any(e.unsqueeze(-1) == t, -1) if t.numel() > 0 else _C.zeros(list(e.shape), dtype=_C.bool)
    return _C.logical_not(hit) if invert else hit


def cross(input, other, dim=None, *, out=None):
    """torch.cross: dim None takes the first dim of size 3 (torch's deprecated
    default; linalg.cross takes the last)."""
    if dim is None:
        a, b = _C.broadcast_tensors(input, other)
        dim = next((i for i, s in enumerate(a.shape) if s == 3), None)
        if dim is None:
            raise ValueError(f"no dimension of size 3 in input {list(input.shape)}")
    r = _C.linalg_cross(input, other, dim=dim)
    return r if out is None else out.copy_(r)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    t = _C.full([], s, dtype=_C.float32 if dtype is None else dtype, device=device)
    return t.requires_grad_() if requires_grad else t


def mvlgamma(input, p, *, out=None):
    from ._special import multigammaln

    return multigammaln(input, p, out=out)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor from obj, sharing its memory where it can (a kiln tensor, a
    NumPy array of the dtype asked) unless copy=True."""
    import numpy as np

    if isinstance(obj, _C.Tensor):
        t = obj if dtype is None else obj.to(dtype)
        if copy and t is obj:
            t = obj.clone()
    elif isinstance(obj, np.ndarray) and not copy and (dtype is None or _C.from_numpy(obj[:0]).dtype == dtype):
        t = _C.from_numpy(obj)
    else:
        if copy is False:
            raise ValueError("asarray(): can't avoid a copy of this object")
        t = _C.tensor(obj, dtype=dtype)
    if device is not None:
        t = t.to(device)
    return t.requires_grad_() if requires_grad else t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor over a Python buffer's memory (shared, not copied)."""
    import numpy as np

    np_dtype = _C.empty(0, dtype=dtype).numpy().dtype
    t = _C.from_numpy(np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset))
    return t.requires_grad_() if requires_grad else t


def to_dlpack(tensor):
    return tensor.__dlpack__()


def index_copy(input, dim, index, source):
    return input.clone().index_copy_(dim, index, source)


def masked_scatter(input, mask, source):
    return input.clone().masked_scatter_(mask, source)


def fill(input, value):
    return _C.full_like(input, value)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    size, stride = list(size), list(stride)
    if len(size) != len(stride):
        raise ValueError(f"mismatch in length of strides and shape: {len(size)} and {len(stride)}")
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(s > 0 for s in size) else 0
    base = _C.empty(extent, dtype=dtype, device=device)
    t = base.as_strided(size, stride)
    return t.requires_grad_() if requires_grad else t


def _range_inclusive(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """torch.range (kiln.range, set in __init__ so no module code calls it for the
    builtin): like arange but with end included (deprecated in torch)."""
    if end is None:
        start, end = 0, start
    count = int(math.floor((end - start) / step)) + 1
    t = _C.arange(count, dtype=_C.float64, device=device) * step + start
    t = t.to(_C.float32 if dtype is None else dtype)
    return t.requires_grad_() if requires_grad else t


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("F", "itertools", "math")]
