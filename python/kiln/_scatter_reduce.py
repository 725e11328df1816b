"""torch.scatter_reduce and index_reduce (and their Tensor methods, in place too)
written with kiln's ops: every source element's destination as a row-major
index into input, then per reduction: sum and mean through index_add; amax and
amin by sorting the (destination, value) pairs and keeping each destination's
last (or first) one; prod exactly, in index order, one scatter per rank of a
source within its destination."""

from . import _C

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _destinations(shape, dim, index):
    """For each element of index (row-major), its row-major position in a
    tensor of `shape` with the coordinate along dim replaced by the index."""
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    nd = index.dim()
    lin = index.to(_C.int64) * strides[dim]
    for d in range(nd):
        if d != dim:
            lin = lin + _C.arange(index.size(d)).reshape([-1 if j == d else 1 for j in range(nd)]) * strides[d]
    return lin.reshape([-1])


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    if reduce not in _REDUCTIONS:
        raise ValueError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if index.dim() != input.dim() or src.dim() != input.dim():
        raise ValueError("Index tensor must have the same number of dimensions as input and src tensors")
    d = dim % max(input.dim(), 1)
    for k in range(index.dim()):
        if index.size(k) > src.size(k) or (k != d and index.size(k) > input.size(k)):
            raise ValueError(f"Size does not match at dimension {k}: index {list(index.shape)}, input "
                             f"{list(input.shape)}, src {list(src.shape)}")
    shape = list(input.shape)
    flat = input.reshape([-1])
    n = flat.numel()
    vals = src
    for k in range(index.dim()):
        vals = vals.narrow(k, 0, index.size(k))
    v = vals.reshape([-1]).to(input.dtype)
    if index.numel() and (int(_C.amin(index).item()) < 0 or int(_C.amax(index).item()) >= max(shape[d], 0)):
        raise IndexError(f"index out of bounds for dimension {d} with size {shape[d]}")
    dest = _destinations(shape, d, index) if index.numel() else _C.zeros(0, dtype=_C.int64)
    counts = _C.zeros(n, dtype=_C.int64).index_add(0, dest, _C.ones(dest.numel(), dtype=_C.int64))
    hit = counts > 0
    if reduce in ("sum", "mean"):
        base = flat if include_self else _C.where(hit, 0, flat).to(flat.dtype)
        total = base.index_add(0, dest, v)
        if reduce == "sum":
            r = total
        else:
            # Positions nothing scatters to keep input (count 1 keeps the division defined).
            cnt = _C.clamp(counts + (1 if include_self else 0), min=1).to(flat.dtype)
            mean = total / cnt if flat.is_floating_point() or flat.is_complex() else _C.floor_divide(total, cnt)
            r = _C.where(hit, mean, flat).to(flat.dtype)
    elif reduce in ("amax", "amin"):
        r = flat.clone()
        if dest.numel():
            _, by_value = _C.sort(v, stable=True)
            _, by_dest = _C.sort(dest.index_select(0, by_value), stable=True)
            order = by_value.index_select(0, by_dest)
            ds, vs = dest.index_select(0, order), v.index_select(0, order)
            m = ds.numel()
            change = ds.narrow(0, 1, m - 1) != ds.narrow(0, 0, m - 1)
            one = _C.ones(1, dtype=_C.bool)
            # Ascending within each destination: its last value is the max, its first the min.
            pick = _C.cat([change, one]) if reduce == "amax" else _C.cat([one, change])
            where_to, chosen = ds[pick], vs[pick]
            if include_self:
                own = flat.index_select(0, where_to)
                chosen = _C.maximum(chosen, own) if reduce == "amax" else _C.minimum(chosen, own)
            r = r.scatter(0, where_to, chosen)
    else:  # prod
        # Exact, in index order: the k-th source of every destination is
        # multiplied in at step k (one scatter per step, its destinations
        # distinct), k up to the most sources any destination has.
        acc = flat if include_self else _C.where(hit, 1, flat).to(flat.dtype)
        if dest.numel():
            _, order = _C.sort(dest, stable=True)
            ds, vs = dest.index_select(0, order), v.index_select(0, order)
            first = _C.cumsum(counts, 0) - counts  # where each destination's run starts
            rank = _C.arange(ds.numel()) - first.index_select(0, ds)
            for k in range(int(_C.amax(counts).item())):
                sel = rank == k
                to = ds[sel]
                acc = acc.scatter(0, to, acc.index_select(0, to) * vs[sel])
        r = acc
    r = r.reshape(shape)
    return r if out is None else out.copy_(r)


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """input's slices along dim at `index` reduced with source's (index 1-D,
    source of input's shape but index.numel() along dim)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dim() > 1:
        raise ValueError("index_reduce(): Index is supposed to be a vector")
    d = dim % max(input.dim(), 1)
    shape = [1] * source.dim()
    if source.dim():
        shape[d] = -1
    full = index.reshape(shape).expand(list(source.shape)) if source.dim() else index.reshape([])
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self, out=out)


def _in_place(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    return method


for _name, _fn in (("scatter_reduce", scatter_reduce), ("index_reduce", index_reduce)):
    setattr(_C.Tensor, _name, _fn)
    setattr(_C.Tensor, _name + "_", _in_place(_fn))
del _name, _fn

FUNCTIONS = ["scatter_reduce", "index_reduce"]
