"""torch's statistics and histogram functions written in Python over kiln's ops,
as torch composes them: cov, corrcoef, diff, trapezoid, aminmax, histc,
histogram, histogramdd, cdist, dist."""

import builtins as _builtins
import math

from . import _C


def dist(input, other, p=2):
    return _C.linalg_vector_norm(input - other, p)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    x = input
    if prepend is not None or append is not None:
        parts = ([prepend] if prepend is not None else []) + [x] + ([append] if append is not None else [])
        x = _C.cat(parts, dim)
    for _ in range(n):
        m = x.size(dim)
        if m == 0:
            break
        a, b = x.narrow(dim, 1, m - 1), x.narrow(dim, 0, m - 1)
        x = _C.logical_xor(a, b) if x.dtype == _C.bool else a - b
    return x


def cov(input, *, correction=1, fweights=None, aweights=None):
    x = input if input.dim() == 2 else input.reshape([1, -1])
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_C.float32)
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    n = x.size(1)
    if w is None:
        avg = _C.mean(x, 1, keepdim=True)
        w_sum = float(n)
        norm = w_sum - correction
        xc = x - avg
        xw = xc
    else:
        w_sum = _C.sum(w)
        avg = _C.sum(x * w, 1, keepdim=True) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * _C.sum(w * aweights.to(x.dtype)) / w_sum
        xc = x - avg
        xw = xc * w
    xh = xc.transpose(0, 1)
    if xh.is_complex():
        xh = _C.conj(xh)
    norm = _C.clamp(norm, min=0.0) if hasattr(norm, "shape") else max(norm, 0.0)
    c = (xw @ xh) / norm
    return c.reshape([]) if input.dim() < 2 else c


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = _C.diagonal(c, 0, 0, 1)
    std = _C.sqrt(d.real if d.is_complex() else d)
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c if c.is_complex() else _C.clamp(c, -1.0, 1.0)


def _trapz_dx(y, x, dx, dim):
    if x is None:
        return None, dx
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim % y.dim()] = x.size(0)
        x = x.reshape(shape)
    return diff(x, dim=dim), None


