"""The residual layout of the Wan 2.2 TI2V-5B video VAE (diffusers' AutoencoderKLWan with
is_residual=True and patch_size=2): down / up blocks whose shortcut is a parameter-free
space/time-to-channel average (AvgDown3D) or channel-to-space/time copy (DupUp3D), and
the 2x2 pixel patching around the encoder and decoder. Videos are [N, C, T, H, W]."""

from ..nn import Module, ModuleList
from ..nn import functional as F
from .wan_vae_blocks import Resample, ResidualBlock


def patchify(x, p):  # [N, C, T, H, W] -> [N, C * p * p, T, H / p, W / p], channel c * p * p + dw * p + dh
    if p == 1:
        return x
    n, c, t, h, w = x.shape
    if h % p or w % p:
        raise ValueError(f"[AutoencoderKLWan] height {h} and width {w} must be multiples of patch_size {p}")
    x = x.reshape(n, c, t, h // p, p, w // p, p).permute(0, 1, 6, 4, 2, 3, 5)  # [N, C, pw, ph, T, h, w]
    return x.reshape(n, c * p * p, t, h // p, w // p)


def unpatchify(x, p):  # the inverse of patchify
    if p == 1:
        return x
    n, cp, t, h, w = x.shape
    x = x.reshape(n, cp // (p * p), p, p, t, h, w).permute(0, 1, 4, 5, 3, 6, 2)  # [N, C, T, h, ph, w, pw]
    return x.reshape(n, cp // (p * p), t, h * p, w * p)


def avg_down(x, out_channels, ft, fs):
    """[N, C, T, H, W] -> [N, out, ceil(T / ft), H / fs, W / fs]: each (ft, fs, fs) cell's
    values become channels (T padded with zero frames in front to a multiple of ft), then
    groups of C * ft * fs * fs / out channels are averaged."""
    pad_t = (ft - x.shape[2] % ft) % ft
    if pad_t:
        x = F.pad(x, (0, 0, 0, 0, pad_t, 0))
    n, c, t, h, w = x.shape
    x = x.reshape(n, c, t // ft, ft, h // fs, fs, w // fs, fs).permute(0, 1, 3, 5, 7, 2, 4, 6)
    x = x.reshape(n, out_channels, c * ft * fs * fs // out_channels, t // ft, h // fs, w // fs)
    return x.mean(2)


def dup_up(x, out_channels, ft, fs, first_chunk):
    """[N, C, T, H, W] -> [N, out, T * ft, H * fs, W * fs]: channels repeated, then spread
    over (ft, fs, fs) cells; the first chunk keeps only its last ft-cell frame (a causal
    video's first frame is not up-sampled in time)."""
    n, c, t, h, w = x.shape
    x = x.repeat_interleave(out_channels * ft * fs * fs // c, dim=1)
    x = x.reshape(n, out_channels, ft, fs, fs, t, h, w).permute(0, 1, 5, 2, 6, 3, 7, 4)
    x = x.reshape(n, out_channels, t * ft, h * fs, w * fs)
    return x.narrow(2, ft - 1, x.shape[2] - ft + 1) if first_chunk else x


class ResidualDownBlock(Module):
    """resnets, then an optional down-sampler, plus avg_down of the block's input."""

    def __init__(self, in_dim, out_dim, num_res_blocks, temporal=False, down=False):
        super().__init__()
        if in_dim * (2 if temporal else 1) * (4 if down else 1) % out_dim:
            raise ValueError(f"[AutoencoderKLWan] {in_dim} channels cannot be averaged into {out_dim}")
        self._ft, self._fs, self._out = 2 if temporal else 1, 2 if down else 1, out_dim
        self.resnets = ModuleList([ResidualBlock(in_dim if i == 0 else out_dim, out_dim)
                                   for i in range(num_res_blocks)])
        self.downsampler = Resample(out_dim, "downsample3d" if temporal else "downsample2d") if down else None

    def forward(self, x, cache=None):
        short = avg_down(x, self._out, self._ft, self._fs)
        for r in self.resnets:
            x = r(x, cache)
        if self.downsampler is not None:
            x = self.downsampler(x, cache)
        return x + short


class ResidualUpBlock(Module):
    """resnets, then an optional up-sampler, plus dup_up of the block's input."""

    def __init__(self, in_dim, out_dim, num_res_blocks, temporal=False, up=False):
        super().__init__()
        if up and out_dim * (8 if temporal else 4) % in_dim:
            raise ValueError(f"[AutoencoderKLWan] {in_dim} channels cannot be spread into {out_dim}")
        self._ft, self._out, self._up = 2 if temporal else 1, out_dim, up
        self.resnets = ModuleList([ResidualBlock(in_dim if i == 0 else out_dim, out_dim)
                                   for i in range(num_res_blocks + 1)])
        self.upsampler = Resample(out_dim, "upsample3d" if temporal else "upsample2d", out_dim) if up else None

    def forward(self, x, cache=None, first_chunk=False):
        short = dup_up(x, self._out, self._ft, 2, first_chunk) if self._up else None
        for r in self.resnets:
            x = r(x, cache)
        if self.upsampler is not None:
            x = self.upsampler(x, cache)
        return x + short if short is not None else x


__all__ = ["ResidualDownBlock", "ResidualUpBlock", "avg_down", "dup_up", "patchify", "unpatchify"]
