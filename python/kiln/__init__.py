"""kiln: tensors, FP8 and LLM kernels for the CPU, with a PyTorch-shaped API.

Everything public lives in the compiled extension ``kiln._C`` and is re-exported
here, so ``kiln.zeros``, ``kiln.Tensor``, ``kiln.float8_e4m3fn`` ... work as their
``torch`` namesakes do.

Namespaces (convention for the binding files in python/src/*.cc):
  a function bound in ``_C`` as ``<ns>_<name>`` also appears as ``kiln.<ns>.<name>``
  for each namespace in ``_NAMESPACES`` -- e.g. ``_C.special_erfinv`` is
  ``kiln.special.erfinv``. The prefixed name stays available on ``kiln._C`` only;
  ``kiln.<ns>`` is a real module in ``sys.modules`` (``import kiln.special`` and
  ``from kiln.special import erfinv`` work). Add a namespace by adding its name here.
  Dotted namespaces nest. ``kiln.nn`` (with ``kiln.nn.functional``) and ``kiln.optim``
  are Python packages; kiln.nn re-exports ``_C.nn_<name>`` and kiln.nn.functional
  ``_C.nn_functional_<name>`` by the same rule.
"""

import sys as _sys
import types as _types

from . import _blas_env  # noqa: F401  (must run before _C loads OpenBLAS)
from . import _C
from ._C import *  # noqa: F401,F403

__version__ = _C.__version__

_NAMESPACES = ("special", "linalg", "fft", "io", "llm", "autograd")


def _make_namespace(ns):
    flat = ns.replace(".", "_")
    mod = _types.ModuleType(f"{__name__}.{ns}", f"kiln.{ns}: functions bound as _C.{flat}_<name>.")
    prefix = flat + "_"
    # Names that belong to a deeper namespace (nn_functional_* under nn) stay out.
    deeper = tuple(d.replace(".", "_") + "_" for d in _NAMESPACES if d.startswith(ns + "."))
    names = []
    for attr in dir(_C):
        if attr.startswith(prefix) and len(attr) > len(prefix) and not attr.startswith(deeper):
            short = attr[len(prefix):]
            setattr(mod, short, getattr(_C, attr))
            names.append(short)
    mod.__all__ = sorted(names)
    _sys.modules[mod.__name__] = mod
    return mod


for _ns in _NAMESPACES:
    # A package attribute that _C already defines (e.g. a future _C.linalg submodule) wins.
    if "." not in _ns and hasattr(_C, _ns):
        continue
    _mod = _make_namespace(_ns)
    _parent, _, _leaf = _ns.rpartition(".")
    setattr(_sys.modules[f"{__name__}.{_parent}"] if _parent else _sys.modules[__name__], _leaf, _mod)
del _ns, _mod, _parent, _leaf

# Public names (the dtype objects kiln.float, kiln.int, kiln.bool shadow the builtins
# only inside this namespace, as in torch).
__all__ = [n for n in dir(_C) if not n.startswith("_")] + [n for n in _NAMESPACES if "." not in n]
__all__ += ["nn", "optim", "save", "load"]

# Grad mode: kiln.no_grad() etc., also as kiln.autograd.no_grad.
from ._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: E402

for _name in ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode"):
    setattr(autograd, _name, globals()[_name])  # noqa: F821  (kiln.autograd is made above)
    __all__.append(_name)
del _name

# torch's private spellings of the FP8 / grouped matmuls.
_scaled_mm = _C._scaled_mm
_grouped_mm = _C._grouped_mm

# The Python packages (they read _C's names and the grad-mode helpers above).
from . import nn, optim  # noqa: E402,F401
from . import models  # noqa: E402,F401  (image VAEs written with kiln.nn)
from .serialization import load, save  # noqa: E402,F401

# kiln.special functions written in Python (polynomials, ndtr, erfcx, ...).
from . import _special  # noqa: E402

for _name in _special.FUNCTIONS:
    if not hasattr(special, _name):  # noqa: F821  (kiln.special is made above)
        setattr(special, _name, getattr(_special, _name))  # noqa: F821
        special.__all__.append(_name)  # noqa: F821
del _name

# torch.<name> functions written in Python (nn.functional and linalg under torch's
# names and argument orders, composites), and their Tensor methods; a name _C defines
# stays _C's.
from . import _torch_functions  # noqa: E402

for _name in _torch_functions.__all__:
    if not hasattr(_C, _name):
        globals()[_name] = getattr(_torch_functions, _name)
        __all__.append(_name)
for _name, _fn in _torch_functions.LINALG.items():
    if not hasattr(linalg, _name):  # noqa: F821  (kiln.linalg is made above)
        setattr(linalg, _name, _fn)  # noqa: F821
        linalg.__all__.append(_name)  # noqa: F821
del _name, _fn

# Order statistics and searches over kiln's sort: unique, searchsorted, median, mode, ...
from . import _sorting  # noqa: E402

for _name in _sorting.FUNCTIONS:
    if not hasattr(_C, _name):
        globals()[_name] = getattr(_sorting, _name)
        __all__.append(_name)
del _name

from . import _scatter_reduce  # noqa: E402

for _name in _scatter_reduce.FUNCTIONS:
    if not hasattr(_C, _name):
        globals()[_name] = getattr(_scatter_reduce, _name)
        __all__.append(_name)
del _name

from ._einsum import einsum  # noqa: E402

__all__.append("einsum")

from . import _tensor_pickle  # noqa: E402,F401  (Tensor.__reduce_ex__, __deepcopy__)

# Random sampling on kiln's generator: Tensor.normal_ ... and bernoulli, normal, ...
from . import _random_methods  # noqa: E402

for _name in _random_methods.FUNCTIONS:
    if not hasattr(_C, _name):
        globals()[_name] = getattr(_random_methods, _name)
        __all__.append(_name)
del _name

# A trainable (kiln.nn.Module) form of the default model family, for fine-tuning.
from .llm_train import load_trainable as _load_trainable  # noqa: E402

llm.load_trainable = _load_trainable  # noqa: F821  (kiln.llm is made above)
llm.__all__.append("load_trainable")  # noqa: F821


def serve(model=None, host="127.0.0.1", port=8080, *, block=True, dtype="fp8", max_context=0, **options):
    """Serves a model over HTTP with OpenAI's API, as ``kiln serve`` does.

    model: a LanguageModel, or a path (None: the default model) loaded with
    ``dtype`` and ``max_context``. options: api_key, name, max_batch,
    step_tokens, max_queue, idle_sequences, max_tokens, max_body_bytes,
    timeout_seconds (kiln serve's flags). block=True serves in this thread
    until Ctrl-C; block=False serves in a background thread and returns the
    kiln.llm.Server at once (``.url``, ``.port``, ``.stop()``; a context manager).
    """
    import os as _os

    if model is None or isinstance(model, (str, _os.PathLike)):
        model = llm.load(model, dtype=dtype, max_context=max_context)  # noqa: F821
    server = llm.Server(model, host=host, port=port, **options)  # noqa: F821
    if block:
        try:
            server.run()
        except KeyboardInterrupt:
            pass
        return server
    server.start()
    return server


__all__.append("serve")

# torch.range (end included), bound last: nothing in this module calls the builtin after it.
range = _torch_functions._range_inclusive  # noqa: A001
__all__.append("range")


def __dir__():
    """Public names only (torch's namespaces list no private helpers either)."""
    return sorted(set(__all__) | {"__version__"})
