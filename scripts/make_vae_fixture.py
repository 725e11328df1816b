"""Writes the tiny AutoencoderKL fixture of tests/python/test_vae.py with diffusers.

Run it with a Python that has torch + diffusers (neither is a kiln dependency):
    python scripts/make_vae_fixture.py [OUT_DIR]
OUT_DIR defaults to tests/data/vae. It writes
  OUT_DIR/tiny_autoencoder_kl/{config.json, diffusion_pytorch_model.safetensors}
      a 2-level AutoencoderKL (block_out_channels (8, 16), 4 groups, 4 latent channels)
      with seeded random weights (biases and norm affines too, so every
      parameter matters to the outputs),
  OUT_DIR/tiny_autoencoder_kl_outputs.safetensors
      diffusers' outputs on a seeded input: image, encode mean/logvar, latents,
      decode, and tiled decode / encode with 16-pixel tiles.
"""

import os
import sys

import torch
from diffusers import AutoencoderKL
from safetensors.torch import save_file

TILE_SAMPLE = 16  # pixels; the latent tile is 16 / 2 = 8


def build(seed):
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 16),
        layers_per_block=1,
        norm_num_groups=4,
        latent_channels=4,
        sample_size=32,
        scaling_factor=0.5,
        shift_factor=0.125,
    )
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in vae.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else 4
                p.copy_(torch.randn(p.shape, generator=g) / fan_in**0.5)
    return vae.eval()


def outputs(vae, seed):
    g = torch.Generator().manual_seed(seed)
    image = torch.rand(1, 3, 40, 56, generator=g) * 2 - 1  # [N, 3, H, W] in [-1, 1]
    latents = torch.randn(1, 4, 20, 28, generator=g)  # [N, 4, h, w]
    out = {"image": image, "latents": latents}
    with torch.no_grad():
        dist = vae.encode(image).latent_dist
        out["encode_mean"], out["encode_logvar"] = dist.mean, dist.logvar
        out["decode"] = vae.decode(latents).sample
        vae.enable_tiling()
        vae.tile_sample_min_size = TILE_SAMPLE
        vae.tile_latent_min_size = TILE_SAMPLE // 2
        out["tiled_decode"] = vae.decode(latents).sample
        tiled = vae.encode(image).latent_dist
        out["tiled_encode_mean"], out["tiled_encode_logvar"] = tiled.mean, tiled.logvar
        vae.disable_tiling()
    return {k: v.contiguous() for k, v in out.items()}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "vae")
    vae = build(0)
    vae.save_pretrained(os.path.join(out_dir, "tiny_autoencoder_kl"), safe_serialization=True)
    save_file(outputs(vae, 7), os.path.join(out_dir, "tiny_autoencoder_kl_outputs.safetensors"))


if __name__ == "__main__":
    main()