def trapezoid(y, x=None, *, dx=None, dim=-1):
    d, step = _trapz_dx(y, x, 1.0 if dx is None else dx, dim)
    m = y.size(dim)
    if m == 0:
        return _C.sum(y, dim)
    avg = (y.narrow(dim, 1, m - 1) + y.narrow(dim, 0, m - 1)) / 2
    return _C.sum(avg * (d if d is not None else step), dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    d, step = _trapz_dx(y, x, 1.0 if dx is None else dx, dim)
    m = y.size(dim)
    if m == 0:
        return y.narrow(dim, 0, 0)
    avg = (y.narrow(dim, 1, m - 1) + y.narrow(dim, 0, m - 1)) / 2
    return _C.cumsum(avg * (d if d is not None else step), dim)


def aminmax(input, *, dim=None, keepdim=False):
    from collections import namedtuple

    t = namedtuple("aminmax", ["min", "max"])
    if dim is None:
        mn, mx = _C.amin(input), _C.amax(input)
        if keepdim:
            mn, mx = mn.reshape([1] * input.dim()), mx.reshape([1] * input.dim())
        return t(mn, mx)
    return t(_C.amin(input, dim, keepdim), _C.amax(input, dim, keepdim))


def histc(input, bins=100, min=0, max=0, *, out=None):
    x = input.detach().reshape([-1])
    lo, hi = float(min), float(max)
    if lo == hi and x.numel() > 0:
        lo, hi = float(_C.amin(x).item()), float(_C.amax(x).item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise ValueError(f"torch.histc: max must be larger than min, got min={min} max={max}")
    inside = x[(x >= lo) & (x <= hi)]
    b = _C.clamp(((inside - lo) * (bins / (hi - lo))).floor().to(_C.int64), 0, bins - 1)
    r = _C.bincount(b, minlength=bins).to(input.dtype)
    return r if out is None else out.copy_(r)


def _edges(lo, hi, bins, x):
    if lo is None:
        if x.numel():
            lo, hi = float(_C.amin(x).item()), float(_C.amax(x).item())
        else:
            lo, hi = 0.0, 1.0
    if lo > hi:
        raise ValueError(f"histogram(): max must be larger than min, got min={lo} max={hi}")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _C.linspace(lo, hi, bins + 1, dtype=_C.float64)


def _bucket(x, edges):
    """The bin of each value (last edge inclusive) and whether it is inside."""
    nb = edges.numel() - 1
    from ._sorting import searchsorted

    b = searchsorted(edges.to(x.dtype), x, right=True) - 1
    inside = (x >= edges[0].to(x.dtype)) & (x <= edges[nb].to(x.dtype))
    return _C.clamp(b, 0, max(nb - 1, 0)), inside


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002 (torch's name)
    """input [N, D] (or [..., D]); bins an int, D ints or D edge tensors; range
    (lo0, hi0, lo1, hi1, ...). Returns (hist, [edges per dim])."""
    x = input.reshape([-1, input.size(-1)])
    d = x.size(1)
    spec = bins if isinstance(bins, (list, tuple)) else [bins] * d
    edges = []
    for k in _builtins.range(d):
        col = x[:, k]
        if hasattr(spec[k], "shape"):
            edges.append(spec[k].to(_C.float64))
        else:
            lo, hi = (None, None) if range is None else (float(range[2 * k]), float(range[2 * k + 1]))
            edges.append(_edges(lo, hi, int(spec[k]), col))
    flat = _C.zeros(x.size(0), dtype=_C.int64)
    keep = _C.ones(x.size(0), dtype=_C.bool)
    sizes = [e.numel() - 1 for e in edges]
    for k, e in enumerate(edges):
        b, inside = _bucket(x[:, k], e)
        flat = flat * sizes[k] + b
        keep = keep & inside
    w = _C.ones(x.size(0), dtype=input.dtype) if weight is None else weight.reshape([-1]).to(input.dtype)
    w = _C.where(keep, w, 0.0)
    hist = _C.bincount(flat, weights=w, minlength=math.prod(sizes)).to(input.dtype).reshape(sizes)
    if density:
        total = _C.sum(hist)
        for k, e in enumerate(edges):
            shape = [1] * d
            shape[k] = sizes[k]
            hist = hist / (e.narrow(0, 1, sizes[k]) - e.narrow(0, 0, sizes[k])).to(input.dtype).reshape(shape)
        hist = hist / total
    return hist, [e.to(input.dtype) for e in edges]


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """torch.histogram: (hist, bin_edges) of the flattened input."""
    from collections import namedtuple

    if not input.is_floating_point():
        raise TypeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, float, got "
                        f"{input.dtype}")
    hist, edges = histogramdd(input.reshape([-1, 1]), [bins], range=range, weight=weight, density=density)
    return namedtuple("histogram", ["hist", "bin_edges"])(hist, edges[0])


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """[*, P, M] and [*, R, M] -> [*, P, R] p-norm distances. For p = 2 with
    more than 25 rows (torch's rule) the squared norms and a matrix product
    give them, as torch does; otherwise the differences themselves."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise ValueError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D")
    if x1.size(-1) != x2.size(-1):
        raise ValueError(f"X1 and X2 must have the same number of columns. X1: {x1.size(-1)} X2: {x2.size(-1)}")
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or
                         (compute_mode == "use_mm_for_euclid_dist_if_necessary" and
                          (x1.size(-2) > 25 or x2.size(-2) > 25)))
    if use_mm:
        n1 = _C.sum(x1 * x1, -1, keepdim=True)
        n2 = _C.sum(x2 * x2, -1, keepdim=True).transpose(-2, -1)
        d2 = n1 + n2 - 2 * _C.matmul(x1, x2.transpose(-2, -1))
        return _C.sqrt(_C.clamp(d2, min=0.0))
    return _C.linalg_vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


__all__ = [n for n in dir() if not n.startswith("_") and n != "math"]
