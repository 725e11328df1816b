"""Training figures for ``kiln bench train``: ``python -m kiln.bench_train [--json]``.

Two kinds of case, each timed in kiln and, where torch is there, in torch side by
side (``peer_median_s["torch"]``, ``speedup_vs_torch`` = torch time / kiln time):

* ``mlp digits epoch``: one epoch of kiln.examples.train_digits' MLP (Linear(64,
  128)-ReLU-Dropout-Linear(128, 10), CrossEntropyLoss, Adam, batches of 32) over
  the 1437 training rows of scikit-learn's digits (random rows of the same shape
  when scikit-learn is missing). torch starts from kiln's initial weights and
  sees the same batches in the same order.
* ``cnn digits epoch``: the same for the example's CNN (the rows as [1, 8, 8]
  images, Conv2d(1, 32, 3, padding=1)-ReLU-MaxPool2d(2)-Conv2d(32, 64, 3,
  padding=1)-ReLU-MaxPool2d(2)-Flatten-Linear(256, 10), Adam lr 3e-3, batches
  of 32).
* ``block fwd+bwd ...``: one forward+backward step of a transformer-ish block,
  x + Wo(attention(split(Wqkv(rms_norm(x))))), softmax attention over H heads,
  loss mean(y**2), at a few sizes.
* ``lora step ...``: kiln finetune's LoRA step on the default model beside torch +
  peft, with each side's peak memory (kiln._bench_lora; on by default when the
  default model is cached, ``--no-lora`` skips it).

torch is timed in this process when it imports here, else under
``--peer-python PATH`` (a Python with torch and numpy; kiln need not be
installed there), else it is a missing column. ``kiln bench train`` runs this
module with the interpreter next to it and adds the machine description.
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import _bench_lora, _bench_train_torch

BLOCKS = [  # (batch, seq, dim, heads)
    (8, 64, 64, 4),
    (8, 128, 128, 4),
    (4, 256, 256, 8),
]
QUICK_BLOCKS = [(2, 16, 32, 2)]
LR, DROPOUT, BATCH = 1e-3, 0.1, 32


def _mlp_data():
    """(x float32 [n, 64], y int64 [n], source name)."""
    try:
        from .examples import train_digits

        x, y, _, _ = train_digits.load_split(0)
        return x, y, "scikit-learn digits"
    except ImportError:
        rng = np.random.RandomState(0)
        return rng.randn(1438, 64).astype(np.float32), rng.randint(0, 10, 1438).astype(np.int64), "random"


def _block_arrays(b, t, d, h):
    rng = np.random.RandomState(d + t)
    return {
        "norm": (1 + 0.1 * rng.randn(d)).astype(np.float32),
        "wqkv": (rng.randn(3 * d, d) / math.sqrt(d)).astype(np.float32),
        "wo": (rng.randn(d, d) / math.sqrt(d)).astype(np.float32),
        "x": rng.randn(b, t, d).astype(np.float32),
    }


def _kiln_epochs(kiln, model, weights, x, y, orders, lr):
    """Seconds of each epoch of Adam on `model` (its weights set from `weights`)."""
    from . import nn

    with kiln.no_grad():
        for name, p in model.named_parameters():
            p.copy_(kiln.tensor(weights[name]))
    opt = kiln.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = kiln.tensor(x), kiln.tensor(y)
    out = []
    for batches in orders:
        t0 = time.perf_counter()
        for idx in batches:
            i = kiln.tensor(idx)
            loss = loss_fn(model(xt[i]), yt[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss.item()
        out.append(time.perf_counter() - t0)
    return out


def _kiln_block_steps(kiln, case, arrays, steps):
    F = kiln.nn.functional
    ps = {k: kiln.tensor(v).requires_grad_() for k, v in arrays.items() if k != "x"}
    xt = kiln.tensor(arrays["x"])
    b, t, d, h = case["batch"], case["seq"], case["dim"], case["heads"]
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        for p in ps.values():
            p.grad = None
        hn = F.rms_norm(xt, (d,), ps["norm"], 1e-6)
        q, k, v = F.linear(hn, ps["wqkv"]).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = kiln.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d // h)), dim=-1)
        o = (att @ v).transpose(1, 2).reshape(b, t, d)
        loss = (xt + F.linear(o, ps["wo"])).square().mean()
        loss.backward()
        out.append(time.perf_counter() - t0)
    return out


def _entry(name, unit, samples, extra=None):
    med = statistics.median(samples)
    e = {"name": name, "unit": unit, "median_s": med, "min_s": min(samples), "max_s": max(samples),
         "repeat": len(samples), "bytes": None, "gbps": None, "roof_gbps": None, "roof_fraction": None,
         "peer_median_s": {}}
    e.update(extra or {})
    return e


def _torch_side(cfg, arrays, peer_python):
    """(doc or None, why-not)."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        return _bench_train_torch.run(torch, cfg, arrays), None
    if not peer_python:
        return None, "torch is not installed here; pass --peer-python PATH (a Python with torch)"
    with tempfile.TemporaryDirectory(prefix="kiln-bench-train-") as d:
        npz = os.path.join(d, "arrays.npz")
        np.savez(npz, **arrays)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        p = subprocess.run([peer_python, _bench_train_torch.__file__, npz], input=json.dumps(cfg),
                           capture_output=True, text=True, env=env)
    if p.returncode != 0:
        last = [ln for ln in p.stderr.splitlines() if ln.strip()]
        return None, f"{peer_python} exited with {p.returncode}" + (f": {last[-1]}" if last else "")
    return json.loads(p.stdout), None


