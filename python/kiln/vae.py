"""`kiln vae` (python -m kiln.vae): encode PNG images to latents and decode latents
to PNG images with a diffusers-format AutoencoderKL (kiln.models.AutoencoderKL), or
videos (directories of frame images) with an AutoencoderKLWan (kiln.models.AutoencoderKLWan).

  kiln vae encode VAE_DIR image.png latents.safetensors
  kiln vae decode VAE_DIR latents.safetensors out.png
  kiln vae encode WAN_VAE_DIR frames/ latents.safetensors
  kiln vae decode WAN_VAE_DIR latents.safetensors out_frames/

Images are 8-bit RGB, mapped to [-1, 1]. Latents are stored under the key
"latents" as [N, C, h, w] ([N, C, t, h, w] for video) float32, in the diffusion
model's space ((z - shift_factor) * scaling_factor, or (z - latents_mean) /
latents_std for Wan) unless --raw is given. The VAE class is picked from the
directory's config.json (_class_name).
"""

import argparse
import json
import os
import sys

import numpy as np

from . import _C
from ._grad_mode import no_grad


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise SystemExit("kiln vae: reading and writing PNG needs Pillow: pip install pillow") from None
    return Image


def read_image(path):
    """A PNG/JPEG/... file -> [1, 3, H, W] float32 in [-1, 1]."""
    with _pil().open(path) as im:
        a = np.asarray(im.convert("RGB"), dtype=np.float32)  # [H, W, 3]
    return _C.tensor(np.ascontiguousarray(a.transpose(2, 0, 1)[None] / 127.5 - 1.0))


def write_image(x, path):
    """x [3, H, W] in [-1, 1] -> an 8-bit RGB file (values outside [-1, 1] clipped)."""
    a = np.clip(x.detach().float().contiguous().numpy(), -1.0, 1.0)
    a = np.rint((a + 1.0) * 127.5).astype(np.uint8).transpose(1, 2, 0)  # [H, W, 3]
    _pil().fromarray(a, "RGB").save(path)


_IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


def read_video(path):
    """A directory of frame images (taken in name order) -> [1, 3, T, H, W] float32 in [-1, 1];
    a single image file is a one-frame video."""
    if not os.path.isdir(path):
        return read_image(path).unsqueeze(2)
    names = sorted(n for n in os.listdir(path) if n.lower().endswith(_IMAGE_EXTS))
    if not names:
        raise FileNotFoundError(f"no frame images ({', '.join(_IMAGE_EXTS)}) in {path}")
    frames = [read_image(os.path.join(path, n)) for n in names]  # [1, 3, H, W] each
    for n, f in zip(names, frames):
        if list(f.shape) != list(frames[0].shape):
            raise ValueError(f"frame {n} is {f.shape[3]}x{f.shape[2]}, the first frame "
                             f"{frames[0].shape[3]}x{frames[0].shape[2]}")
    return _C.stack(frames, 2)


def write_video(x, path):
    """x [3, T, H, W] in [-1, 1] -> path/0000.png, path/0001.png, ... (the directory is created)."""
    os.makedirs(path, exist_ok=True)
    for t in range(x.shape[1]):
        write_image(x[:, t], os.path.join(path, f"{t:04d}.png"))


def _progress(what, unit, enabled):
    if not enabled:
        return None

    def report(done, total):
        print(f"kiln vae {what}: {unit} {done}/{total}", file=sys.stderr, flush=True)

    return report


def _class_name(vae_dir):
    for d in (vae_dir, os.path.join(vae_dir, "vae")):
        cfg = os.path.join(d, "config.json")
        if os.path.isfile(cfg):
            with open(cfg, encoding="utf-8") as f:
                return json.load(f).get("_class_name", "AutoencoderKL")
    return "AutoencoderKL"  # from_pretrained names the missing file


def _is_wan(vae):
    from .models import AutoencoderKLWan

    return isinstance(vae, AutoencoderKLWan)


def _load(a):
    from .models import AutoencoderKL, AutoencoderKLWan

    if _class_name(a.vae_dir) == "AutoencoderKLWan":
        vae = AutoencoderKLWan.from_pretrained(a.vae_dir)
        if a.tiled or a.tile_size is not None:
            vae.enable_tiling(tile_size=a.tile_size, overlap=a.overlap)
        return vae
    vae = AutoencoderKL.from_pretrained(a.vae_dir)
    if a.tiled or a.tile_size is not None:
        vae.enable_tiling(a.tile_size, a.overlap)
    return vae


def _encode(a):
    vae = _load(a)
    wan = _is_wan(vae)
    x = read_video(a.input) if wan else read_image(a.input)
    with no_grad():
        unit = "chunk" if wan and not vae.use_tiling else "tile"
        dist = vae.encode(x, progress=_progress("encode", unit, not a.quiet))
        if a.sample:
            z = dist.sample(_C.Generator(a.seed))
        else:
            z = dist.mode()
        if not a.raw:
            z = vae.scale_latents(z)
    _C.io_save_file({a.key: z.float().contiguous()}, a.output)
    return 0


