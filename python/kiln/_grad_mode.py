"""Grad-mode context managers (torch.no_grad, enable_grad, set_grad_enabled, inference_mode).

Each works as a ``with`` block and as a function decorator; the mode is per thread,
as in torch.
"""

import functools

from . import _C


class _Mode:
    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_Mode):
    """Disables gradient recording inside the block."""

    _args = ()

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class enable_grad(_Mode):
    """Enables gradient recording inside the block (inside a no_grad block, say)."""

    _args = ()

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class set_grad_enabled(_Mode):
    """Sets grad mode to ``mode``: at once when called, and restored at the end of a ``with`` block."""

    def __init__(self, mode):
        self._args = (bool(mode),)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(bool(mode))

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class inference_mode(_Mode):
    """Grad mode off for inference (torch.inference_mode); ``inference_mode(False)`` does nothing."""

    def __init__(self, mode=True):
        self._args = (bool(mode),)

    def __enter__(self):
        self._prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        if self._args[0]:
            _C._set_inference_mode(True)

    def __exit__(self, *exc):
        _C._set_inference_mode(self._prev[1])
        _C._set_grad_enabled(self._prev[0])
        return False
