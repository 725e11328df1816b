"""kiln.nn: torch.nn's Module system (Module, Parameter, layers, containers, init,
utils) and the functions bound as ``_C.nn_<name>`` / ``_C.nn_functional_<name>``
(the latter also as kiln.nn.functional.<name>)."""

from .. import _C

_deeper = "nn_functional_"
for _attr in dir(_C):
    if _attr.startswith("nn_") and len(_attr) > 3 and not _attr.startswith(_deeper):
        globals()[_attr[3:]] = getattr(_C, _attr)
del _attr, _deeper

from . import functional, init, lora, utils  # noqa: E402
from .container import ModuleDict, ModuleList, Sequential  # noqa: E402
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: E402
from .layers import (  # noqa: E402
    GELU,
    CrossEntropyLoss,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    LogSoftmax,
    MSELoss,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from .fold import Fold, Unfold  # noqa: E402
from .module import Module  # noqa: E402
from .padding import *  # noqa: E402,F401,F403
from .normalization import GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
from .parameter import Parameter  # noqa: E402
from .pooling import *  # noqa: E402,F401,F403
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402