def _decode(a):
    vae = _load(a)
    tensors = _C.io_load_file(a.input)
    if a.key in tensors:
        z = tensors[a.key]
    elif len(tensors) == 1:
        z = next(iter(tensors.values()))
    else:
        raise ValueError(f"{a.input} has no tensor '{a.key}' (it has {', '.join(sorted(tensors))}); pick one with --key")
    wan = _is_wan(vae)
    if z.dim() == (4 if wan else 3):
        z = z.unsqueeze(0)
    z = z.float()
    with no_grad():
        if not a.raw:
            z = vae.unscale_latents(z)
        unit = "latent frame" if wan and not vae.use_tiling else "tile"
        img = vae.decode(z, progress=_progress("decode", unit, not a.quiet))
    if wan:
        for i in range(img.shape[0]):
            write_video(img[i], a.output if img.shape[0] == 1 else f"{a.output.rstrip(os.sep)}-{i}")
    elif img.shape[0] == 1:
        write_image(img[0], a.output)
    else:
        stem, ext = os.path.splitext(a.output)
        for i in range(img.shape[0]):
            write_image(img[i], f"{stem}-{i}{ext or '.png'}")
    return 0


def _parser():
    p = argparse.ArgumentParser(
        prog="kiln vae",
        description="Encode images to latents and decode latents to images with a diffusers-format AutoencoderKL "
                    "(a directory with config.json and diffusion_pytorch_model.safetensors, or a pipeline "
                    "directory with a vae/ subfolder). Images are RGB files (PNG written); pixels map to [-1, 1]. "
                    "Latents are a safetensors file with a [N, C, h, w] float32 tensor 'latents', "
                    "h and w being H and W divided by 2**(levels-1) (8 for Stable Diffusion's VAE). "
                    "With an AutoencoderKLWan directory (config.json's _class_name) the input and output are "
                    "videos: directories of frame images (read in name order, written as 0000.png, ...), "
                    "and latents are [N, C, t, h, w] with t = 1 + (T - 1) / 4 for Wan 2.1's VAE.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Tiling (--tiled) cuts the input into overlapping tiles of --tile-size pixels that are run "
               "one by one and cross-faded (as diffusers' enable_tiling), bounding memory for large images; "
               "each finished tile is reported on stderr. A Wan video is tiled in space, each tile running "
               "through all its frames (default tiles 256 pixels with stride 192, diffusers' own).")
    sub = p.add_subparsers(dest="command", required=True, metavar="{encode,decode}")

    def common(q):
        q.add_argument("vae_dir", metavar="VAE_DIR", help="diffusers AutoencoderKL or AutoencoderKLWan directory")
        q.add_argument("--tiled", action="store_true", help="run tile by tile when the input exceeds one tile")
        q.add_argument("--tile-size", type=int, default=None,
                       help="tile size in image pixels (implies --tiled; default: the config's sample_size, "
                            "Wan: 256)")
        q.add_argument("--overlap", type=float, default=None,
                       help="fraction of a tile shared with its neighbour (default 0.25)")
        q.add_argument("--key", default="latents", help="tensor name in the latents file (default 'latents')")
        q.add_argument("--raw", action="store_true",
                       help="latents are the VAE's own, without scaling_factor / shift_factor "
                       "(Wan: latents_mean / latents_std) applied")
        q.add_argument("--quiet", action="store_true", help="no per-tile (Wan: per-chunk) progress on stderr")

    e = sub.add_parser("encode", help="image -> latents", description="Encode an image file to latents.")
    common(e)
    e.add_argument("input", metavar="IMAGE", help="input image (PNG, JPEG, ...); for Wan a directory of frames")
    e.add_argument("output", metavar="LATENTS", help="output .safetensors")
    e.add_argument("--sample", action="store_true", help="draw from the posterior instead of taking its mean")
    e.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    e.set_defaults(run=_encode)

    d = sub.add_parser("decode", help="latents -> image", description="Decode latents to a PNG image "
                       "(a batch of N writes OUT-0.png ... OUT-<N-1>.png).")
    common(d)
    d.add_argument("input", metavar="LATENTS", help="input .safetensors")
    d.add_argument("output", metavar="IMAGE",
                   help="output image (.png); for Wan a directory that receives 0000.png, 0001.png, ...")
    d.set_defaults(run=_decode)
    return p


def main(argv=None):
    a = _parser().parse_args(argv)
    try:
        return a.run(a)
    except (FileNotFoundError, ValueError, RuntimeError, TypeError) as err:
        print(f"kiln vae {a.command}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
