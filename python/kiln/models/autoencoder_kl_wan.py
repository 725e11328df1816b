"""kiln.models.AutoencoderKLWan: the Wan 2.1 video VAE (also the VAE of Wan 2.2's 14B
models) and Wan 2.2 TI2V-5B's residual, 2x2-patched one, loaded from a diffusers-format
directory into kiln.nn modules. encode() gives a DiagonalGaussianDistribution over
video latents, decode() the video.

Both run causally chunk by chunk along time, as diffusers does: encode takes the
first frame alone and then 4 frames at a time, decode one latent frame at a time,
with a FrameCache carrying each causal convolution's last frames between chunks,
so activations are held for one chunk only, channels-last throughout. With tiling on (enable_tiling() or
tiled=True) they also run tile by tile in space, each tile through all its frames
with its own cache, blended as diffusers' tiled_encode / tiled_decode blend."""


from .. import _C
from ..nn import Module
from .autoencoder_kl import AutoencoderKL, DiagonalGaussianDistribution, load_diffusers_model
from .vae_tiling import tiled_grid
from .wan_vae_blocks import CausalConv3d, Decoder3d, Encoder3d, FrameCache
from .wan_vae_residual import patchify, unpatchify

_ENCODE_CHUNK = 4  # frames per encoder chunk after the first frame
_TILE, _TILE_STRIDE = 256, 192  # diffusers' default tile and stride, in output pixels


def _channels_last(x):
    """x [N, C, T, H, W] laid out channels-last: the causal convolutions run on it with no
    layout change, and every op between them (RMS norm, SiLU, frame cache, resampling)
    keeps it, so a chunk holds no row-major copies of its activations."""
    return x.contiguous(memory_format=_C.channels_last_3d)