def bench_train(repeat, quick, threads, peer_python=None, lora=None):
    import kiln

    if threads:
        kiln.set_num_threads(threads)
    epochs = 1 + (1 if quick else repeat)  # the first is a warm-up, not reported
    steps = 1 + (2 if quick else 5 * repeat)
    blocks = QUICK_BLOCKS if quick else BLOCKS
    results, missing = [], []

    x, y, source = _mlp_data()
    from .examples import train_digits

    kiln.manual_seed(0)
    init = train_digits.make_mlp(dropout=DROPOUT)
    weights = {n: p.detach().numpy().copy() for n, p in init.named_parameters()}
    kiln.manual_seed(0)
    cnn_weights = {n: p.detach().numpy().copy() for n, p in train_digits.make_cnn().named_parameters()}
    cnn_lr = train_digits.MODELS["cnn"][2]
    perms = np.stack([np.random.RandomState(e).permutation(len(x)) for e in range(epochs)])
    orders = [[perm[i:i + BATCH] for i in range(0, len(x), BATCH)] for perm in perms]
    arrays = {"x": x, "y": y, "order": perms}
    arrays.update({"mlp/" + n: w for n, w in weights.items()})
    arrays.update({"cnn/" + n: w for n, w in cnn_weights.items()})
    cases = []
    for b, t, d, h in blocks:
        name = f"B{b} T{t} D{d} H{h}"
        cases.append({"name": name, "batch": b, "seq": t, "dim": d, "heads": h})
        arrays.update({f"block/{name}/{k}": v for k, v in _block_arrays(b, t, d, h).items()})

    mlp_name, cnn_name = "mlp digits epoch", "cnn digits epoch"
    epoch_cases = [
        (mlp_name, lambda: train_digits.make_mlp(dropout=DROPOUT), weights, x, LR),
        (cnn_name, train_digits.make_cnn, cnn_weights, train_digits.as_input(x, "cnn"), cnn_lr),
    ]
    for name, make, w, xs, lr in epoch_cases:
        try:
            ep = _kiln_epochs(kiln, make(), w, xs, y, orders, lr)[1:]
            results.append(_entry(name, "s/epoch", ep, {"data": source, "rows": len(x), "batch_size": BATCH,
                                                        "steps_per_epoch": len(orders[0])}))
        except NotImplementedError as e:
            missing.append({"name": name, "why": str(e).splitlines()[0]})
    for case in cases:
        name = "block fwd+bwd " + case["name"]
        pre = "block/" + case["name"] + "/"
        try:
            st = _kiln_block_steps(kiln, case, {k[len(pre):]: v for k, v in arrays.items() if k.startswith(pre)},
                                   steps)[1:]
            results.append(_entry(name, "s/step", st, {k: case[k] for k in ("batch", "seq", "dim", "heads")}))
        except NotImplementedError as e:
            missing.append({"name": name, "why": str(e).splitlines()[0]})

    cfg = {"threads": kiln.get_num_threads(), "epochs": epochs, "batch_size": BATCH, "lr": LR, "dropout": DROPOUT,
           "cnn_lr": cnn_lr, "steps": steps, "blocks": cases}
    peer, why = _torch_side(cfg, arrays, peer_python)
    peers = {}
    if peer is None:
        missing.append({"name": "peer torch", "why": why})
    else:
        peers["torch"] = {"version": peer["torch_version"], "threads": peer["threads"]}
        timed = {mlp_name: peer["mlp_epoch_s"][1:], cnn_name: peer["cnn_epoch_s"][1:]}
        timed.update({"block fwd+bwd " + n: s[1:] for n, s in peer["block_step_s"].items()})
        for r in results:
            if r["name"] in timed:
                r["peer_median_s"]["torch"] = statistics.median(timed[r["name"]])
                r["speedup_vs_torch"] = r["peer_median_s"]["torch"] / r["median_s"]

    if lora is None:
        lora = _bench_lora.model_cached()
        if not lora:
            missing.append({"name": "lora steps", "why": "the default model is not cached (kiln generate fetches it)"})
    if lora:
        lr_results, lr_missing, lr_peer = _bench_lora.bench(quick, repeat, kiln.get_num_threads(), peer_python)
        results += lr_results
        missing += lr_missing
        if lr_peer:
            peers["torch+peft"] = lr_peer

    return {
        "command": "bench train (python)",
        "kiln_version": getattr(kiln, "__version__", None),
        "python_version": platform.python_version(),
        "threads": kiln.get_num_threads(),
        "peers": peers,
        "repeat": repeat,
        "quick": quick,
        "warmup_rule": "the first epoch / step of each case (kiln and torch alike) is a warm-up and not counted",
        "results": results,
        "missing": missing,
    }


