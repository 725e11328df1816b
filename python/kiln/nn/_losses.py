"""torch.nn.functional's losses that kiln writes with its public ops (mse_loss,
nll_loss and cross_entropy are kiln ops of their own), with torch's signatures:
reduction 'none' | 'mean' | 'sum' (kl_div also 'batchmean'), and the legacy
size_average / reduce arguments mapped to it as torch maps them."""

import math

from .. import _C
from ._activations import _softplus1, logsigmoid, pairwise_distance


def _reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _C.mean(loss)
    if reduction == "sum":
        return _C.sum(loss)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _pos(z):
    """max(z, 0) with gradient 0 at z == 0 (torch's hinge losses)."""
    return _C.where(z > 0, z, 0.0)


def _check_reduction(reduction, allowed=("none", "mean", "sum")):
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.abs(input - target), _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if beta < 0:
        raise ValueError("smooth_l1_loss does not support negative values for beta.")
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    d = _C.abs(input - target)
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(_C.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    if delta <= 0:
        raise ValueError("huber_loss does not support non-positive values for delta.")
    _check_reduction(reduction)
    d = _C.abs(input - target)
    return _reduce(_C.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction, ("none", "mean", "sum", "batchmean"))
    if log_target:
        loss = _C.exp(target) * (target - input)
    else:
        loss = _C.special_xlogy(target, target) - target * input
    if reduction == "batchmean":
        return _C.sum(loss) / input.size(0) if input.dim() > 0 else _C.sum(loss)
    return _reduce(loss, reduction)


def _same_size(input, target, what):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size."
                         if what == "bce" else
                         f"Target size ({tuple(target.shape)}) must be the same as input size "
                         f"({tuple(input.shape)})")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_size(input, target, "bce")
    # torch clamps each log at -100 so a 0 or 1 input gives a finite loss, and
    # its gradient is (x - y) / max(x (1 - x), 1e-12): finite at 0 and 1, where
    # the chain rule through log would give inf * 0. The loss is its value plus
    # the first-order terms g * (v - v.detach()), which carry those gradients
    # (so it is differentiable once, not twice).
    from .._grad_mode import no_grad

    with no_grad():
        log_x = _C.clamp(_C.log(input), min=-100.0)
        log_1mx = _C.clamp(_C.log1p(-input), min=-100.0)
        value = -(target * log_x + (1 - target) * log_1mx)
        g_input = (input - target) / _C.clamp(input * (1 - input), min=1e-12)
        g_target = log_1mx - log_x
    loss = value + g_input * (input - input.detach()) + g_target * (target - target.detach())
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_size(input, target, "logits")
    # -log(sigmoid(x)) = softplus(-x), -log(1 - sigmoid(x)) = softplus(x).
    if pos_weight is None:
        loss = (1 - target) * input + _softplus1(-input)
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * _softplus1(-input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_softplus1(-target * input), _reduction(size_average, reduce, reduction))


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    if not input1.dim() == input2.dim() == target.dim():
        raise ValueError("margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                         f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: {list(target.shape)}")
    loss = _pos(-target * (input1 - input2) + margin)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    margin_part = _C.where(target != 1, _pos(margin - input), 0.0)
    self_part = _C.where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, _reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    dim = 1 if input1.dim() == 2 else 0
    eps = 1e-12
    prod = _C.sum(input1 * input2, dim)
    mag1 = _C.sum(input1 * input1, dim) + eps
    mag2 = _C.sum(input2 * input2, dim) + eps
    cos = prod / _C.sqrt(mag1 * mag2)
    loss = _C.where(target == 1, 1 - cos, 0.0) + _C.where(target == -1, _pos(cos - margin), 0.0)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = _C.exp(input) - target * input if log_input else input - target * _C.log(input + eps)
    if full:
        # Stirling's approximation of log(target!), for target > 1.
        stirling = target * _C.log(target) - target + 0.5 * _C.log(2 * math.pi * target)
        loss = loss + _C.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if not hasattr(var, "shape"):
        var = _C.full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1):
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction)
    if var.numel() > 0 and bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    # var clamped at eps for the value, its gradient passed through as torch's
    # clamp under no_grad does.
    v = var.detach()
    var = var + (_C.clamp(v, min=eps) - v)
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = _C.sum(loss, class_dim) / input.size(class_dim)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    from ._activations import one_hot

    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape([1, -1])
    t = target.reshape([-1])
    c = x.size(1)
    xy = x.gather(1, t.unsqueeze(1))
    z = _pos(x - xy + margin)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    z = z * (1 - one_hot(t, c).to(z.dtype))  # the target's own class is left out
    loss = _C.sum(z, 1) / c
    if input.dim() < 2:
        loss = loss.reshape([])
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x = input if input.dim() == 2 else input.reshape([1, -1])
    t = target.reshape(list(x.shape))
    c = x.size(1)
    # The targets are the entries before the first -1.
    valid = _C.cumprod((t >= 0).to(_C.int64), 1)
    idx = _C.where(valid > 0, t, 0)
    # How often each class is listed (a repeated target counts each time, as
    # torch's loop over the listed targets does), and the set of targets.
    listed = _C.zeros(list(x.shape), dtype=x.dtype).scatter_add(1, idx, valid.to(x.dtype))
    not_target = (listed == 0).to(x.dtype)
    # [N, j (target), i (non-target)] hinge terms.
    hinge = _pos(1 - x.unsqueeze(2) + x.unsqueeze(1))
    loss = _C.sum(hinge * listed.unsqueeze(2) * not_target.unsqueeze(1), (1, 2)) / c
    if input.dim() < 2:
        loss = loss.reshape([])
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not anchor.dim() == positive.dim() == negative.dim():
        raise ValueError("The anchor, positive, and negative tensors are expected to have the same number of "
                         f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                         f"{negative.dim()}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = _C.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(_pos(margin + d_ap - d_an), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         "instead")
    dist = pairwise_distance if distance_function is None else distance_function
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = _C.minimum(d_an, dist(positive, negative))
    return _reduce(_pos(margin + d_ap - d_an), reduction)


__all__ = ["l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "soft_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss"]
