"""kiln.optim: torch.optim's Optimizer API with SGD, Adam and AdamW, whose steps run
one fused C++ pass per parameter (kiln::optim::*_step), and lr_scheduler."""

from . import lr_scheduler  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