def _print_table(doc):
    print(f"{'case':38s} {'kiln':>12s} {'torch':>12s} {'speedup':>8s}")
    for r in doc["results"]:
        pt = r["peer_median_s"].get("torch")
        print(f"{r['name']:38s} {r['median_s'] * 1e3:9.2f} ms "
              + (f"{pt * 1e3:9.2f} ms {r['speedup_vs_torch']:7.2f}x" if pt else f"{'-':>12s}"))
    for line in _bench_lora.table_lines(doc):
        print(line)
    for m in doc["missing"]:
        print(f"  not measured: {m['name']} ({m['why']})")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kiln.bench_train", description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--repeat", type=int, default=5,
                   help="timed epochs of the MLP and the CNN; 5x as many block steps (default 5)")
    p.add_argument("--quick", action="store_true", help="one epoch, tiny block: a smoke run, not a measurement")
    p.add_argument("--threads", type=int, default=0, help="kiln (and torch) threads (default: kiln's)")
    p.add_argument("--peer-python", default=None, help="a Python with torch, when torch is not importable here")
    p.add_argument("--lora", action=argparse.BooleanOptionalAction, default=None,
                   help="the LoRA fine-tuning steps on the default model (default: on when it is cached)")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    doc = bench_train(args.repeat, args.quick, args.threads, args.peer_python, args.lora)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_table(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
