"""torch.<name> functions that kiln writes in Python over its public ops: the
torch-namespace spellings of nn.functional and linalg functions (with torch's own
argument orders: torch.batch_norm puts weight first, torch.embedding the weight
before the indices, torch.*_loss take reduction as torch's enum int or a string),
the older linalg names (torch.svd returns V, not Vh), and composites torch also
composes (cartesian_prod, block_diag, cov, diff, trapezoid, ...).
Tensor methods of the same names are set here too. Each records autograd history
through the ops it is written with."""

import builtins as _builtins
import itertools
import math

from . import _C
from .nn import functional as F

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(r):
    return _REDUCTIONS[r] if isinstance(r, int) else r


def _tensor(x, like=None):
    if hasattr(x, "shape") and not isinstance(x, (int, float, complex, bool)):
        return x
    return _C.tensor(x) if like is None else _C.tensor(x, dtype=like.dtype)


# ---- nn.functional under torch's names and argument orders --------------------

conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
avg_pool1d, adaptive_avg_pool1d = F.avg_pool1d, F.adaptive_avg_pool1d
pixel_shuffle, pixel_unshuffle, channel_shuffle = F.pixel_shuffle, F.pixel_unshuffle, F.channel_shuffle
hardshrink, threshold, bilinear, pdist = F.hardshrink, F.threshold, F.bilinear, F.pdist
cosine_similarity, pairwise_distance = F.cosine_similarity, F.pairwise_distance


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def adaptive_max_pool1d(input, output_size):
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled=True):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


def dropout(input, p, train):
    return F.dropout(input, p, train)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx)


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, tuple(pad), "constant", value)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


# ---- linalg under the older torch names ----------------------------------------

def det(input):
    return _C.linalg_det(input)


def slogdet(input):
    return _C.linalg_slogdet(input)


def logdet(input):
    # log(det) of a real matrix: NaN for a negative determinant, -inf for zero.
    sign, logabs = _C.linalg_slogdet(input)
    if input.is_complex():
        return logabs + _C.log(sign)
    return _C.where(sign < 0, float("nan"), logabs)


def inverse(input):
    return _C.linalg_inv(input)


def pinverse(input, rcond=1e-15):
    return _C.linalg_pinv(input, rtol=rcond)


