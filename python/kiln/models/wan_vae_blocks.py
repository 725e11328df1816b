"""The building blocks of the Wan 2.1 video VAE (diffusers' AutoencoderKLWan) written
with kiln.nn: the causal 3-d convolution, the channel RMS norm, the residual and
per-frame attention blocks, the spatial / temporal resamplers, Encoder3d and Decoder3d.
Attribute names follow diffusers' so that a checkpoint loads name for name.

Videos are [N, C, T, H, W]. The encoder and decoder run chunk by chunk along T
(a few frames at a time); a FrameCache carries, per causal convolution, the last
input frames its kernel still needs, so a chunked pass gives what one pass over the
whole video would while holding only a chunk's activations."""

import math

from .. import _C
from ..nn import Conv2d, Conv3d, Module, ModuleList, Parameter
from ..nn import functional as F

# The first resample of an up-sampling chain sees its first chunk without time_conv.
_PASSED = "passed"


class FrameCache:
    """Per-call state of a chunked pass: module -> the frames (or marker) it keeps."""

    def __init__(self):
        self._state = {}

    def get(self, module):
        return self._state.get(id(module))

    def set(self, module, value):
        self._state[id(module)] = value


def _last_frames(x, n):  # [N, C, T, H, W] -> an owned copy of the last min(n, T) frames
    n = min(n, x.shape[2])
    return x.narrow(2, x.shape[2] - n, n).clone()


class CausalConv3d(Conv3d):
    """Conv3d whose time axis is padded 2 * padding_t in front and not at the back, so an
    output frame sees only the present and past. With a FrameCache the past comes from
    the previous chunk's last input frames instead of zeros."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self._time_pad = 2 * self.padding[0]
        self.padding = (0, self.padding[1], self.padding[2])  # H, W padded by the conv itself

    def forward(self, x, cache=None):  # [N, Cin, T, H, W] -> [N, Cout, T', H', W']
        pad = self._time_pad
        if cache is not None and pad > 0:
            prev = cache.get(self)
            if prev is not None:
                x = _C.cat([prev, x], 2)
                pad -= prev.shape[2]
            cache.set(self, _last_frames(x, self._time_pad))
        if pad > 0:
            x = F.pad(x, (0, 0, 0, 0, pad, 0))
        return super().forward(x)


class RMSNorm(Module):
    """x / ||x||_2 over channels (dim 1) * sqrt(C) * gamma; gamma is [C, 1, 1, 1] for
    videos, [C, 1, 1] for frames (images=True)."""

    def __init__(self, dim, images=False):
        super().__init__()
        self.scale = math.sqrt(dim)
        self.gamma = Parameter(_C.ones(dim, 1, 1) if images else _C.ones(dim, 1, 1, 1))

    def forward(self, x):
        # Half-precision inputs are normalised in float32 (a sum of squares over C overflows or
        # rounds badly in them), as diffusers does.
        xf = x.float() if x.dtype in (_C.bfloat16, _C.float16) else x
        norm = (xf * xf).sum(1, keepdim=True).sqrt().clamp_min(1e-12)  # [N, 1, ...]
        return (xf / norm).to(x.dtype) * self.scale * self.gamma


class ResidualBlock(Module):
    """shortcut(x) + conv2(silu(norm2(conv1(silu(norm1(x)))))), causal 3x3x3 convolutions."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.norm1 = RMSNorm(in_dim)
        self.conv1 = CausalConv3d(in_dim, out_dim, 3, padding=1)
        self.norm2 = RMSNorm(out_dim)
        self.conv2 = CausalConv3d(out_dim, out_dim, 3, padding=1)
        self.conv_shortcut = CausalConv3d(in_dim, out_dim, 1) if in_dim != out_dim else None

    def forward(self, x, cache=None):  # [N, Cin, T, H, W] -> [N, Cout, T, H, W]
        h = self.conv_shortcut(x) if self.conv_shortcut is not None else x
        x = self.conv1(F.silu(self.norm1(x)), cache)
        x = self.conv2(F.silu(self.norm2(x)), cache)
        return x + h


def _frames(x):  # [N, C, T, H, W] -> [N * T, C, H, W]
    n, c, t, h, w = x.shape
    f = x.permute(0, 2, 1, 3, 4).reshape(n * t, c, h, w)
    if n * t == 1 and c > 1 and f.is_contiguous(memory_format=_C.channels_last):
        # The one frame of a channels-last video views with batch stride C (torch's view
        # gives the same), which suggest_memory_format reads as row-major, so the ops
        # after it (interpolate, the convolutions) would leave channels-last. The
        # stride of a size-1 batch is free: give it C*H*W.
        f = f.as_strided(f.shape, (c * h * w, 1, w * c, c))
    return f


