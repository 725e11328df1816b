"""The building blocks of a diffusers-format AutoencoderKL written with kiln.nn:
ResnetBlock2D, Downsample2D, Upsample2D, the mid-block attention, the down / up /
mid blocks, Encoder and Decoder. Attribute names follow diffusers' so that a
checkpoint's state_dict keys load name for name. Tensors are NCHW."""

import math

from ..nn import Conv2d, GroupNorm, Linear, Module, ModuleList
from ..nn import functional as F

_ACTIVATIONS = ("silu", "swish")


def _silu(t):
    """silu of a freshly made tensor t, in place when no gradient flows through it."""
    return F.silu(t, inplace=not t.requires_grad)


def _check_act(act_fn):
    if act_fn not in _ACTIVATIONS:
        raise ValueError(f"[AutoencoderKL] act_fn '{act_fn}' is not supported (supported: silu)")


class ResnetBlock2D(Module):
    """x + conv2(silu(norm2(conv1(silu(norm1(x)))))), with a 1x1 conv_shortcut on x
    when the channel count changes."""

    def __init__(self, in_channels, out_channels, groups=32, eps=1e-6):
        super().__init__()
        self.norm1 = GroupNorm(groups, in_channels, eps=eps)
        self.conv1 = Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm2 = GroupNorm(groups, out_channels, eps=eps)
        self.conv2 = Conv2d(out_channels, out_channels, 3, padding=1)
        self.conv_shortcut = Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, x):  # [N, Cin, H, W] -> [N, Cout, H, W]
        # One statement per step so each intermediate is freed as soon as the
        # next exists: at most x plus max(Cin + Cout, 2 Cout) per position live.
        h = _silu(self.norm1(x))
        h = self.conv1(h)
        h = _silu(self.norm2(h))
        h = self.conv2(h)
        if self.conv_shortcut is not None:
            x = self.conv_shortcut(x)
        return h.add_(x) if not (h.requires_grad or x.requires_grad) else x + h


class Downsample2D(Module):
    """Pads right and bottom by one zero, then a 3x3 stride-2 conv: H, W -> H // 2, W // 2
    for even sizes ((H - 1) // 2 + 1 in general), as diffusers' VAE encoder does."""

    def __init__(self, channels):
        super().__init__()
        self.conv = Conv2d(channels, channels, 3, stride=2, padding=0)

    def forward(self, x):  # [N, C, H, W] -> [N, C, ceil(H/2), ceil(W/2)]
        return self.conv(F.pad(x, (0, 1, 0, 1)))


class Upsample2D(Module):
    """Nearest x2 then a 3x3 conv."""

    def __init__(self, channels):
        super().__init__()
        self.conv = Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):  # [N, C, H, W] -> [N, C, 2H, 2W]
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class _Sequential0(Module):
    """Holds one module under the name "0" (diffusers' to_out is [Linear, Dropout])."""

    def __init__(self, module):
        super().__init__()
        self.add_module("0", module)

    def forward(self, x):
        return self._modules["0"](x)


class Attention(Module):
    """Single-head self-attention over the H*W positions, with a group norm in front
    and the input added back (diffusers' VAE mid-block attention)."""

    def __init__(self, channels, groups=32, eps=1e-6):
        super().__init__()
        self.group_norm = GroupNorm(groups, channels, eps=eps)
        self.to_q = Linear(channels, channels)
        self.to_k = Linear(channels, channels)
        self.to_v = Linear(channels, channels)
        self.to_out = _Sequential0(Linear(channels, channels))

    def forward(self, x):  # [N, C, H, W] -> [N, C, H, W]
        n, c, h, w = x.shape
        t = self.group_norm(x).reshape(n, c, h * w).transpose(1, 2)  # [N, HW, C]
        q = self.to_q(t).unsqueeze(1)  # [N, 1, HW, C]
        k = self.to_k(t).unsqueeze(1)
        v = self.to_v(t).unsqueeze(1)
        a = F.scaled_dot_product_attention(q, k, v, scale=1.0 / math.sqrt(c)).squeeze(1)  # [N, HW, C]
        a = self.to_out(a).transpose(1, 2).reshape(n, c, h, w)
        return a + x


class UNetMidBlock2D(Module):
    """resnet, then (attention, resnet) once: the VAE's bottleneck."""

    def __init__(self, channels, groups=32, eps=1e-6, add_attention=True):
        super().__init__()
        self.attentions = ModuleList([Attention(channels, groups, eps)] if add_attention else [])
        self.resnets = ModuleList([ResnetBlock2D(channels, channels, groups, eps) for _ in range(2)])

    def forward(self, x):
        x = self.resnets[0](x)
        if len(self.attentions):
            x = self.attentions[0](x)
        return self.resnets[1](x)


