"""kiln.nn.functional: the functions bound as ``_C.nn_functional_<name>`` (dropout and
its channel / alpha forms, cross_entropy and nll_loss among them) plus the activations
and losses written with kiln's public ops (so they record autograd history wherever
those ops have derivatives): see _activations.py and _losses.py."""

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


from ._activations import *  # noqa: E402,F401,F403
from ._losses import *  # noqa: E402,F401,F403
from ._grids_bags import *  # noqa: E402,F401,F403