def _video(x, n):  # [N * T, C, H, W] -> [N, C, T, H, W]
    nt, c, h, w = x.shape
    return x.reshape(n, nt // n, c, h, w).permute(0, 2, 1, 3, 4)


class AttentionBlock(Module):
    """Single-head self-attention over the H*W positions of each frame, RMS-normed input
    added back."""

    def __init__(self, dim):
        super().__init__()
        self.norm = RMSNorm(dim, images=True)
        self.to_qkv = Conv2d(dim, 3 * dim, 1)
        self.proj = Conv2d(dim, dim, 1)

    def forward(self, x, cache=None):  # [N, C, T, H, W] -> same
        n, c, _, h, w = x.shape
        f = _frames(x)  # [NT, C, H, W]
        qkv = self.to_qkv(self.norm(f))  # [NT, 3C, H, W]
        qkv = qkv.reshape(qkv.shape[0], 3 * c, h * w).transpose(1, 2).unsqueeze(1)  # [NT, 1, HW, 3C]
        q, k, v = qkv.chunk(3, -1)
        a = F.scaled_dot_product_attention(q, k, v)  # [NT, 1, HW, C]
        a = a.squeeze(1).transpose(1, 2).reshape(f.shape[0], c, h, w)
        return x + _video(self.proj(a), n)  # x first: the sum keeps its layout


class _Indexed(Module):
    """Holds one module under the name `index` (diffusers' resample nn.Sequential)."""

    def __init__(self, index, module):
        super().__init__()
        self._index = str(index)
        self.add_module(self._index, module)

    def forward(self, x):
        return self._modules[self._index](x)


def _interleave_frames(x):
    """x [N, 2, C, T, H, W] -> [N, C, 2T, H, W] with frame 2t + i = x[:, i, :, t]: one
    copy, into a channels-last result when x's frames are channels-last (so the
    convolutions after it need no layout change)."""
    n, _, c, t, h, w = x.shape
    src = x.permute(0, 2, 3, 1, 4, 5)  # [N, C, T, 2, H, W]
    if x.stride(2) != 1 or x.is_contiguous():
        return src.reshape(n, c, 2 * t, h, w)
    out = _C.empty((n, c, 2 * t, h, w), dtype=x.dtype, memory_format=_C.channels_last_3d)
    out.view(n, c, t, 2, h, w).copy_(src)
    return out


class Resample(Module):
    """Per-frame 2x spatial up- or down-sampling; the 3d modes also double (up) or halve
    (down) the frame count with a causal time_conv. mode: upsample2d, upsample3d,
    downsample2d, downsample3d."""

    def __init__(self, dim, mode, upsample_out_dim=None):
        super().__init__()
        self.mode = mode
        if mode in ("upsample2d", "upsample3d"):
            self.resample = _Indexed(1, Conv2d(dim, upsample_out_dim or dim // 2, 3, padding=1))
        elif mode in ("downsample2d", "downsample3d"):
            self.resample = _Indexed(1, Conv2d(dim, dim, 3, stride=2))
        else:
            raise ValueError(f"[AutoencoderKLWan] unknown resample mode '{mode}'")
        if mode == "upsample3d":
            self.time_conv = CausalConv3d(dim, 2 * dim, (3, 1, 1), padding=(1, 0, 0))
        elif mode == "downsample3d":
            self.time_conv = CausalConv3d(dim, dim, (3, 1, 1), stride=(2, 1, 1))

    def forward(self, x, cache=None):  # [N, C, T, H, W] -> [N, C', T', H', W']
        n = x.shape[0]
        if self.mode == "upsample3d" and cache is not None:
            if cache.get(self) is None:  # the first chunk keeps its frame count
                cache.set(self, _PASSED)
            else:
                _, c, t, h, w = x.shape
                x = self.time_conv(x, cache)  # [N, 2C, T, H, W]: even frames, then odd frames
                x = _interleave_frames(x.reshape(n, 2, c, t, h, w))  # [N, C, 2T, H, W]
        f = _frames(x)
        if self.mode.startswith("up"):
            f = self.resample(F.interpolate(f, scale_factor=2.0, mode="nearest"))
        else:
            f = self.resample(F.pad(f, (0, 1, 0, 1)))
        x = _video(f, n)
        if self.mode == "downsample3d" and cache is not None:
            prev = cache.get(self)
            cache.set(self, _last_frames(x, 1))
            if prev is not None:  # the first chunk keeps its frame count
                x = self.time_conv(_C.cat([prev, x], 2))
        return x


class MidBlock(Module):
    """residual, attention, residual at the lowest resolution."""

    def __init__(self, dim):
        super().__init__()
        self.attentions = ModuleList([AttentionBlock(dim)])
        self.resnets = ModuleList([ResidualBlock(dim, dim) for _ in range(2)])

    def forward(self, x, cache=None):
        x = self.resnets[0](x, cache)
        return self.resnets[1](self.attentions[0](x), cache)


class UpBlock(Module):
    def __init__(self, in_dim, out_dim, num_res_blocks, upsample_mode=None):
        super().__init__()
        self.resnets = ModuleList(
            [ResidualBlock(in_dim if i == 0 else out_dim, out_dim) for i in range(num_res_blocks + 1)])
        self.upsamplers = ModuleList([Resample(out_dim, upsample_mode)]) if upsample_mode else None

    def forward(self, x, cache=None, first_chunk=False):
        for r in self.resnets:
            x = r(x, cache)
        if self.upsamplers is not None:
            x = self.upsamplers[0](x, cache)
        return x


class Encoder3d(Module):
    """[N, in_channels, T, H, W] -> [N, z_dim, 1 + (T - 1) / 2**sum(temperal_downsample),
    H / 2**(levels-1), W / 2**(levels-1)] (z_dim here is twice the latent channels)."""

    def __init__(self, in_channels, dim, z_dim, dim_mult, num_res_blocks, attn_scales, temperal_downsample,
                 is_residual=False):
        super().__init__()
        from .wan_vae_residual import ResidualDownBlock

        dims = [dim * u for u in [1] + list(dim_mult)]
        self.conv_in = CausalConv3d(in_channels, dims[0], 3, padding=1)
        blocks, scale = [], 1.0
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            down = i != len(dim_mult) - 1
            if is_residual:
                blocks.append(ResidualDownBlock(in_dim, out_dim, num_res_blocks, down and temperal_downsample[i], down))
                continue
            for _ in range(num_res_blocks):
                blocks.append(ResidualBlock(in_dim, out_dim))
                if scale in attn_scales:
                    blocks.append(AttentionBlock(out_dim))
                in_dim = out_dim
            if down:
                blocks.append(Resample(out_dim, "downsample3d" if temperal_downsample[i] else "downsample2d"))
                scale /= 2.0
        self.down_blocks = ModuleList(blocks)
        self.mid_block = MidBlock(dims[-1])
        self.norm_out = RMSNorm(dims[-1])
        self.conv_out = CausalConv3d(dims[-1], z_dim, 3, padding=1)

    def forward(self, x, cache=None):
        x = self.conv_in(x, cache)
        for b in self.down_blocks:
            x = b(x, cache)
        x = self.mid_block(x, cache)
        return self.conv_out(F.silu(self.norm_out(x)), cache)


class Decoder3d(Module):
    """[N, z_dim, t, h, w] -> [N, out_channels, 1 + (t - 1) * 2**sum(temperal_upsample),
    h * 2**(levels-1), w * 2**(levels-1)] when fed chunk by chunk."""

    def __init__(self, dim, z_dim, dim_mult, num_res_blocks, temperal_upsample, out_channels, is_residual=False):
        super().__init__()
        from .wan_vae_residual import ResidualUpBlock

        dims = [dim * u for u in [dim_mult[-1]] + list(dim_mult)[::-1]]
        self.conv_in = CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.mid_block = MidBlock(dims[0])
        blocks = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            up = i != len(dim_mult) - 1
            if is_residual:
                blocks.append(ResidualUpBlock(in_dim, out_dim, num_res_blocks, up and temperal_upsample[i], up))
                continue
            if i > 0:
                in_dim //= 2  # the previous level's upsampler halved the channels
            mode = None
            if up:
                mode = "upsample3d" if temperal_upsample[i] else "upsample2d"
            blocks.append(UpBlock(in_dim, out_dim, num_res_blocks, mode))
        self.up_blocks = ModuleList(blocks)
        self.norm_out = RMSNorm(dims[-1])
        self.conv_out = CausalConv3d(dims[-1], out_channels, 3, padding=1)

    def forward(self, x, cache=None, first_chunk=False):
        x = self.conv_in(x, cache)
        x = self.mid_block(x, cache)
        for b in self.up_blocks:
            x = b(x, cache, first_chunk)
        return self.conv_out(F.silu(self.norm_out(x)), cache)


__all__ = ["AttentionBlock", "CausalConv3d", "Decoder3d", "Encoder3d", "FrameCache", "MidBlock", "RMSNorm",
           "Resample", "ResidualBlock", "UpBlock"]
