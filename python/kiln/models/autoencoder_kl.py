"""kiln.models.AutoencoderKL: the image VAE of Stable Diffusion-style pipelines,
loaded from a diffusers-format directory (config.json +
diffusion_pytorch_model[.variant].safetensors, sharded or not) into kiln.nn
modules. encode() gives a DiagonalGaussianDistribution over latents, decode()
the image; both can run tile by tile (enable_tiling() or tiled=True)."""

import json
import os

from .. import _C
from .._grad_mode import no_grad
from ..nn import Conv2d, Module
from .vae_blocks import Decoder, Encoder
from .vae_tiling import tiled_apply

_WEIGHTS = "diffusion_pytorch_model"
# Attention names of checkpoints written before diffusers renamed them.
_OLD_ATTENTION_NAMES = {"query": "to_q", "key": "to_k", "value": "to_v", "proj_attn": "to_out.0"}


class DiagonalGaussianDistribution:
    """The encoder's posterior: parameters [N, 2C, h, w] split into mean and logvar
    (logvar clamped to [-30, 20]); as diffusers' class of the same name."""

    def __init__(self, parameters, deterministic=False):
        self.parameters = parameters
        self.mean, self.logvar = parameters.chunk(2, 1)  # [N, C, h, w] each
        self.logvar = self.logvar.clamp(-30.0, 20.0)
        self.deterministic = deterministic
        if deterministic:
            self.std = _C.zeros_like(self.mean)
            self.var = _C.zeros_like(self.mean)
        else:
            self.std = (self.logvar * 0.5).exp()
            self.var = self.logvar.exp()

    def sample(self, generator=None):
        """mean + std * eps with eps ~ N(0, 1) drawn from generator (kiln.Generator or None)."""
        eps = _C.randn(*self.mean.shape, generator=generator, dtype=self.mean.dtype)
        return self.mean + self.std * eps

    def mode(self):
        return self.mean

    def kl(self, other=None):
        """KL divergence to N(0, 1) (or to `other`), summed over C, h, w: [N]."""
        if self.deterministic:
            return _C.zeros(self.mean.shape[0], dtype=self.mean.dtype)
        if other is None:
            t = self.mean * self.mean + self.var - 1.0 - self.logvar
        else:
            d = self.mean - other.mean
            t = d * d / other.var + self.var / other.var - 1.0 - self.logvar + other.logvar
        return t.sum([1, 2, 3]) * 0.5


def _config_int(v):
    return int(v[0]) if isinstance(v, (list, tuple)) else int(v)


