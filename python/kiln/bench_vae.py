"""VAE figures for ``kiln bench vae``: ``python -m kiln.bench_vae [--json]``.

Tiled decode and encode of a diffusers-format AutoencoderKL at real widths (by
default the SDXL VAE architecture that scripts/make_bench_vae.py builds into
~/.cache/kiln/bench/sdxl-vae), in kiln and in torch + diffusers (CPU) on the
same inputs with the same tile settings. Every side of every case runs in a
fresh process, so its peak RSS is that case's own: the kernel's peak mark is
reset once the model is loaded, and ``peak_rss_bytes`` is the peak while the
calls run (weights, interpreter and library included), ``peak_delta_bytes`` the
part above the RSS just before the first call.

``live_set_bytes`` is the least memory the computation itself needs: the
weights, the input, and, at the worst moment, the activations that must exist
at once in one tile, with each op out of place and each intermediate freed
right after its last use (a ResNet block holds its input x for the residual
while norm -> silu -> conv run: max(3 Cin, 2 Cin + Cout, Cin + 2 Cout, 3 Cout)
* H * W floats; an upsampler holds the nearest-x2 copy and its conv output,
8 C * H * W; attention x, q, k, v and the output, 5 C * H * W, with no H*W x
H*W score matrix as flash-style attention needs none), plus the outputs of the
tiles already done (they are kept until they are blended), or the tiles and
the joined result at the end, whichever is larger. ``peak_over_live_set`` is
kiln's peak RSS over that figure.

A directory whose config names AutoencoderKLWan (scripts/make_bench_vae.py
--wan builds Wan 2.1's into ~/.cache/kiln/bench/wan21-vae) is run as a video
VAE: --video HxWxT (default 480x832x17), tiles of --tile pixels (default 256)
with stride int(tile * 0.75), diffusers' own Wan tiling. Its live set is
measured rather than derived: the weights plus kiln's allocator peak of live
tensor bytes during the call (``tensor_peak_bytes``, reported for every kiln
side).

--quick builds a tiny AutoencoderKL with kiln itself (no download, no torch
needed) and runs a 256x256 image: a smoke run, not a measurement.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

import numpy as np

DEFAULT_MODEL = os.path.join(os.path.expanduser("~"), ".cache", "kiln", "bench", "sdxl-vae")
WAN_VIDEO = (480, 832, 17)  # H, W, T of the default Wan case
WAN_TILE = 256  # diffusers' AutoencoderKLWan tile (stride 192)
SIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bench_vae_side.py")
QUICK_CONFIG = dict(block_out_channels=[8, 16], down_block_types=["DownEncoderBlock2D"] * 2,
                    up_block_types=["UpDecoderBlock2D"] * 2, layers_per_block=1, norm_num_groups=4,
                    sample_size=256, latent_channels=4)
OVERLAP = 0.25  # diffusers' tile_overlap_factor, kiln's default too


# ---- the live-set figure ----
def _resnet(cin, cout):
    return max(3 * cin, 2 * cin + cout, cin + 2 * cout, 3 * cout)


def _decoder_floats(cfg, t):
    """Largest number of floats live at once inside one decode of a t x t latent tile."""
    rev = list(reversed(cfg["block_out_channels"]))
    lat, out_ch, layers = cfg["latent_channels"], cfg.get("out_channels", 3), cfg["layers_per_block"]
    r, peak = t, 2 * lat * t * t  # post_quant_conv
    peak = max(peak, (lat + rev[0]) * r * r)  # conv_in
    peak = max(peak, _resnet(rev[0], rev[0]) * r * r, 5 * rev[0] * r * r)  # mid block
    for i, c in enumerate(rev):
        cin = rev[max(i - 1, 0)]
        for k in range(layers + 1):
            peak = max(peak, _resnet(cin if k == 0 else c, c) * r * r)
        if i < len(rev) - 1:
            peak = max(peak, 5 * c * r * r, 8 * c * r * r)  # x + nearest copy, copy + conv output
            r *= 2
    return max(peak, 3 * rev[-1] * r * r, (rev[-1] + out_ch) * r * r)  # norm, silu, conv_out


def _encoder_floats(cfg, T):
    """Largest number of floats live at once inside one encode of a T x T image tile."""
    ch = cfg["block_out_channels"]
    lat, in_ch, layers = cfg["latent_channels"], cfg.get("in_channels", 3), cfg["layers_per_block"]
    r, peak = T, (in_ch + ch[0]) * T * T  # conv_in
    for i, c in enumerate(ch):
        cin = ch[max(i - 1, 0)]
        for k in range(layers):
            peak = max(peak, _resnet(cin if k == 0 else c, c) * r * r)
        if i < len(ch) - 1:
            h = (r - 1) // 2 + 1
            peak = max(peak, c * (r * r + (r + 1) ** 2), c * ((r + 1) ** 2 + h * h))  # pad, stride-2 conv
            r = h
    c = ch[-1]
    peak = max(peak, _resnet(c, c) * r * r, 5 * c * r * r, 3 * c * r * r)
    return max(peak, (c + 2 * lat) * r * r, 4 * lat * r * r)  # conv_out, quant_conv


def _tile_sizes(n, tile, step):
    return [min(tile, n - i) for i in range(0, n, step)]


def live_set_bytes(cfg, op, image, tile, weight_bytes, itemsize=4):
    """(bytes, note): the least memory a tiled `op` of an image x image picture needs (see the module doc)."""
    s = 2 ** (len(cfg["block_out_channels"]) - 1)
    lat, rgb = cfg["latent_channels"], cfg.get("out_channels", 3)
    if op == "decode":
        n_in, in_tile, out_scale, ch_in, ch_out = image // s, tile // s, s, lat, rgb
    else:
        n_in, in_tile, out_scale, ch_in, ch_out = image, tile, 1.0 / s, cfg.get("in_channels", 3), 2 * lat
    tiled = n_in > in_tile
    sizes = _tile_sizes(n_in, in_tile, int(in_tile * (1 - OVERLAP))) if tiled else [n_in]
    tiles = [(a, b) for a in sizes for b in sizes]
    inner = _decoder_floats if op == "decode" else _encoder_floats
    act = max(inner(cfg, max(a, b)) for a, b in tiles)
    outs = [ch_out * int(a * out_scale) * int(b * out_scale) for a, b in tiles]
    result = ch_out * int(n_in * out_scale) ** 2
    held = max(act + sum(outs) - outs[-1], sum(outs) + result) if tiled else act
    total = weight_bytes + itemsize * (ch_in * n_in * n_in + held)
    what = f"the live activations of one {max(sizes)}x{max(sizes)} {'latent' if op == 'decode' else 'image'} tile"
    mib = f"{itemsize * act / 2**20:.0f} MiB"
    note = f"weights {weight_bytes / 2**20:.0f} MiB + input + " + (
        f"max({what} ({mib}) + earlier tiles' outputs, all {len(tiles)} tile outputs + result)" if tiled else
        f"{what} ({mib}): untiled, the tile covers the input")
    return total, note


# ---- running the sides ----
def _torch_python(peer_python):
    """(python with torch + diffusers, or None, why not)."""
    import importlib.util

    if importlib.util.find_spec("torch") and importlib.util.find_spec("diffusers"):
        return sys.executable, None
    if peer_python:
        return peer_python, None
    return None, "torch + diffusers are not importable here; pass --peer-python PATH (a Python with both)"


def _run_side(python, cfg, drop_pythonpath):
    env = dict(os.environ)
    if drop_pythonpath:
        env.pop("PYTHONPATH", None)
    p = subprocess.run([python, SIDE], input=json.dumps(cfg), capture_output=True, text=True, env=env)
    if p.returncode != 0:
        last = [ln for ln in p.stderr.splitlines() if ln.strip()]
        return None, f"{python} exited with {p.returncode}" + (f": {last[-1]}" if last else "")
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def _make_quick_model(path):
    import kiln
    from kiln.models import AutoencoderKL

    kiln.manual_seed(0)
    m = AutoencoderKL(**QUICK_CONFIG)
    kiln._C.io_save_file({k: v.detach().contiguous() for k, v in m.state_dict().items()},
                         os.path.join(path, "diffusion_pytorch_model.safetensors"))
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(dict(m.config, _class_name="AutoencoderKL"), f, indent=2)


def _weight_bytes(model):
    return sum(os.path.getsize(os.path.join(model, f)) for f in os.listdir(model) if f.endswith(".safetensors"))


def bench_vae(model=None, quick=False, image=None, tiles=None, ops=("decode", "encode"), threads=2, repeat=1,
              peer_python=None, kiln_only=False, video=None):
    with tempfile.TemporaryDirectory(prefix="kiln-bench-vae-") as work:
        return _bench_vae(work, model, quick, image, tiles, ops, threads, repeat, peer_python, kiln_only, video)


class _ImageCases:
    """AutoencoderKL: square images, tiles with diffusers' overlap fraction, the derived live set."""

    def __init__(self, cfg, image, quick, wbytes):
        self.cfg, self.wbytes = cfg, wbytes
        self.s = 2 ** (len(cfg["block_out_channels"]) - 1)
        self.image = image or (256 if quick else 1024)
        self.default_tiles = sorted({int(cfg.get("sample_size", self.image)), self.image // 2}, reverse=True)
        self.size = [self.image, self.image]

    def inputs(self, rng):
        n, lat = self.image, self.cfg["latent_channels"]
        return {"decode": rng.randn(1, lat, n // self.s, n // self.s).astype(np.float32),
                "encode": rng.uniform(-1, 1, (1, self.cfg.get("in_channels", 3), n, n)).astype(np.float32)}

    def name(self, op, tile):
        return f"{op} {self.image}x{self.image} tile {tile}"

    def tiled(self, op, tile):
        return (self.image // self.s if op == "decode" else self.image) > (tile // self.s if op == "decode" else tile)

    def live(self, op, tile, side):
        return live_set_bytes(self.cfg, op, self.image, tile, self.wbytes)

    def describe(self):
        cfg = self.cfg
        return {"class": "AutoencoderKL", "block_out_channels": cfg["block_out_channels"],
                "layers_per_block": cfg["layers_per_block"], "latent_channels": cfg["latent_channels"],
                "sample_size": cfg.get("sample_size")}


class _VideoCases:
    """AutoencoderKLWan: H x W x T videos, diffusers' Wan tiles, the measured live set."""

    def __init__(self, cfg, video, wbytes):
        self.cfg, self.wbytes = cfg, wbytes
        self.h, self.w, self.t = video or WAN_VIDEO
        self.s, self.ts = int(cfg.get("scale_factor_spatial", 8)), int(cfg.get("scale_factor_temporal", 4))
        if self.h % self.s or self.w % self.s or (self.t - 1) % self.ts:
            raise ValueError(f"[bench vae] video {self.h}x{self.w}x{self.t}: H and W must be multiples of {self.s} "
                             f"and T - 1 of {self.ts}")
        self.default_tiles = [WAN_TILE]
        self.size = [self.h, self.w, self.t]

    def inputs(self, rng):
        z, lt = self.cfg.get("z_dim", 16), 1 + (self.t - 1) // self.ts
        return {"decode": rng.randn(1, z, lt, self.h // self.s, self.w // self.s).astype(np.float32),
                "encode": rng.uniform(-1, 1, (1, 3, self.t, self.h, self.w)).astype(np.float32)}

    def name(self, op, tile):
        return f"{op} {self.h}x{self.w}x{self.t} tile {tile}"

    def tiled(self, op, tile):
        return self.h > tile or self.w > tile  # in latents for decode: the same test, divided by s

    def live(self, op, tile, side):
        peak = side.get("tensor_peak_bytes", 0)
        return self.wbytes + peak, (f"weights {self.wbytes / 2**20:.0f} MiB + kiln's allocator peak of live tensors "
                                    f"during the call ({peak / 2**20:.0f} MiB, measured)")

    def describe(self):
        cfg = self.cfg
        return {"class": "AutoencoderKLWan", "base_dim": cfg.get("base_dim"), "dim_mult": cfg.get("dim_mult"),
                "z_dim": cfg.get("z_dim"), "num_res_blocks": cfg.get("num_res_blocks"),
                "patch_size": cfg.get("patch_size")}


def _bench_vae(work, model, quick, image, tiles, ops, threads, repeat, peer_python, kiln_only, video):
    import kiln

    if model is None and quick:
        model = work
        _make_quick_model(model)
    model = model or DEFAULT_MODEL
    if not os.path.isfile(os.path.join(model, "config.json")):
        raise FileNotFoundError(f"[bench vae] no model in {model}: build it with "
                                "`<python with diffusers> scripts/make_bench_vae.py --out DIR` (or pass --quick)")
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    wbytes = _weight_bytes(model)
    wan = cfg.get("_class_name") == "AutoencoderKLWan"
    cases = _VideoCases(cfg, video, wbytes) if wan else _ImageCases(cfg, image, quick, wbytes)
    tiles = tiles or cases.default_tiles
    torch_py, why_torch = (None, "--kiln-only") if kiln_only else _torch_python(peer_python)
    inputs = cases.inputs(np.random.RandomState(0))
    results, missing, peers = [], [], {}
    for op in ops:
        npy = os.path.join(work, op + ".npy")
        np.save(npy, inputs[op])
        for tile in tiles:
            name = cases.name(op, tile)
            side = {"model": model, "op": op, "input": npy, "tile": tile, "threads": threads, "repeat": repeat}
            k, why = _run_side(sys.executable, dict(side, side="kiln"), False)
            if k is None:
                missing.append({"name": name, "why": "kiln: " + why})
                continue
            live, note = cases.live(op, tile, k)
            e = {"name": name, "op": op, "image": cases.size, "tile": tile, "tiled": cases.tiled(op, tile),
                 "input_shape": list(inputs[op].shape), "output_shape": k["output_shape"], "unit": "s/call",
                 "median_s": statistics.median(k["times_s"]), "min_s": min(k["times_s"]),
                 "max_s": max(k["times_s"]), "cpu_s": statistics.median(k["cpu_s"]), "repeat": repeat,
                 "peak_rss_bytes": k["peak_rss_bytes"], "peak_delta_bytes": k["peak_rss_bytes"] - k["rss_before_bytes"],
                 "rss_before_bytes": k["rss_before_bytes"], "tensor_peak_bytes": k.get("tensor_peak_bytes"),
                 "live_set_bytes": live, "live_set_note": note,
                 "peak_over_live_set": k["peak_rss_bytes"] / live, "peer_median_s": {}, "peer_peak_rss_bytes": {},
                 "peer_peak_delta_bytes": {}}
            if torch_py:
                t, why = _run_side(torch_py, dict(side, side="torch"), True)
                if t is None:
                    missing.append({"name": name + " (torch)", "why": why})
                else:
                    peers["torch"] = {k2: t[k2] for k2 in ("torch_version", "diffusers_version", "threads", "onednn")}
                    e["peer_median_s"]["torch"] = statistics.median(t["times_s"])
                    e["peer_cpu_s"] = {"torch": statistics.median(t["cpu_s"])}
                    e["cpu_speedup_vs_torch"] = e["peer_cpu_s"]["torch"] / e["cpu_s"]
                    e["peer_peak_rss_bytes"]["torch"] = t["peak_rss_bytes"]
                    e["peer_peak_delta_bytes"]["torch"] = t["peak_rss_bytes"] - t["rss_before_bytes"]
                    e["speedup_vs_torch"] = e["peer_median_s"]["torch"] / e["median_s"]
                    e["peak_ratio_vs_torch"] = e["peak_rss_bytes"] / t["peak_rss_bytes"]
                    e["peer_output_mean_abs"] = {"torch": t["output_mean_abs"]}
            e["output_mean_abs"] = k["output_mean_abs"]
            results.append(e)
    if torch_py is None:
        missing.append({"name": "peer torch", "why": why_torch})
    return {
        "command": "bench vae (python)",
        "kiln_version": getattr(kiln, "__version__", None),
        "python_version": platform.python_version(),
        "model": dict(cases.describe(), path=model, weight_bytes=wbytes),
        "threads": threads,
        "peers": peers,
        "repeat": repeat,
        "quick": quick,
        "overlap": OVERLAP,
        "timing_rule": "each side runs in its own fresh process; the model is loaded before timing and "
                       "every call is timed (no warm-up call)",
        "results": results,
        "missing": missing,
    }


def _mib(b):
    return f"{b / 2**20:.0f}"


def _print_table(doc):
    print(f"{'case':30s} {'kiln s':>7s} {'torch s':>7s} {'speedup':>7s} {'cpu spd':>7s} {'kiln MiB':>8s} "
          f"{'torch MiB':>9s} {'k/t':>5s} {'kiln +MiB':>9s} {'torch +MiB':>10s} {'live MiB':>8s} {'k/live':>6s}")
    for r in doc["results"]:
        pt, pm = r["peer_median_s"].get("torch"), r["peer_peak_rss_bytes"].get("torch")
        row = f"{r['name']:30s} {r['median_s']:7.2f} "
        row += (f"{pt:7.2f} {r['speedup_vs_torch']:6.2f}x {r['cpu_speedup_vs_torch']:6.2f}x " if pt else
                f"{'-':>7s} {'-':>7s} {'-':>7s} ")
        row += f"{_mib(r['peak_rss_bytes']):>8s} "
        row += f"{_mib(pm):>9s} {r['peak_ratio_vs_torch']:5.2f} " if pm else f"{'-':>9s} {'-':>5s} "
        row += f"{_mib(r['peak_delta_bytes']):>9s} "
        row += f"{_mib(r['peer_peak_delta_bytes']['torch']):>10s} " if pm else f"{'-':>10s} "
        print(row + f"{_mib(r['live_set_bytes']):>8s} {r['peak_over_live_set']:6.2f}")
    print("speedup = torch time / kiln time (wall; cpu spd: user+system CPU seconds); MiB = peak RSS during the "
          "calls (weights and runtime included), +MiB = its part above the RSS before the first call; live = the "
          "least the computation needs (python -m kiln.bench_vae --help)")
    for m in doc["missing"]:
        print(f"  not measured: {m['name']} ({m['why']})")


def _video(text):
    try:
        h, w, t = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HxWxT (e.g. 480x832x17), got {text!r}") from None
    if min(h, w, t) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return h, w, t


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kiln.bench_vae", description=__doc__.splitlines()[0],
                                epilog="\n".join(__doc__.splitlines()[2:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--model", default=None, help=f"diffusers-format AutoencoderKL directory (default {DEFAULT_MODEL})")
    p.add_argument("--image", type=int, default=None, help="image side in pixels (default 1024; --quick 256)")
    p.add_argument("--video", type=_video, default=None,
                   help="Wan models: HxWxT video size (default %dx%dx%d)" % WAN_VIDEO)
    p.add_argument("--tile", type=int, action="append", default=None,
                   help="tile side in pixels, repeatable (default: the config's sample_size and image/2; Wan: 256)")
    p.add_argument("--op", choices=["decode", "encode"], action="append", default=None, help="default: both")
    p.add_argument("--repeat", type=int, default=1, help="timed calls per case (default 1)")
    p.add_argument("--quick", action="store_true", help="a tiny model built by kiln, 256x256: a smoke run")
    p.add_argument("--threads", type=int, default=2, help="threads of each side (default 2)")
    p.add_argument("--peer-python", default=None, help="a Python with torch + diffusers, when not importable here")
    p.add_argument("--kiln-only", action="store_true", help="skip the torch side")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    doc = bench_vae(args.model, args.quick, args.image, args.tile, tuple(args.op or ("decode", "encode")),
                    args.threads, args.repeat, args.peer_python, args.kiln_only, args.video)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
