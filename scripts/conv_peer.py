"""kiln's convolutions beside torch's on the CPU, in one process.

Run with a Python that has torch, kiln on its path:
    PYTHONPATH=.venv/lib/python3.11/site-packages python_with_torch scripts/conv_peer.py [--threads 2]
Each case times the forward and forward + backward (gradients of input and
weight for a given output gradient) of both libraries on the same float32
data, called in turn, and prints the medians and kiln's speed relative to torch
(> 1: kiln is faster).
"""

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as TF

import kiln
import kiln.nn.functional as KF

# name, nd, x shape, w shape, kwargs, channels_last
CASES = [
    ("whisper conv1", 1, (1, 80, 3000), (384, 80, 3), dict(padding=1), False),
    ("whisper conv2", 1, (1, 384, 3000), (384, 384, 3), dict(padding=1, stride=2), False),
    ("mamba dw causal", 1, (1, 2048, 1024), (2048, 1, 4), dict(padding=3, groups=2048), False),
    ("conv2d 128x128 c128", 2, (1, 128, 128, 128), (128, 128, 3, 3), dict(padding=1), False),
    ("conv2d 32x32 c512", 2, (1, 512, 32, 32), (512, 512, 3, 3), dict(padding=1), False),
    ("conv2d 128x128 c128 NHWC", 2, (1, 128, 128, 128), (128, 128, 3, 3), dict(padding=1), True),
    ("conv2d 32x32 c512 NHWC", 2, (1, 512, 32, 32), (512, 512, 3, 3), dict(padding=1), True),
]


def median_times(fa, fb, reps, warmup=2):
    """Medians of fa's and fb's times, the two called in turn (a busy machine slows both alike)."""
    for _ in range(warmup):
        fa()
        fb()
    ta, tb = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        fa()
        t1 = time.perf_counter()
        fb()
        t2 = time.perf_counter()
        ta.append(t1 - t0)
        tb.append(t2 - t1)
    return statistics.median(ta), statistics.median(tb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="", help="substring of the case names to run")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    kiln.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    print(f"threads={a.threads} reps={a.reps} torch {torch.__version__} kiln {kiln.__version__}")
    print(f"{'case':28s} {'kiln fwd':>9s} {'torch fwd':>9s} {'ratio':>6s}  {'kiln f+b':>9s} {'torch f+b':>9s} {'ratio':>6s}")
    for name, nd, xs, ws, kw, cl in CASES:
        if a.only and a.only not in name:
            continue
        x = rng.standard_normal(xs, dtype=np.float32)
        w = rng.standard_normal(ws, dtype=np.float32) * 0.1
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        kx, kw_ = kiln.tensor(x), kiln.tensor(w)
        if cl:
            tx = tx.contiguous(memory_format=torch.channels_last)
            kx = kx.contiguous(memory_format=kiln.channels_last)
        tfn = getattr(TF, f"conv{nd}d")
        kfn = getattr(KF, f"conv{nd}d")
        with torch.no_grad():
            ty = tfn(tx, tw, **kw)
        ky = kfn(kx, kw_, **kw)
        err = float(np.abs(np.asarray(ky) - ty.numpy()).max())
        g = rng.standard_normal(tuple(ty.shape), dtype=np.float32)
        tg = torch.from_numpy(g)
        kg = kiln.tensor(g)
        if cl:
            tg = tg.contiguous(memory_format=torch.channels_last)
            kg = kg.contiguous(memory_format=kiln.channels_last)
        txr, twr = tx.clone().requires_grad_(), tw.clone().requires_grad_()
        kxr, kwr = kx.clone().requires_grad_(), kw_.clone().requires_grad_()

        def t_fwd():
            with torch.no_grad():
                tfn(tx, tw, **kw)

        def k_fwd():
            kfn(kx, kw_, **kw)

        def t_fb():
            torch.autograd.grad([tfn(txr, twr, **kw)], [txr, twr], [tg])

        def k_fb():
            kiln.autograd.grad([kfn(kxr, kwr, **kw)], [kxr, kwr], [kg])

        kf, tf = median_times(k_fwd, t_fwd, a.reps)
        kb, tb = median_times(k_fb, t_fb, a.reps)
        print(f"{name:28s} {kf*1e3:8.2f}ms {tf*1e3:8.2f}ms {tf/kf:6.2f}  {kb*1e3:8.2f}ms {tb*1e3:8.2f}ms {tb/kb:6.2f}"
              f"  (max|diff| {err:.1e})", flush=True)


if __name__ == "__main__":
    main()
