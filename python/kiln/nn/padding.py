"""kiln.nn's padding and pixel-shuffle modules (torch.nn's names, constructor
arguments and reprs): ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and
CircularPad in 1, 2 and 3 dims, PixelShuffle and PixelUnshuffle."""

from . import functional as F
from .module import Module


__all__ = [
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "PixelShuffle",
    "PixelUnshuffle",
]


def _ntuple(padding, n):
    # An int pads every side alike; a sequence is taken as given (as torch).
    if isinstance(padding, int):
        return (padding,) * n
    return tuple(padding)


class _ConstantPadNd(Module):
    def __init__(self, padding, value, n):
        super().__init__()
        self.padding = _ntuple(padding, 2 * n)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value, 1)


class ConstantPad2d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value, 2)


class ConstantPad3d(_ConstantPadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value, 3)


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ModePadNd(Module):
    mode = None
    n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self.n)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    mode, n = "reflect", 1


class ReflectionPad2d(_ModePadNd):
    mode, n = "reflect", 2


class ReflectionPad3d(_ModePadNd):
    mode, n = "reflect", 3


class ReplicationPad1d(_ModePadNd):
    mode, n = "replicate", 1


class ReplicationPad2d(_ModePadNd):
    mode, n = "replicate", 2


class ReplicationPad3d(_ModePadNd):
    mode, n = "replicate", 3


class _CircularPadNd(_ModePadNd):
    mode = "circular"

    def forward(self, input):
        # torch's module check: an unbatched or batched input of n spatial dims.
        if input.dim() not in (self.n + 1, self.n + 2):
            raise ValueError(f"expected {self.n + 1}D or {self.n + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    n = 1


class CircularPad2d(_CircularPadNd):
    n = 2


class CircularPad3d(_CircularPadNd):
    n = 3


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
