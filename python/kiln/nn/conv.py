"""Convolution layers with torch.nn's names, constructor arguments, parameter
names and default initialisation: Conv1d/2d/3d and ConvTranspose1d/2d/3d."""

import math

from .. import _C
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(v, n, name):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError(f"[Conv{n}d] {name} must be an int or a tuple of {n} ints, got {v}")
    return v


class _ConvNd(Module):
    _transposed = False

    def __init__(self, nd, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                 padding_mode, output_padding=0, device=None, dtype=None):
        super().__init__()
        name = f"Conv{'Transpose' if self._transposed else ''}{nd}d"
        if groups <= 0:
            raise ValueError(f"[{name}] groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError(f"[{name}] in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError(f"[{name}] out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"[{name}] padding_mode must be one of {list(_PADDING_MODES)}, but got padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size")
        self.stride = _tuple(stride, nd, "stride")
        self.dilation = _tuple(dilation, nd, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"[{name}] Invalid padding string '{padding}', should be one of ('valid', 'same')")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"[{name}] padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _tuple(padding, nd, "padding")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'[{name}] Only "zeros" padding mode is supported for {type(self).__name__}')
        self.output_padding = _tuple(output_padding, nd, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        # (left, right) per spatial dim for the non-zero padding modes.
        if self.padding == "valid":
            self._pads = [(0, 0)] * nd
        elif self.padding == "same":
            self._pads = []
            for d, k in zip(self.dilation, self.kernel_size):
                total = d * (k - 1)
                self._pads.append((total // 2, total - total // 2))
        else:
            self._pads = [(p, p) for p in self.padding]
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(_C.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_C.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # torch's default: kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
        # and the bias from the same bound.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        nd = len(self.kernel_size)
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _nd = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(self._nd, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        conv = getattr(F, f"conv{self._nd}d")
        if self.padding_mode != "zeros":
            # F.pad takes (left, right) pairs from the last dim backwards.
            pads = tuple(v for pair in reversed(self._pads) for v in pair)
            x = F.pad(input, pads, mode=self.padding_mode)
            return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    _nd = 1


class Conv2d(_Conv):
    _nd = 2


class Conv3d(_Conv):
    _nd = 3


class _ConvTranspose(_ConvNd):
    _nd = 0
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"[ConvTranspose{self._nd}d] padding must be an int or a tuple of ints")
        super().__init__(self._nd, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        output_padding = self.output_padding
        if output_size is not None:
            output_padding = self._output_padding(input, output_size)
        conv = getattr(F, f"conv_transpose{self._nd}d")
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)

    def _output_padding(self, input, output_size):
        """The output_padding that gives output_size (torch's ConvTranspose forward(output_size=))."""
        nd = self._nd
        output_size = list(output_size)[-nd:]
        if len(output_size) != nd:
            raise ValueError(f"[ConvTranspose{nd}d] output_size must have {nd} or {nd + 2} elements")
        res = []
        for i in range(nd):
            s = input.shape[input.dim() - nd + i]
            least = (s - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1
            extra = output_size[i] - least
            if not 0 <= extra < max(self.stride[i], self.dilation[i]):
                raise ValueError(
                    f"[ConvTranspose{nd}d] requested an output size of {output_size}, but valid sizes range from "
                    f"{least} to {least + max(self.stride[i], self.dilation[i]) - 1} in dim {i}"
                )
            res.append(extra)
        return tuple(res)


class ConvTranspose1d(_ConvTranspose):
    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    _nd = 3
