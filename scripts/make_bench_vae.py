#!/usr/bin/env python3
"""Builds the real-width VAEs that `kiln bench vae` measures, with random weights
from a fixed seed, saved in diffusers format: diffusers' AutoencoderKL with the
SDXL VAE's configuration (block_out_channels 128, 256, 512, 512; two layers per
block; 4 latent channels; 32 norm groups; scaling factor 0.13025; sample_size
1024), or with --wan diffusers' AutoencoderKLWan with Wan 2.1's configuration
(its constructor defaults: base_dim 96, z_dim 16, dim_mult 1, 2, 4, 4, two
residual blocks per level, temporal down-sampling in the last two levels).
Only the architecture and sizes matter for speed and memory, so no trained
checkpoint is downloaded.

    <python with torch + diffusers> scripts/make_bench_vae.py [--wan] [--out DIR]

DIR defaults to ~/.cache/kiln/bench/sdxl-vae (--wan: wan21-vae), where
`kiln bench vae` looks.
"""
import argparse
import os
import sys

SDXL_VAE = dict(
    in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 4,
    up_block_types=["UpDecoderBlock2D"] * 4, block_out_channels=[128, 256, 512, 512], layers_per_block=2,
    act_fn="silu", latent_channels=4, norm_num_groups=32, sample_size=1024, scaling_factor=0.13025,
    force_upcast=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wan", action="store_true", help="the Wan 2.1 video VAE instead of SDXL's")
    p.add_argument("--out", default=None, help="output directory (default ~/.cache/kiln/bench/sdxl-vae or wan21-vae)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    import torch
    from diffusers import AutoencoderKL, AutoencoderKLWan

    a.out = a.out or os.path.join(os.path.expanduser("~"), ".cache", "kiln", "bench",
                                  "wan21-vae" if a.wan else "sdxl-vae")
    torch.manual_seed(a.seed)
    model = (AutoencoderKLWan() if a.wan else AutoencoderKL(**SDXL_VAE)).eval()
    os.makedirs(a.out, exist_ok=True)
    model.save_pretrained(a.out, safe_serialization=True)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: {'Wan 2.1' if a.wan else 'SDXL'} VAE architecture, {n / 1e6:.1f}M parameters, seed {a.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
