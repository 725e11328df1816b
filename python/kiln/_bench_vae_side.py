"""One side of one `kiln bench vae` case, run in its own fresh process so that
its peak RSS (getrusage ru_maxrss) is that case's:

    python _bench_vae_side.py < {"side": "kiln" | "torch", "model": DIR,
        "op": "decode" | "encode", "input": NPY, "tile": PIXELS, "threads": N,
        "repeat": R}

kiln: kiln.models.AutoencoderKL.from_pretrained(DIR).decode(z, tiled=True,
tile_size=tile) (encode likewise); torch: diffusers' AutoencoderKL with
enable_tiling() and tile_sample_min_size = tile (so its decode tiles exactly
when kiln's does). A directory whose config names AutoencoderKLWan runs that
class on both sides, with tiles of `tile` pixels and stride int(tile * 0.75)
(diffusers' 256 / 192 at the default tile). kiln's side also reports the
allocator's peak of live tensor bytes during the calls (tensor_peak_bytes). Prints one JSON object: the wall and CPU times of the R calls, the RSS
before the first call and the peak RSS during the calls (the kernel's mark is
reset after loading), in bytes. Run by path, so the torch
side needs neither kiln nor the project's Python.
"""
import json
import resource
import sys
import time


def _rss_now():
    with open("/proc/self/statm") as f:
        import os

        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _cpu():
    """User + system CPU seconds of this process: on a shared machine wall time
    also counts the time spent waiting for a core, CPU time does not."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _reset_peak():
    """Resets the kernel's peak-RSS mark (Linux >= 4.0), so that the peak after
    this is the calls' own and not the model load's; False where it can't."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


WAN_OVERLAP = 0.25  # diffusers' Wan tiles: 256 pixels with stride 192


def _is_wan(model_dir):
    with open(f"{model_dir}/config.json", encoding="utf-8") as f:
        return json.load(f).get("_class_name") == "AutoencoderKLWan"


def _kiln(cfg, x):
    import kiln
    from kiln.models import AutoencoderKL, AutoencoderKLWan

    kiln.set_num_threads(cfg["threads"])
    wan = _is_wan(cfg["model"])
    model = (AutoencoderKLWan if wan else AutoencoderKL).from_pretrained(cfg["model"])
    t = kiln.tensor(x)
    tile = cfg["tile"]
    overlap = WAN_OVERLAP if wan else None

    def call():
        with kiln.no_grad():
            if cfg["op"] == "decode":
                out = model.decode(t, tiled=True, tile_size=tile, overlap=overlap)
            else:
                out = model.encode(t, tiled=True, tile_size=tile, overlap=overlap).mode()
        return list(out.shape), float(out.float().abs().mean().item())

    def tensor_peak():
        return kiln._C.memory_stats()["peak_bytes"]

    call.reset_tensor_peak = kiln._C.reset_peak_memory_stats
    call.tensor_peak = tensor_peak
    return call, {"kiln_version": getattr(kiln, "__version__", None), "threads": kiln.get_num_threads()}


def _torch(cfg, x):
    import torch
    from diffusers import AutoencoderKL, AutoencoderKLWan

    torch.set_num_threads(cfg["threads"])
    if _is_wan(cfg["model"]):
        model = AutoencoderKLWan.from_pretrained(cfg["model"]).eval()
        stride = int(cfg["tile"] * (1 - WAN_OVERLAP))
        model.enable_tiling(cfg["tile"], cfg["tile"], stride, stride)
    else:
        model = AutoencoderKL.from_pretrained(cfg["model"]).eval()
        model.enable_tiling()
        model.tile_sample_min_size = cfg["tile"]
        model.tile_latent_min_size = cfg["tile"] // (2 ** (len(model.config.block_out_channels) - 1))
    t = torch.from_numpy(x)

    def call():
        with torch.inference_mode():
            if cfg["op"] == "decode":
                out = model.decode(t).sample
            else:
                out = model.encode(t).latent_dist.mode()
        return list(out.shape), float(out.abs().mean())

    import diffusers

    return call, {"torch_version": torch.__version__, "diffusers_version": diffusers.__version__,
                  "threads": torch.get_num_threads(), "onednn": bool(torch.backends.mkldnn.is_available())}


def main():
    import numpy as np

    cfg = json.loads(sys.stdin.read())
    x = np.load(cfg["input"])
    call, info = (_kiln if cfg["side"] == "kiln" else _torch)(cfg, x)
    load_peak = _peak()
    if hasattr(call, "reset_tensor_peak"):
        call.reset_tensor_peak()
    reset = _reset_peak()
    rss_before = _rss_now()
    times, cpu = [], []
    for _ in range(cfg["repeat"]):
        t0, c0 = time.perf_counter(), _cpu()
        shape, mean_abs = call()
        times.append(time.perf_counter() - t0)
        cpu.append(_cpu() - c0)
    info.update(times_s=times, cpu_s=cpu, rss_before_bytes=rss_before, load_peak_rss_bytes=load_peak,
                peak_reset=reset, peak_rss_bytes=_peak(), output_shape=shape, output_mean_abs=mean_abs)
    if hasattr(call, "tensor_peak"):
        info["tensor_peak_bytes"] = call.tensor_peak()
    json.dump(info, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