class AutoencoderKL(Module):
    """diffusers' AutoencoderKL with the same constructor arguments (config.json keys)
    and state_dict keys. Inputs are NCHW images in [-1, 1]; latents are
    [N, latent_channels, H / 2**(levels-1), W / 2**(levels-1)]."""

    def __init__(self, in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
                 up_block_types=("UpDecoderBlock2D",), block_out_channels=(64,), layers_per_block=1,
                 act_fn="silu", latent_channels=4, norm_num_groups=32, sample_size=32, scaling_factor=0.18215,
                 shift_factor=None, latents_mean=None, latents_std=None, force_upcast=True, use_quant_conv=True,
                 use_post_quant_conv=True, mid_block_add_attention=True, **unused):
        super().__init__()
        self.config = dict(
            in_channels=in_channels, out_channels=out_channels, down_block_types=list(down_block_types),
            up_block_types=list(up_block_types), block_out_channels=list(block_out_channels),
            layers_per_block=layers_per_block, act_fn=act_fn, latent_channels=latent_channels,
            norm_num_groups=norm_num_groups, sample_size=sample_size, scaling_factor=scaling_factor,
            shift_factor=shift_factor, latents_mean=latents_mean, latents_std=latents_std,
            force_upcast=force_upcast, use_quant_conv=use_quant_conv, use_post_quant_conv=use_post_quant_conv,
            mid_block_add_attention=mid_block_add_attention)
        self.encoder = Encoder(in_channels, latent_channels, down_block_types, block_out_channels, layers_per_block,
                               norm_num_groups, act_fn, True, mid_block_add_attention)
        self.decoder = Decoder(latent_channels, out_channels, up_block_types, block_out_channels, layers_per_block,
                               norm_num_groups, act_fn, mid_block_add_attention)
        self.quant_conv = Conv2d(2 * latent_channels, 2 * latent_channels, 1) if use_quant_conv else None
        self.post_quant_conv = Conv2d(latent_channels, latent_channels, 1) if use_post_quant_conv else None
        # Pixels per latent position along H and W.
        self.spatial_scale = 2 ** (len(block_out_channels) - 1)
        self.use_tiling = False
        self.tile_sample_min_size = _config_int(sample_size)
        self.tile_overlap_factor = 0.25

    # ---- latent scaling (the diffusion model's latent space) ----
    @property
    def scaling_factor(self):
        return self.config["scaling_factor"]

    @property
    def shift_factor(self):
        return self.config["shift_factor"] or 0.0

    def scale_latents(self, z):
        """VAE latents -> the diffusion model's: (z - shift_factor) * scaling_factor."""
        return (z - self.shift_factor) * self.scaling_factor

    def unscale_latents(self, z):
        """The diffusion model's latents -> VAE latents: z / scaling_factor + shift_factor."""
        return z / self.scaling_factor + self.shift_factor

    # ---- tiling ----
    @property
    def tile_latent_min_size(self):
        return self.tile_sample_min_size // self.spatial_scale

    def enable_tiling(self, tile_size=None, overlap=None):
        """Encode / decode inputs larger than tile_size pixels (default: config sample_size)
        tile by tile; neighbouring tiles overlap by the fraction `overlap` (default 0.25)."""
        size = self.tile_sample_min_size if tile_size is None else self._check_tile(tile_size)
        frac = self.tile_overlap_factor if overlap is None else self._check_overlap(overlap)
        self.use_tiling, self.tile_sample_min_size, self.tile_overlap_factor = True, size, frac

    def disable_tiling(self):
        self.use_tiling = False

    def _check_tile(self, tile_size):
        if int(tile_size) < self.spatial_scale or int(tile_size) % self.spatial_scale:
            raise ValueError(f"[AutoencoderKL] tile_size {tile_size} must be a positive multiple of "
                             f"{self.spatial_scale} (pixels per latent position)")
        return int(tile_size)

    @staticmethod
    def _check_overlap(overlap):
        if not 0.0 <= float(overlap) < 1.0:
            raise ValueError(f"[AutoencoderKL] overlap {overlap} must be a fraction in [0, 1)")
        return float(overlap)

    def _tiling(self, tiled, tile_size, overlap):
        use = self.use_tiling if tiled is None else bool(tiled)
        size = self.tile_sample_min_size if tile_size is None else self._check_tile(tile_size)
        frac = self.tile_overlap_factor if overlap is None else self._check_overlap(overlap)
        return use, size, frac

    def _check_input(self, x, channels, what):
        if x.dim() != 4 or x.shape[1] != channels:
            raise ValueError(f"[AutoencoderKL.{what}] expected [N, {channels}, H, W], got {list(x.shape)}")

    # ---- encode / decode ----
    def _encode_tile(self, x):  # [N, Cin, H, W] -> [N, 2 * latent, H / s, W / s]
        h = self.encoder(x)
        return self.quant_conv(h) if self.quant_conv is not None else h

    def _decode_tile(self, z):  # [N, latent, h, w] -> [N, Cout, h * s, w * s]
        if self.post_quant_conv is not None:
            z = self.post_quant_conv(z)
        return self.decoder(z)

    def encode(self, x, tiled=None, tile_size=None, overlap=None, progress=None):
        """x [N, in_channels, H, W] (in [-1, 1]) -> DiagonalGaussianDistribution over
        [N, latent_channels, H / s, W / s]. Tiled when tiling is on (enable_tiling or
        tiled=True) and H or W exceeds the tile size (pixels); progress(done, total) per tile."""
        self._check_input(x, self.config["in_channels"], "encode")
        use, size, frac = self._tiling(tiled, tile_size, overlap)
        if use and (x.shape[2] > size or x.shape[3] > size):
            h = tiled_apply(x, self._encode_tile, size, size // self.spatial_scale, frac, progress,
                            "AutoencoderKL.encode")
        else:
            h = self._encode_tile(x)
        return DiagonalGaussianDistribution(h)

    def decode(self, z, tiled=None, tile_size=None, overlap=None, progress=None):
        """z [N, latent_channels, h, w] (VAE latents: unscale_latents() first for a
        diffusion model's) -> image [N, out_channels, h * s, w * s]. Tiled as encode,
        with tile_size in output pixels (tile_size / s latent positions)."""
        self._check_input(z, self.config["latent_channels"], "decode")
        use, size, frac = self._tiling(tiled, tile_size, overlap)
        lat = size // self.spatial_scale
        if use and (z.shape[2] > lat or z.shape[3] > lat):
            return tiled_apply(z, self._decode_tile, lat, size, frac, progress, "AutoencoderKL.decode")
        return self._decode_tile(z)

    def forward(self, sample, sample_posterior=False, generator=None):
        dist = self.encode(sample)
        return self.decode(dist.sample(generator) if sample_posterior else dist.mode())

    # ---- loading ----
    @classmethod
    def from_pretrained(cls, path, dtype=None, variant=None, subfolder=None):
        """Loads a diffusers-format AutoencoderKL directory (or a pipeline directory
        with a vae/ subfolder). dtype (default float32) is what the weights are cast
        to; variant picks diffusion_pytorch_model.<variant>.safetensors. The model is
        returned in eval mode with requires_grad off (requires_grad_() to train it)."""
        return load_diffusers_model(cls, "AutoencoderKL", path, dtype, variant, subfolder)