def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V = Vh^H; some=False gives the full U and V;
    compute_uv=False gives zero-filled U and V."""
    U, S, Vh = _C.linalg_svd(input, full_matrices=not some)
    V = Vh.transpose(-2, -1)
    if V.is_complex():
        V = _C.conj(V)
    if not compute_uv:
        U, V = _C.zeros_like(U), _C.zeros_like(V)
    return U, S, V


def cholesky_inverse(L, upper=False):
    """The inverse of A from its Cholesky factor (A = L L^H, or U^H U)."""
    n = L.size(-1)
    eye = _C.eye(n, dtype=L.dtype).expand(list(L.shape))
    Linv = _C.linalg_solve_triangular(L, eye, upper=upper)
    LinvH = Linv.transpose(-2, -1)
    if LinvH.is_complex():
        LinvH = _C.conj(LinvH)
    return LinvH @ Linv if not upper else Linv @ LinvH


def matrix_exp(A):
    """e^A by scaling and squaring with a degree-18 Taylor polynomial evaluated
    in Horner form (float64 error ~1e-15 relative for ||A / 2^s|| <= 1/2)."""
    if A.dim() < 2 or A.size(-1) != A.size(-2):
        raise ValueError(f"[matrix_exp] expected a tensor of square matrices, got {list(A.shape)}")
    n = A.size(-1)
    if A.numel() == 0:
        return A.clone()
    norm = float(_C.amax(_C.linalg_matrix_norm(A.detach(), 1)).item()) if A.dim() > 2 else \
        float(_C.linalg_matrix_norm(A.detach(), 1).item())
    s = max(0, int(math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0) if math.isfinite(norm) else 0
    X = A / (2.0 ** s)
    eye = _C.eye(n, dtype=A.dtype).expand(list(A.shape))
    R = eye
    for k in range(18, 0, -1):
        R = eye + (X @ R) / float(k)
    for _ in range(s):
        R = R @ R
    return R


# ---- composites ------------------------------------------------------------------

def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    r = input + value * (tensor1 / tensor2)
    return r if out is None else out.copy_(r)


def rsub(input, other, alpha=1):
    return other - alpha * input if alpha != 1 else other - input


def dist(input, other, p=2):
    return _C.linalg_vector_norm(input - other, p)


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


def linalg_vander(x, *, N=None):
    """torch.linalg.vander: [*, n] -> [*, n, N], columns x^0 ... x^(N-1)."""
    n = x.size(-1) if N is None else N
    if n <= 1:
        raise ValueError("N must be greater than 1.")
    cols = [_C.ones_like(x)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    return _C.stack(cols, -1)


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


# ---- Tensor methods ----------------------------------------------------------------

_T = _C.Tensor


def _set_methods():
    for name in ("addcdiv", "cov", "corrcoef", "diff", "aminmax", "msort",
                 "det", "logdet", "slogdet", "inverse", "pinverse", "svd", "cholesky_inverse", "matrix_exp",
                 "take_along_dim", "renorm", "index_fill", "adjoint", "conj_physical", "resolve_conj",
                 "resolve_neg", "histc", "dist", "cross", "hardshrink", "mvlgamma"):
        setattr(_T, name, globals()[name])

    def inplace(fn):
        return lambda self, *a, **k: self.copy_(fn(self, *a, **k))

    for name in ("addcdiv", "renorm", "index_fill", "conj_physical", "mvlgamma"):
        setattr(_T, name + "_", inplace(globals()[name]))
    _T.cumsum_ = lambda self, dim, *, dtype=None: self.copy_(_C.cumsum(self, dim, dtype=dtype))
    _T.cumprod_ = lambda self, dim, *, dtype=None: self.copy_(_C.cumprod(self, dim, dtype=dtype))
    _T.clamp_min_ = lambda self, min: self.clamp_(min=min)
    _T.clamp_max_ = lambda self, max: self.clamp_(max=max)
    _T.clip_ = lambda self, min=None, max=None: self.clamp_(min, max)
    for alias, target in (("absolute_", "abs_"), ("arctan2_", "atan2_"), ("divide_", "div_"),
                          ("multiply_", "mul_"), ("subtract_", "sub_"), ("negative_", "neg_"),
                          ("not_equal_", "ne_"), ("less_", "lt_"), ("less_equal_", "le_"), ("greater_", "gt_"),
                          ("greater_equal_", "ge_")):
        setattr(_T, alias, getattr(_T, target))

    def new_factory(make):
        def f(self, size, *args, dtype=None, device=None, requires_grad=False, **kwargs):
            t = make(list(size) if not isinstance(size, int) else [size], *args,
                     dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device)
            return t.requires_grad_() if requires_grad else t
        return f

    _T.new_empty = new_factory(lambda s, **k: _C.empty(s, **k))
    _T.new_zeros = new_factory(lambda s, **k: _C.zeros(s, **k))
    _T.new_ones = new_factory(lambda s, **k: _C.ones(s, **k))
    _T.new_full = new_factory(lambda s, v, **k: _C.full(s, v, **k))
    _T.new_empty_strided = new_factory(lambda s, st, **k: empty_strided(s, st, **k))

    def sum_to_size(self, *size):
        shape = list(size[0]) if len(size) == 1 and not isinstance(size[0], int) else list(size)
        lead = self.dim() - len(shape)
        dims = list(range(lead)) + [lead + i for i, s in enumerate(shape)
                                             if s == 1 and self.size(lead + i) != 1]
        r = _C.sum(self, dims, keepdim=True) if dims else self
        return r.reshape(shape)

    def unfold(self, dimension, size, step):
        d = dimension % max(self.dim(), 1)
        n = self.size(d) if self.dim() > 0 else 1
        if size > n:
            raise ValueError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise ValueError(f"step is {step} but must be > 0")
        shape, strides = list(self.shape), [self.stride(i) for i in range(self.dim())]
        if self.dim() == 0:
            shape, strides, d = [1], [1], 0
        st = strides[d]
        shape[d] = (n - size) // step + 1
        strides[d] = st * step
        return self.as_strided(shape + [size], strides + [st], self.storage_offset())

    def index_copy_(self, dim, index, source):
        d = dim % max(self.dim(), 1)
        shape = [1] * source.dim()
        if source.dim():
            shape[d] = -1
        idx = index.reshape(shape).expand(list(source.shape)) if source.dim() else index.reshape([])
        return self.scatter_(d, idx, source)

    def masked_scatter_(self, mask, source):
        # The positions mask selects (row-major), filled from source in order.
        where = _C.nonzero(mask.expand(list(self.shape)).reshape([-1])).reshape([-1])
        if where.numel() > source.numel():
            raise ValueError("masked_scatter: expected source to have at least as many elements as ones in mask")
        return self.put_(where, source.reshape([-1]).narrow(0, 0, where.numel()))

    def fill_diagonal_(self, fill_value, wrap=False):
        if self.dim() < 2:
            raise ValueError("dimensions must larger than 1")
        if self.dim() > 2 and len(set(self.shape)) != 1:
            raise ValueError("all dimensions of input must be of equal length")
        n = min(self.shape)
        step = sum(self.stride(i) for i in range(self.dim()))
        self.as_strided([n], [step], self.storage_offset()).fill_(fill_value)
        if wrap and self.dim() == 2 and self.size(0) > self.size(1) + 1:
            # torch's wrap: the diagonal starts again one row below its end.
            rest = self.narrow(0, self.size(1) + 1, self.size(0) - self.size(1) - 1)
            fill_diagonal_(rest, fill_value, wrap=True)
        return self

    _T.sum_to_size = sum_to_size
    _T.unfold = unfold
    _T.index_copy_ = index_copy_
    _T.index_copy = index_copy
    _T.masked_scatter_ = masked_scatter_
    _T.masked_scatter = masked_scatter
    _T.fill_diagonal_ = fill_diagonal_
    _T.histogram = histogram


_set_methods()

def linalg_cond(A, p=None):
    """torch.linalg.cond: sigma_max / sigma_min for p None or 2 (-2: the
    inverse), else norm(A, p) * norm(inv(A), p)."""
    if p is None or p in (2, -2):
        s = _C.linalg_svdvals(A)
        hi, lo = s.narrow(-1, 0, 1).squeeze(-1), s.narrow(-1, s.size(-1) - 1, 1).squeeze(-1)
        return hi / lo if p != -2 else lo / hi
    return _C.linalg_matrix_norm(A, p) * _C.linalg_matrix_norm(_C.linalg_inv(A), p)


def linalg_tensorinv(A, ind=2):
    """torch.linalg.tensorinv: the inverse of A seen as a matrix
    [prod(A.shape[:ind]), prod(A.shape[ind:])]."""
    if ind <= 0:
        raise ValueError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = list(A.shape[:ind]), list(A.shape[ind:])
    n, m = math.prod(out_shape), math.prod(in_shape)
    if n != m:
        raise ValueError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]),"
                         f" but got {m} != {n}")
    return _C.linalg_inv(A.reshape([n, m])).reshape(in_shape + out_shape)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) of lu_factor's compact LU [*, m, n] and 1-based pivots [*, k]:
    A = P @ L @ U, L unit lower triangular [*, m, k], U upper [*, k, n]. The
    pivots are LAPACK's row interchanges, applied in order."""
    from collections import namedtuple

    m, n = LU_data.size(-2), LU_data.size(-1)
    k = min(m, n)
    L = U = P = None
    if unpack_data:
        eye = _C.eye(m, k, dtype=LU_data.dtype)
        L = _C.tril(LU_data.narrow(-1, 0, k), -1) + eye
        U = _C.triu(LU_data.narrow(-2, 0, k))
    if unpack_pivots:
        piv = LU_pivots.reshape([-1, LU_pivots.size(-1)]).to(_C.int64).numpy()
        perms = []
        for row in piv:
            perm = list(range(m))
            for i, p in enumerate(row[:k]):
                j = int(p) - 1
                perm[i], perm[j] = perm[j], perm[i]
            perms.append(perm)
        # (P^T A)[i] = A[perm[i]]: P[perm[i], i] = 1.
        idx = _C.tensor(perms, dtype=_C.int64).reshape(list(LU_pivots.shape[:-1]) + [m])
        P = _C.zeros(list(LU_pivots.shape[:-1]) + [m, m], dtype=LU_data.dtype)
        P = P.scatter(-2, idx.unsqueeze(-2), 1.0) if m else P
    return namedtuple("lu_unpack", ["P", "L", "U"])(P, L, U)