class DownEncoderBlock2D(Module):
    def __init__(self, in_channels, out_channels, num_layers, groups, add_downsample):
        super().__init__()
        self.resnets = ModuleList(
            [ResnetBlock2D(in_channels if i == 0 else out_channels, out_channels, groups) for i in range(num_layers)])
        self.downsamplers = ModuleList([Downsample2D(out_channels)]) if add_downsample else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        if self.downsamplers is not None:
            x = self.downsamplers[0](x)
        return x


class UpDecoderBlock2D(Module):
    def __init__(self, in_channels, out_channels, num_layers, groups, add_upsample):
        super().__init__()
        self.resnets = ModuleList(
            [ResnetBlock2D(in_channels if i == 0 else out_channels, out_channels, groups) for i in range(num_layers)])
        self.upsamplers = ModuleList([Upsample2D(out_channels)]) if add_upsample else None

    def forward(self, x):
        for r in self.resnets:
            x = r(x)
        if self.upsamplers is not None:
            x = self.upsamplers[0](x)
        return x


def _check_blocks(types, expected):
    for t in types:
        if t != expected:
            raise ValueError(f"[AutoencoderKL] block type '{t}' is not supported (supported: {expected})")


class Encoder(Module):
    """[N, in_channels, H, W] -> [N, 2 * latent_channels (double_z) , H / 2**(levels-1), ...]."""

    def __init__(self, in_channels, out_channels, down_block_types, block_out_channels, layers_per_block,
                 norm_num_groups, act_fn="silu", double_z=True, mid_block_add_attention=True):
        super().__init__()
        _check_act(act_fn)
        _check_blocks(down_block_types, "DownEncoderBlock2D")
        if len(down_block_types) != len(block_out_channels):
            raise ValueError(f"[AutoencoderKL] {len(down_block_types)} down_block_types for "
                             f"{len(block_out_channels)} block_out_channels")
        ch = list(block_out_channels)
        self.conv_in = Conv2d(in_channels, ch[0], 3, padding=1)
        self.down_blocks = ModuleList([
            DownEncoderBlock2D(ch[max(i - 1, 0)], ch[i], layers_per_block, norm_num_groups, i < len(ch) - 1)
            for i in range(len(ch))])
        self.mid_block = UNetMidBlock2D(ch[-1], norm_num_groups, add_attention=mid_block_add_attention)
        self.conv_norm_out = GroupNorm(norm_num_groups, ch[-1], eps=1e-6)
        self.conv_out = Conv2d(ch[-1], 2 * out_channels if double_z else out_channels, 3, padding=1)

    def forward(self, x):
        x = self.conv_in(x)
        for b in self.down_blocks:
            x = b(x)
        x = self.mid_block(x)
        return self.conv_out(_silu(self.conv_norm_out(x)))


class Decoder(Module):
    """[N, latent_channels, h, w] -> [N, out_channels, h * 2**(levels-1), ...]."""

    def __init__(self, in_channels, out_channels, up_block_types, block_out_channels, layers_per_block,
                 norm_num_groups, act_fn="silu", mid_block_add_attention=True):
        super().__init__()
        _check_act(act_fn)
        _check_blocks(up_block_types, "UpDecoderBlock2D")
        if len(up_block_types) != len(block_out_channels):
            raise ValueError(f"[AutoencoderKL] {len(up_block_types)} up_block_types for "
                             f"{len(block_out_channels)} block_out_channels")
        rev = list(reversed(block_out_channels))
        self.conv_in = Conv2d(in_channels, rev[0], 3, padding=1)
        self.mid_block = UNetMidBlock2D(rev[0], norm_num_groups, add_attention=mid_block_add_attention)
        self.up_blocks = ModuleList([
            UpDecoderBlock2D(rev[max(i - 1, 0)], rev[i], layers_per_block + 1, norm_num_groups, i < len(rev) - 1)
            for i in range(len(rev))])
        self.conv_norm_out = GroupNorm(norm_num_groups, rev[-1], eps=1e-6)
        self.conv_out = Conv2d(rev[-1], out_channels, 3, padding=1)

    def forward(self, z):
        x = self.conv_in(z)
        x = self.mid_block(x)
        for b in self.up_blocks:
            x = b(x)
        return self.conv_out(_silu(self.conv_norm_out(x)))


__all__ = ["Attention", "Decoder", "DownEncoderBlock2D", "Downsample2D", "Encoder", "ResnetBlock2D",
           "UNetMidBlock2D", "UpDecoderBlock2D", "Upsample2D"]
