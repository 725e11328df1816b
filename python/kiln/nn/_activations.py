"""torch.nn.functional's activations, similarity and shuffling functions that kiln
writes with its public ops (so they record autograd history through them), with
torch's signatures and argument checks. The formulas are the numerically stable
ones: softplus and logsigmoid never form exp of a large argument."""

import math

from .. import _C


def _inplace(input, result, inplace):
    return input.copy_(result) if inplace else result


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not input.is_floating_point():  # torch keeps an integer input's dtype
        min_val, max_val = int(min_val), int(max_val)
    # where, not clamp: torch's gradient is 0 at the bounds themselves.
    r = _C.where(input <= min_val, min_val, _C.where(input >= max_val, max_val, input)).to(input.dtype)
    return _inplace(input, r, inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    # Gradient 1/6 strictly inside (-3, 3), 0 at and beyond the kinks (torch's).
    return _inplace(input, _C.where(input <= -3.0, 0.0, _C.where(input >= 3.0, 1.0, input / 6.0 + 0.5)), inplace)


def hardswish(input, inplace=False):
    # Gradient 0 at -3 and 1 at 3, as torch's backward.
    r = _C.where(input <= -3.0, 0.0, _C.where(input >= 3.0, input, input * (input + 3.0) / 6.0))
    return _inplace(input, r, inplace)


def hardshrink(input, lambd=0.5):
    return _C.where(_C.abs(input) > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise ValueError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _C.where(input > lambd, input - lambd, _C.where(input < -lambd, input + lambd, 0.0))


def tanhshrink(input):
    return input - _C.tanh(input)


def softsign(input):
    return input / (_C.abs(input) + 1.0)


def _softplus1(z):
    # log(1 + e^z) = max(z, 0) + log1p(e^-|z|): no overflow for any z. max(z, 0)
    # as (z + |z|) / 2, so the gradient at 0 is sigmoid(0) = 1/2.
    return (z + _C.abs(z)) * 0.5 + _C.log1p(_C.exp(-_C.abs(z)))


def softplus(input, beta=1.0, threshold=20.0):
    z = input * beta
    return _C.where(z > threshold, input, _softplus1(z) / beta)


def logsigmoid(input):
    # log(sigmoid(x)) = min(x, 0) - log1p(e^-|x|), min(x, 0) as (x - |x|) / 2.
    return (input - _C.abs(input)) * 0.5 - _C.log1p(_C.exp(-_C.abs(input)))


def mish(input, inplace=False):
    return _inplace(input, input * _C.tanh(_softplus1(input)), inplace)


def threshold(input, threshold, value, inplace=False):
    return _inplace(input, _C.where(input > threshold, input, value), inplace)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    x = -input if dtype is None else (-input).to(dtype)
    return _C.softmax(x, dim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    norm = _C.clamp(_C.linalg_vector_norm(input, p, dim, keepdim=True), min=eps)
    result = input / norm
    return result if out is None else out.copy_(result)


def one_hot(tensor, num_classes=-1):
    if tensor.dtype != _C.int64:
        raise TypeError("one_hot is only applicable to index tensor of type int64")
    if tensor.numel() > 0:
        if int(_C.amin(tensor).item()) < 0:
            raise ValueError("Class values must be non-negative.")
        top = int(_C.amax(tensor).item())
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise ValueError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise ValueError("Can not infer total number of classes from empty tensor.")
    classes = _C.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(_C.int64)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    # Each vector divided by its norm (at least eps) before the dot product,
    # as ATen does, so large inputs do not overflow the product of norms.
    n1 = _C.clamp(_C.linalg_vector_norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = _C.clamp(_C.linalg_vector_norm(x2, 2, dim, keepdim=True), min=eps)
    return _C.sum((x1 / n1) * (x2 / n2), dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    last = max(x1.dim(), x2.dim(), 1) - 1
    return _C.linalg_vector_norm(x1 - x2 + eps, p, last, keepdim=keepdim)


def pdist(input, p=2):
    if input.dim() != 2:
        raise ValueError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.size(0)
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    i = _C.tensor(rows, dtype=_C.int64)
    j = _C.tensor(cols, dtype=_C.int64)
    if not rows:
        return _C.zeros(0, dtype=input.dtype)
    return _C.linalg_vector_norm(input.index_select(0, i) - input.index_select(0, j), p, 1)


def channel_shuffle(input, groups):
    if input.dim() < 3:
        raise ValueError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    n, c = input.size(0), input.size(1)
    if groups <= 0 or c % groups != 0:
        raise ValueError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = list(input.shape[2:])
    return input.reshape([n, groups, c // groups] + rest).transpose(1, 2).reshape(list(input.shape))


def bilinear(input1, input2, weight, bias=None):
    # y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]
    t = _C.tensordot(input2, weight, dims=([input2.dim() - 1], [2]))  # [..., O, I1]
    y = _C.sum(t * input1.unsqueeze(-2), -1)
    return y if bias is None else y + bias


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    from . import functional as F

    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    pads = (size // 2, (size - 1) // 2)
    if dim == 3:
        div = F.pad(div.unsqueeze(1), (0, 0) + pads)
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        shape = list(input.shape)
        div = div.reshape([shape[0], 1, shape[1], shape[2], -1])
        div = F.pad(div, (0, 0, 0, 0) + pads)
        div = F.avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(shape)
    return input / (div * alpha + k) ** beta


def _lp_pool(pool, n, input, norm_type, kernel_size, stride, ceil_mode):
    ks = (kernel_size,) * n if isinstance(kernel_size, int) else tuple(kernel_size)
    if stride is None:
        out = pool(input ** norm_type, ks, padding=0, ceil_mode=ceil_mode)
    else:
        out = pool(input ** norm_type, ks, stride, 0, ceil_mode)
    return (_C.sign(out) * _C.relu(_C.abs(out)) * math.prod(ks)) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from . import functional as F

    return _lp_pool(F.avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from . import functional as F

    return _lp_pool(F.avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from . import functional as F

    return _lp_pool(F.avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    # Gumbel(0, 1) noise: -log(E), E ~ Exp(1) = -log(1 - U), U ~ U[0, 1).
    u = _C.rand_like(logits)
    gumbels = -_C.log(-_C.log1p(-u))
    y_soft = _C.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = _C.argmax(y_soft, dim, keepdim=True)
    y_hard = _C.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    def tup(v):
        return (v,) * n if isinstance(v, int) else tuple(v)

    ks = tup(kernel_size)
    st = ks if stride is None else tup(stride)
    pd = tup(padding)
    spatial_in = list(input.shape[-n:])
    default = [(spatial_in[i] - 1) * st[i] - 2 * pd[i] + ks[i] for i in range(n)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)[-n:]
        for i in range(n):
            lo, hi = default[i] - st[i], default[i] + st[i]
            if not lo < size[i] < hi:
                raise ValueError(f"invalid output_size {list(output_size)} (dim {i} must be between {lo} and {hi})")
    lead = list(input.shape[:-n])
    flat_in = input.reshape(lead + [-1])
    out = _C.zeros(lead + [math.prod(size)], dtype=input.dtype)
    if indices.numel() > 0 and int(_C.amax(indices).item()) >= math.prod(size):
        raise ValueError(f"Found an invalid max index: {int(_C.amax(indices).item())} (output volumes are of size "
                         f"{'x'.join(map(str, size))})")
    return out.scatter(len(lead), indices.reshape(lead + [-1]), flat_in).reshape(lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


__all__ = ["hardtanh", "relu6", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "tanhshrink", "softsign",
           "softplus", "logsigmoid", "mish", "threshold", "softmin", "normalize", "one_hot", "cosine_similarity",
           "pairwise_distance", "pdist", "channel_shuffle", "bilinear", "local_response_norm", "lp_pool1d",
           "lp_pool2d", "lp_pool3d", "gumbel_softmax", "max_unpool1d", "max_unpool2d", "max_unpool3d"]