def load_diffusers_model(cls, class_name, path, dtype, variant, subfolder):
    """cls from a diffusers-format directory whose config.json names class_name (or
    a pipeline directory with a vae/ subfolder), its weights cast to dtype (default
    float32); in eval mode, requires_grad off."""
    path = os.fspath(path)
    if subfolder:
        path = os.path.join(path, subfolder)
    elif not os.path.isfile(os.path.join(path, "config.json")) and os.path.isfile(
            os.path.join(path, "vae", "config.json")):
        path = os.path.join(path, "vae")
    cfg_path = os.path.join(path, "config.json")
    if not os.path.isfile(cfg_path):
        raise FileNotFoundError(f"[{class_name}.from_pretrained] no config.json in {path}")
    with open(cfg_path, encoding="utf-8") as f:
        config = json.load(f)
    name = config.get("_class_name", class_name)
    if name != class_name:
        raise ValueError(f"[{class_name}.from_pretrained] {cfg_path} describes a {name}, not an {class_name}")
    model = cls(**{k: v for k, v in config.items() if not k.startswith("_")})
    state = _read_state_dict(path, variant)
    dtype = _C.float32 if dtype is None else dtype
    state = {k: (v.to(dtype) if v.dtype != dtype else v) for k, v in state.items()}
    with no_grad():
        model.load_state_dict(state, strict=True, assign=True)
    model.requires_grad_(False)
    return model.eval()


def _read_state_dict(path, variant):
    stem = _WEIGHTS + (f".{variant}" if variant else "")
    single = os.path.join(path, stem + ".safetensors")
    index = single + ".index.json"
    if os.path.isfile(single):
        files = [single]
    elif os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        files = [os.path.join(path, n) for n in dict.fromkeys(weight_map.values())]
    else:
        raise FileNotFoundError(f"[AutoencoderKL.from_pretrained] neither {stem}.safetensors nor its .index.json "
                                f"in {path} (only safetensors checkpoints are read)")
    state = {}
    for fn in files:
        state.update(_C.io_load_file(fn))
    return _rename_old_attention(state)


def _rename_old_attention(state):
    out = {}
    for k, v in state.items():
        parts = k.split(".")
        if len(parts) >= 2 and parts[-3:-2] == ["0"] and parts[-2] in _OLD_ATTENTION_NAMES and "attentions" in parts:
            k = ".".join(parts[:-2] + [_OLD_ATTENTION_NAMES[parts[-2]], parts[-1]])
            if v.dim() == 4:  # a 1x1 conv's [C, C, 1, 1] weight as the linear's [C, C]
                v = v.reshape(v.shape[0], v.shape[1])
        out[k] = v
    return out


__all__ = ["AutoencoderKL", "DiagonalGaussianDistribution"]