def linalg_matrix_sqrth(A):
    """The principal square root of a Hermitian positive semi-definite matrix
    (batches too): V diag(sqrt(w)) V^H from eigh. A negative eigenvalue gives
    NaN entries, as sqrt does."""
    w, V = _C.linalg_eigh(A)
    VH = V.transpose(-2, -1)
    if VH.is_complex():
        VH = _C.conj(VH)
    return (V * _C.sqrt(w).unsqueeze(-2).to(V.dtype)) @ VH


def linalg_polar(A, *, side="right"):
    """The polar decomposition from the SVD A = W S V^H: (U, P) with U = W V^H
    unitary and P positive semi-definite, A = U P (side="right") or A = P U
    (side="left"), as scipy.linalg.polar."""
    if side not in ("right", "left"):
        raise ValueError(f"linalg.polar: side must be 'right' or 'left', got {side!r}")
    W, S, Vh = _C.linalg_svd(A, full_matrices=False)

    def h(M):
        Mt = M.transpose(-2, -1)
        return _C.conj(Mt) if Mt.is_complex() else Mt

    U = W @ Vh
    Sd = S.to(A.dtype)
    P = (h(Vh) * Sd.unsqueeze(-2)) @ Vh if side == "right" else (W * Sd.unsqueeze(-2)) @ h(W)
    return U, P


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("F", "itertools", "math", "namedtuple")
           and not n.startswith("linalg_")]
LINALG = {"vander": linalg_vander, "matrix_exp": matrix_exp, "cond": linalg_cond, "tensorinv": linalg_tensorinv,
          "matrix_sqrth": linalg_matrix_sqrth, "polar": linalg_polar}