class AutoencoderKLWan(Module):
    """diffusers' AutoencoderKLWan with the same constructor arguments (config.json keys)
    and state_dict keys. Videos are [N, C, T, H, W] in [-1, 1]; latents are
    [N, z_dim, 1 + (T - 1) / temporal_scale, H / spatial_scale, W / spatial_scale] with
    temporal_scale = 2**sum(temperal_downsample), spatial_scale = patch_size * 2**(levels-1)."""

    def __init__(self, base_dim=96, decoder_base_dim=None, z_dim=16, dim_mult=(1, 2, 4, 4), num_res_blocks=2,
                 attn_scales=(), temperal_downsample=(False, True, True), dropout=0.0, latents_mean=None,
                 latents_std=None, is_residual=False, in_channels=3, out_channels=3, patch_size=None,
                 scale_factor_temporal=4, scale_factor_spatial=8, **unused):
        super().__init__()
        p = int(patch_size or 1)
        if in_channels % (p * p) or out_channels % (p * p):
            raise ValueError(f"[AutoencoderKLWan] in_channels {in_channels} / out_channels {out_channels} must be "
                             f"multiples of patch_size**2 = {p * p}")
        if len(temperal_downsample) != len(dim_mult) - 1:
            raise ValueError(f"[AutoencoderKLWan] temperal_downsample has {len(temperal_downsample)} entries "
                             f"for {len(dim_mult)} levels (expected {len(dim_mult) - 1})")
        self.config = dict(
            base_dim=base_dim, decoder_base_dim=decoder_base_dim, z_dim=z_dim, dim_mult=list(dim_mult),
            num_res_blocks=num_res_blocks, attn_scales=list(attn_scales),
            temperal_downsample=list(temperal_downsample), dropout=dropout, latents_mean=latents_mean,
            latents_std=latents_std, is_residual=is_residual, in_channels=in_channels, out_channels=out_channels,
            patch_size=patch_size, scale_factor_temporal=scale_factor_temporal,
            scale_factor_spatial=scale_factor_spatial)
        self.encoder = Encoder3d(in_channels, base_dim, 2 * z_dim, dim_mult, num_res_blocks, attn_scales,
                                 temperal_downsample, is_residual)
        self.quant_conv = CausalConv3d(2 * z_dim, 2 * z_dim, 1)
        self.post_quant_conv = CausalConv3d(z_dim, z_dim, 1)
        self.decoder = Decoder3d(decoder_base_dim or base_dim, z_dim, dim_mult, num_res_blocks,
                                 list(temperal_downsample)[::-1], out_channels, is_residual)
        self.patch_size = p
        # Frames per latent frame (after the first) and pixels per latent position.
        self.temporal_scale = 2 ** sum(bool(t) for t in temperal_downsample)
        self.spatial_scale = p * 2 ** (len(dim_mult) - 1)
        # Tiling works in diffusers' units: pixels, converted to latent positions by the
        # config's scale_factor_spatial (which equals spatial_scale in Wan's own configs).
        self.spatial_compression_ratio = int(scale_factor_spatial)
        self.use_tiling = False
        self.tile_sample_min_height = self.tile_sample_min_width = _TILE
        self.tile_sample_stride_height = self.tile_sample_stride_width = _TILE_STRIDE

    # ---- latent normalisation (the diffusion model's latent space) ----
    def _mean_std(self, z):  # [1, z_dim, 1, 1, 1] each, in z's dtype
        mean, std = self.config["latents_mean"], self.config["latents_std"]
        if mean is None or std is None:
            raise ValueError("[AutoencoderKLWan] config has no latents_mean / latents_std")
        shape = (1, len(mean), 1, 1, 1)
        return (_C.tensor(list(map(float, mean))).reshape(*shape).to(z.dtype),
                _C.tensor(list(map(float, std))).reshape(*shape).to(z.dtype))

    def scale_latents(self, z):
        """VAE latents -> the diffusion model's: (z - latents_mean) / latents_std per channel."""
        mean, std = self._mean_std(z)
        return (z - mean) / std

    def unscale_latents(self, z):
        """The diffusion model's latents -> VAE latents: z * latents_std + latents_mean."""
        mean, std = self._mean_std(z)
        return z * std + mean

    # ---- tiling ----
    def enable_tiling(self, tile_sample_min_height=None, tile_sample_min_width=None, tile_sample_stride_height=None,
                      tile_sample_stride_width=None, *, tile_size=None, overlap=None):
        """Encode / decode videos larger than a tile tile by tile in space. diffusers'
        arguments (tile sizes and strides in pixels; defaults 256 and 192), or kiln's
        square shorthand: tile_size pixels whose neighbours overlap by the fraction
        `overlap` (stride = int(tile_size * (1 - overlap)); default overlap 0.25)."""
        if tile_size is not None or overlap is not None:
            th, tw, sh, sw = self._square_tiles(tile_size, overlap)
        else:
            th = tile_sample_min_height or self.tile_sample_min_height
            tw = tile_sample_min_width or self.tile_sample_min_width
            sh = tile_sample_stride_height or self.tile_sample_stride_height
            sw = tile_sample_stride_width or self.tile_sample_stride_width
        self._check_tiles(th, tw, sh, sw)
        self.use_tiling = True
        self.tile_sample_min_height, self.tile_sample_min_width = th, tw
        self.tile_sample_stride_height, self.tile_sample_stride_width = sh, sw

    def disable_tiling(self):
        self.use_tiling = False

    def _square_tiles(self, tile_size, overlap):  # -> (tile h, tile w, stride h, stride w) in pixels
        size = self.tile_sample_min_height if tile_size is None else int(tile_size)
        frac = 1.0 - _TILE_STRIDE / _TILE if overlap is None else AutoencoderKL._check_overlap(overlap)
        return size, size, int(size * (1 - frac)), int(size * (1 - frac))

    def _check_tiles(self, th, tw, sh, sw):
        r = self.spatial_compression_ratio
        for name, v in (("tile height", th), ("tile width", tw), ("tile stride", sh), ("tile stride", sw)):
            if int(v) < r or int(v) % r:
                raise ValueError(f"[AutoencoderKLWan] {name} {v} must be a positive multiple of {r} pixels "
                                 "(scale_factor_spatial); with an overlap fraction, tile_size * (1 - overlap) too")
        if sh > th or sw > tw:
            raise ValueError(f"[AutoencoderKLWan] tile strides ({sh}, {sw}) must not exceed the tile ({th}, {tw})")

    def _tiles(self, tiled, tile_size, overlap):
        """(tile h, tile w, stride h, stride w) in pixels when this call tiles, else None."""
        if not (self.use_tiling if tiled is None else bool(tiled)):
            return None
        if tile_size is None and overlap is None:
            return (self.tile_sample_min_height, self.tile_sample_min_width, self.tile_sample_stride_height,
                    self.tile_sample_stride_width)
        tiles = self._square_tiles(tile_size, overlap)
        self._check_tiles(*tiles)
        return tiles

    # ---- encode / decode ----
    def _check_input(self, x, channels, what):
        if x.dim() != 5 or x.shape[1] != channels or x.shape[2] < 1:
            raise ValueError(f"[AutoencoderKLWan.{what}] expected [N, {channels}, T >= 1, H, W], got {list(x.shape)}")

    def _encode_chunks(self, x, progress=None):
        """Patchified x [N, C * p * p, T, H, W] -> [N, 2 z_dim, t, H / s', W / s'] (before
        the distribution), the first frame alone and then _ENCODE_CHUNK at a time."""
        cache, outs = FrameCache(), []
        x = _channels_last(x)
        t = x.shape[2]
        starts = [0] + list(range(1, t, _ENCODE_CHUNK))
        for i, s in enumerate(starts):
            n = 1 if s == 0 else min(_ENCODE_CHUNK, t - s)
            outs.append(self.encoder(x.narrow(2, s, n), cache))  # [N, 2z, t', h, w]
            if progress is not None:
                progress(i + 1, len(starts))
        return self.quant_conv(outs[0] if len(outs) == 1 else _C.cat(outs, 2))

    def _decode_frames(self, z, progress=None):
        """z [N, z_dim, t, h, w] -> patchified video [N, C * p * p, T, h * s / p, w * s / p],
        one latent frame at a time."""
        cache, outs = FrameCache(), []
        z = self.post_quant_conv(_channels_last(z))
        for i in range(z.shape[2]):
            outs.append(self.decoder(z.narrow(2, i, 1), cache, i == 0))  # [N, C, 1 or temporal_scale, H, W]
            if progress is not None:
                progress(i + 1, z.shape[2])
        return outs[0] if len(outs) == 1 else _C.cat(outs, 2)

    def encode(self, x, tiled=None, tile_size=None, overlap=None, progress=None):
        """x [N, in_channels, T, H, W] (in [-1, 1]) -> DiagonalGaussianDistribution over
        [N, z_dim, 1 + (T - 1) / temporal_scale, H / s, W / s]; T - 1 must be a multiple
        of temporal_scale, and H, W should be multiples of s. Tiled in space when tiling
        is on (enable_tiling() or tiled=True, tile_size / overlap as enable_tiling's) and
        the video is larger than a tile. progress(done,
        total) is called per chunk, or per tile when tiled."""
        self._check_input(x, self.config["in_channels"] // self.patch_size**2, "encode")
        if (x.shape[2] - 1) % self.temporal_scale:
            # A shorter last chunk leaves a temporal down-sampler fewer frames than its kernel.
            raise ValueError(f"[AutoencoderKLWan.encode] {list(x.shape)}: T - 1 = {x.shape[2] - 1} frames must be a "
                             f"multiple of {self.temporal_scale} (temporal_scale)")
        tiles = self._tiles(tiled, tile_size, overlap)
        # diffusers tiles when the video (not the patchified one) exceeds a tile, and then
        # cuts the tiles out of the patchified video, counting its pixels as pixels.
        tiled = tiles is not None and (x.shape[4] > tiles[1] or x.shape[3] > tiles[0])
        x = patchify(x, self.patch_size)  # [N, C * p * p, T, H / p, W / p]
        if tiled:
            th, tw, sh, sw = tiles
            r = self.spatial_compression_ratio // self.patch_size  # its pixels per latent position
            h = tiled_grid(x, self._encode_chunks, (th, tw), (sh, sw), (th // r - sh // r, tw // r - sw // r),
                           (sh // r, sw // r), (x.shape[3] // r, x.shape[4] // r), progress)
        else:
            h = self._encode_chunks(x, progress)
        return DiagonalGaussianDistribution(h.contiguous())

    def decode(self, z, tiled=None, tile_size=None, overlap=None, progress=None):
        """z [N, z_dim, t, h, w] (VAE latents: unscale_latents() first for a diffusion
        model's) -> video [N, out_channels, 1 + (t - 1) * temporal_scale, h * s, w * s],
        clamped to [-1, 1]. Decodes one latent frame at a time, and tile by tile in space
        when tiling is on and h or w exceeds a tile (tile_size output pixels); progress(
        done, total) is called per latent frame, or per tile when tiled."""
        self._check_input(z, self.config["z_dim"], "decode")
        tiles = self._tiles(tiled, tile_size, overlap)
        r, p = self.spatial_compression_ratio, self.patch_size
        if tiles is not None and (z.shape[4] > tiles[1] // r or z.shape[3] > tiles[0] // r):
            th, tw, sh, sw = tiles
            # Latent windows of tile // r step by stride // r; each decoded tile keeps its first
            # stride // p rows and columns of the patchified video and blends the rest.
            out = tiled_grid(z, self._decode_frames, (th // r, tw // r), (sh // r, sw // r),
                             (th // p - sh // p, tw // p - sw // p), (sh // p, sw // p),
                             (z.shape[3] * r // p, z.shape[4] * r // p), progress)
        else:
            out = self._decode_frames(z, progress)
        return unpatchify(out, p).clamp(-1.0, 1.0).contiguous()

    def forward(self, sample, sample_posterior=False, generator=None):
        dist = self.encode(sample)
        return self.decode(dist.sample(generator) if sample_posterior else dist.mode())

    # ---- loading ----
    @classmethod
    def from_pretrained(cls, path, dtype=None, variant=None, subfolder=None):
        """Loads a diffusers-format AutoencoderKLWan directory (or a pipeline directory
        with a vae/ subfolder). dtype (default float32) is what the weights are cast to;
        variant picks diffusion_pytorch_model.<variant>.safetensors. The model is returned
        in eval mode with requires_grad off."""
        return load_diffusers_model(cls, "AutoencoderKLWan", path, dtype, variant, subfolder)


__all__ = ["AutoencoderKLWan"]
