"""Writes the tiny AutoencoderKLWan fixture of tests/python/test_vae_wan.py with diffusers.

Run it with a Python that has torch + diffusers (neither is a kiln dependency):
    python scripts/make_wan_vae_fixture.py [OUT_DIR]
OUT_DIR defaults to tests/data/vae. It writes
  OUT_DIR/tiny_autoencoder_kl_wan/{config.json, diffusion_pytorch_model.safetensors}
      a Wan 2.1-layout video VAE (base_dim 4, dim_mult (1, 2, 2), one residual
      block per level, temporal down/up-sampling at one level, z_dim 4) with
      seeded random weights (norm gammas and biases too, so every parameter
      matters to the outputs),
  OUT_DIR/tiny_autoencoder_kl_wan_outputs.safetensors
      diffusers' outputs on seeded inputs: video [1, 3, 9, 16, 16], its encode
      mean/logvar, latents [1, 4, 3, 4, 4] and their decode,
  OUT_DIR/tiny_autoencoder_kl_wan22{,_outputs.safetensors}
      the same for Wan 2.2 TI2V-5B's layout (is_residual, patch_size 2, base_dim 4,
      decoder_base_dim 6, dim_mult (1, 2, 2)), on a [1, 3, 5, 16, 16] video and [1, 4, 3, 2, 2] latents,
  OUT_DIR/tiny_autoencoder_kl_wan{,22}_tiled_outputs.safetensors
      diffusers' tiled encode / decode (enable_tiling) of the two saved models on inputs
      larger than a tile, with the tile settings stored beside them.
With --tiled-only it writes only the tiled outputs, from the models already in OUT_DIR.
"""

import os
import sys

import torch
from diffusers import AutoencoderKLWan
from safetensors.torch import save_file


def build(seed, residual=False):
    torch.manual_seed(seed)
    if residual:  # Wan 2.2 TI2V-5B's layout: residual blocks, 2x2 patches
        vae = AutoencoderKLWan(
            base_dim=4,
            decoder_base_dim=6,
            z_dim=4,
            dim_mult=[1, 2, 2],
            num_res_blocks=1,
            temperal_downsample=[False, True],
            is_residual=True,
            in_channels=12,
            out_channels=12,
            patch_size=2,
            latents_mean=[0.1, -0.2, 0.3, -0.4],
            latents_std=[1.5, 0.5, 2.0, 1.25],
            scale_factor_temporal=2,
            scale_factor_spatial=4,
        )
    else:
        vae = AutoencoderKLWan(
            base_dim=4,
            z_dim=4,
            dim_mult=[1, 2, 2],
            num_res_blocks=1,
            attn_scales=[],
            temperal_downsample=[False, True],
            latents_mean=[0.1, -0.2, 0.3, -0.4],
            latents_std=[1.5, 0.5, 2.0, 1.25],
            scale_factor_temporal=2,
            scale_factor_spatial=4,
        )
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in vae.named_parameters():
            if name.endswith("gamma"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 4
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)
        # A smaller output head keeps most decoded values inside the [-1, 1] clamp.
        vae.decoder.conv_out.weight.mul_(0.4 if residual else 0.75)
    return vae.eval()


def outputs(vae, seed, frames=9, latent_hw=4):
    g = torch.Generator().manual_seed(seed)
    video = torch.rand(1, 3, frames, 16, 16, generator=g) * 2 - 1  # [N, 3, T, H, W] in [-1, 1]
    latents = torch.randn(1, 4, 3, latent_hw, latent_hw, generator=g)  # [N, z, t, h, w]
    out = {"video": video, "latents": latents}
    with torch.no_grad():
        dist = vae.encode(video).latent_dist
        out["encode_mean"], out["encode_logvar"] = dist.mean, dist.logvar
        out["decode"] = vae.decode(latents).sample
    return {k: v.contiguous() for k, v in out.items()}


# name: (seed, video [N, 3, T, H, W], latents [N, z, t, h, w], tile, stride, spatial ratio)
# The tiny Wan 2.2 config says scale_factor_spatial 4 while its patches and levels give 8;
# its tiles are run with the true ratio (spatial_compression_ratio = 8 on both sides).
TILED = {"tiny_autoencoder_kl_wan": (17, (1, 3, 5, 24, 28), (1, 4, 3, 6, 7), 16, 12, None),
         "tiny_autoencoder_kl_wan22": (18, (1, 3, 5, 48, 40), (1, 4, 2, 3, 4), 16, 8, 8)}


def tiled_outputs(vae, seed, video_shape, latent_shape, tile, stride, ratio):
    if ratio is not None:
        vae.spatial_compression_ratio = ratio
    vae.enable_tiling(tile, tile, stride, stride)
    g = torch.Generator().manual_seed(seed)
    video = torch.rand(*video_shape, generator=g) * 2 - 1
    latents = torch.randn(*latent_shape, generator=g)
    out = {"video": video, "latents": latents,
           "settings": torch.tensor([tile, stride, ratio or vae.spatial_compression_ratio])}
    with torch.no_grad():
        dist = vae.encode(video).latent_dist
        out["encode_mean"], out["encode_logvar"] = dist.mean, dist.logvar
        out["decode"] = vae.decode(latents).sample
    return {k: v.contiguous() for k, v in out.items()}


def write_tiled(out_dir):
    for name, (seed, video, latents, tile, stride, ratio) in TILED.items():
        vae = AutoencoderKLWan.from_pretrained(os.path.join(out_dir, name)).eval()
        save_file(tiled_outputs(vae, seed, video, latents, tile, stride, ratio),
                  os.path.join(out_dir, name + "_tiled_outputs.safetensors"))


def main():
    args = [a for a in sys.argv[1:] if a != "--tiled-only"]
    out_dir = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "vae")
    if "--tiled-only" in sys.argv[1:]:
        write_tiled(out_dir)
        return
    vae = build(0)
    vae.save_pretrained(os.path.join(out_dir, "tiny_autoencoder_kl_wan"), safe_serialization=True)
    save_file(outputs(vae, 7), os.path.join(out_dir, "tiny_autoencoder_kl_wan_outputs.safetensors"))
    vae = build(1, residual=True)
    vae.save_pretrained(os.path.join(out_dir, "tiny_autoencoder_kl_wan22"), safe_serialization=True)
    save_file(outputs(vae, 8, frames=5, latent_hw=2),
              os.path.join(out_dir, "tiny_autoencoder_kl_wan22_outputs.safetensors"))
    write_tiled(out_dir)


if __name__ == "__main__":
    main()
