"""kiln.nn.functional: the functions bound as ``_C.nn_functional_<name>`` plus the
activations and dropout written with kiln's public ops (cross_entropy and
nll_loss are the C++ ones: class indices or probabilities, weight, ignore_index,
label_smoothing) (so they
record autograd history wherever those ops have derivatives)."""

from .. import _C

_PREFIX = "nn_functional_"
for _attr in dir(_C):
    if _attr.startswith(_PREFIX) and len(_attr) > len(_PREFIX):
        globals()[_attr[len(_PREFIX):]] = getattr(_C, _attr)
del _attr


def relu(input, inplace=False):
    return input.relu_() if inplace else _C.relu(input)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return input.silu_() if inplace else _C.silu(input)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def dropout(input, p=0.5, training=True, inplace=False, generator=None):
    """Zeroes each element with probability p and scales the rest by 1/(1-p)
    (torch.nn.functional.dropout); the identity when not training or p == 0."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"[dropout] probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        keep = _C.rand(*input.shape, generator=generator) >= p
        out = input * (keep.to(input.dtype) * (1.0 / (1.0 - p)))
    return input.copy_(out) if inplace else out
