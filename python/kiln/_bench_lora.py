"""LoRA fine-tuning steps for ``kiln bench train``: kiln.finetune's recipe on the
default model (SmolLM2-135M, float32, LoRA r=8 alpha=16 on q_proj,v_proj, AdamW
lr 2e-4, next-token cross-entropy) beside torch + peft on the same weights.

Two cases, each side in its own fresh subprocess (so that one side's allocations
never count against the other, and peak RSS is the step's own):

* ``lora step B4 T128 (finetune recipe)``: the batches kiln finetune trains on
  (data/finetune/train.txt, seed 0); median step time after a warm-up step, and
  the losses of both sides (same initial adapter, same batches: they should agree).
* ``lora step B1 T512``: one sequence of 512 tokens; step time and peak memory:
  ``peak_rss_mib`` (ru_maxrss after the first step) and ``step_peak_extra_mib``
  (that minus the RSS after loading the model, before the step). Both sides hold
  every weight resident before that RSS is taken (torch's lazily mapped
  safetensors are read through once), so the weights count on both sides alike.

torch loads the directory ``kiln convert default DIR --dtype f32`` writes with
transformers and the initial adapter kiln saved with peft; it never imports kiln.
As a script (``python _bench_lora.py`` / ``python -m kiln._bench_lora``) this
module reads a side's config as JSON on stdin and prints its figures as JSON.
"""

import json
import os
import resource
import sys
import time

RECIPE = {"rank": 8, "alpha": 16, "target": ["q_proj", "v_proj"], "lr": 2e-4, "seed": 0}
CASES = [  # (name, batch, seq)
    ("lora step B4 T128 (finetune recipe)", 4, 128),
    ("lora step B1 T512", 1, 512),
]
QUICK_CASES = [("lora step B2 T16 (finetune recipe)", 2, 16), ("lora step B1 T32", 1, 32)]
IGNORE = -100


def _rss_mib():
    """Resident set size now (Linux /proc; elsewhere the peak so far)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return _peak_mib()


def _peak_mib():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 2**20 if sys.platform == "darwin" else r / 2**10  # bytes on macOS, KiB on Linux


def _steps(step, batches, rss_imports):
    """Runs step(inp, lab) -> loss float over batches; times, losses and memory."""
    mem = {"rss_after_imports_mib": rss_imports, "rss_before_step_mib": _rss_mib(),
           "load_peak_rss_mib": _peak_mib()}
    times, losses = [], []
    for i, (inp, lab) in enumerate(batches):
        t0 = time.perf_counter()
        losses.append(step(inp, lab))
        times.append(time.perf_counter() - t0)
        if i == 0:
            mem["peak_rss_mib"] = _peak_mib()
            mem["step_peak_extra_mib"] = mem["peak_rss_mib"] - mem["rss_before_step_mib"]
            # ru_maxrss only grows: when loading peaked higher, the step's own peak is hidden
            mem["peak_is_load"] = mem["peak_rss_mib"] <= mem["load_peak_rss_mib"]
    return {"step_s": times, "losses": losses, "memory": mem}


def kiln_side(cfg):
    import kiln
    from kiln import finetune
    from kiln.llm_train import load_trainable
    from kiln.nn import lora

    rss_imports = _rss_mib()
    if cfg.get("threads"):
        kiln.set_num_threads(cfg["threads"])
    kiln.manual_seed(RECIPE["seed"])
    model = load_trainable(cfg.get("gguf"), dtype=kiln.float32)
    ad = cfg["adapter_dir"]
    if os.path.exists(os.path.join(ad, "adapter_config.json")):
        lora.load(model, ad)
    else:  # the first run draws the adapter (as kiln finetune does) and saves it for the others
        lora.apply(model, r=RECIPE["rank"], alpha=RECIPE["alpha"], target=tuple(RECIPE["target"]),
                   seed=RECIPE["seed"])
        lora.save_pretrained(model, ad)
    opt = kiln.optim.AdamW(lora.parameters(model), lr=RECIPE["lr"], weight_decay=0.0)
    model.train()
    batches = [(kiln.tensor(i, dtype=kiln.int64), kiln.tensor(lb, dtype=kiln.int64)) for i, lb in cfg["batches"]]

    def step(inp, lab):
        opt.zero_grad()
        loss = finetune.loss_fn(model, inp, lab)
        loss.backward()
        opt.step()
        return loss.item()

    out = _steps(step, batches, rss_imports)
    out["version"] = kiln.__version__
    out["threads"] = kiln.get_num_threads()
    return out


def torch_side(cfg):
    import torch
    import transformers
    from peft import PeftModel

    rss_imports = _rss_mib()
    if cfg.get("threads"):
        torch.set_num_threads(cfg["threads"])
    torch.manual_seed(RECIPE["seed"])
    major = int(transformers.__version__.split(".")[0])
    kw = {"dtype": torch.float32} if major >= 5 else {"torch_dtype": torch.float32}
    base = transformers.AutoModelForCausalLM.from_pretrained(cfg["hf_dir"], **kw)
    model = PeftModel.from_pretrained(base, cfg["adapter_dir"], is_trainable=True)
    with torch.no_grad():  # transformers may map the file lazily: page every weight in before the RSS is taken
        for p in model.parameters():
            p.sum()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=RECIPE["lr"], weight_decay=0.0)
    model.train()
    batches = [(torch.tensor(i, dtype=torch.int64), torch.tensor(lb, dtype=torch.int64)) for i, lb in cfg["batches"]]

    def step(inp, lab):
        opt.zero_grad()
        logits = model(input_ids=inp).logits  # [B, T, V]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), lab.reshape(-1),
                                                 ignore_index=IGNORE)
        loss.backward()
        opt.step()
        return loss.item()

    out = _steps(step, batches, rss_imports)
    import peft

    out["version"] = f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}"
    out["threads"] = torch.get_num_threads()
    return out


def main():
    cfg = json.load(sys.stdin)
    out = kiln_side(cfg) if cfg["side"] == "kiln" else torch_side(cfg)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


# ---- the driver, run inside kiln.bench_train (kiln installed) ----

def _data_file():
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.getcwd(), os.path.join(here, "..", "..")):
        p = os.path.join(root, "data", "finetune", "train.txt")
        if os.path.exists(p):
            return os.path.normpath(p)
    return None


def _batches(tok, batch, seq, steps, path):
    """kiln finetune's batches (its split and batch order, seed 0) as token-id lists,
    or seeded random tokens when the data file is not found."""
    from . import finetune_data as fd

    if path:
        train, _ = fd.split(fd.load_examples(path, tok, seq), 0.1, RECIPE["seed"])
        full = [e for e in train if len(e) == seq + 1]
        if len(full) >= batch:
            pad = tok.pad_token_id if tok.pad_token_id is not None and tok.pad_token_id >= 0 else tok.eos_token_id
            out = []
            for s in range(steps):
                inp, lab = fd.collate([train[i] for i in fd.batch_order(len(train), batch, s, RECIPE["seed"])], pad)
                out.append([inp.tolist(), lab.tolist()])
            return out, path
    import random

    rng = random.Random(RECIPE["seed"])
    out = []
    for _ in range(steps):
        seqs = [[rng.randrange(tok.vocab_size) for _ in range(seq + 1)] for _ in range(batch)]
        out.append([[s[:-1] for s in seqs], [s[1:] for s in seqs]])
    return out, "random tokens"


def _run(python, args, cfg):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} if cfg["side"] == "torch" else None
    p = subprocess.run([python] + args, input=json.dumps(cfg), capture_output=True, text=True, env=env)
    if p.returncode != 0:
        last = [ln for ln in p.stderr.splitlines() if ln.strip()]
        return None, f"{python} exited with {p.returncode}" + (f": {last[-1]}" if last else "")
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def _torch_python(peer_python):
    """(python with torch, transformers and peft, or None, why not)."""
    import importlib.util

    if all(importlib.util.find_spec(m) for m in ("torch", "transformers", "peft")):
        return sys.executable, None
    if peer_python:
        return peer_python, None
    return None, "torch, transformers and peft are not installed here; pass --peer-python PATH"


def _convert(dirname):
    import shutil
    import subprocess

    exe = os.path.join(os.path.dirname(sys.executable), "kiln")
    exe = exe if os.path.exists(exe) else shutil.which("kiln")
    if not exe:
        return "no kiln CLI next to this python or on PATH (needed for `kiln convert`)"
    p = subprocess.run([exe, "convert", "default", dirname, "--dtype", "f32"], capture_output=True, text=True)
    return None if p.returncode == 0 else f"kiln convert exited with {p.returncode}: {p.stderr.strip()[-200:]}"


def model_cached():
    from . import _C

    return os.path.exists(_C.llm_default_model_path())


def bench(quick, repeat, threads, peer_python=None):
    """(results, missing, peer description or None) for kiln.bench_train."""
    import statistics
    import tempfile

    from . import _C

    gguf = _C.llm_default_model_path()
    tok = _C.Tokenizer.from_file(gguf)
    path = _data_file()
    results, missing, peer = [], [], None
    tpy, why = _torch_python(peer_python)
    with tempfile.TemporaryDirectory(prefix="kiln-bench-lora-") as tmp:
        hf_dir, ad = os.path.join(tmp, "hf"), os.path.join(tmp, "adapter")
        if tpy and (why := _convert(hf_dir)):
            tpy = None
        if not tpy:
            missing.append({"name": "peer torch+peft (lora)", "why": why})
        for ci, (name, b, t) in enumerate(QUICK_CASES if quick else CASES):
            steps = 1 + (1 if quick else (repeat if ci == 0 else max(repeat // 2, 2)))
            batches, source = _batches(tok, b, t, steps, path)
            cfg = {"side": "kiln", "gguf": gguf, "hf_dir": hf_dir, "adapter_dir": ad, "batches": batches,
                   "threads": threads}
            k, err = _run(sys.executable, ["-m", "kiln._bench_lora"], cfg)
            if k is None:
                missing.append({"name": name, "why": err})
                continue
            e = {"name": name, "unit": "s/step", "median_s": statistics.median(k["step_s"][1:]),
                 "min_s": min(k["step_s"][1:]), "max_s": max(k["step_s"][1:]), "repeat": steps - 1,
                 "bytes": None, "gbps": None, "roof_gbps": None, "roof_fraction": None, "peer_median_s": {},
                 "batch": b, "seq": t, "data": source, "recipe": RECIPE, "dtype": "float32",
                 "warmup_steps": 1, "memory": {"kiln": k["memory"]}, "losses": {"kiln": k["losses"]},
                 "step_s": {"kiln": k["step_s"]}}
            if tpy:
                tr, err = _run(tpy, [os.path.abspath(__file__)], dict(cfg, side="torch"))
                if tr is None:
                    missing.append({"name": name + " (torch+peft)", "why": err})
                else:
                    peer = {"version": tr["version"], "threads": tr["threads"]}
                    e["peer_median_s"]["torch"] = statistics.median(tr["step_s"][1:])
                    e["speedup_vs_torch"] = e["peer_median_s"]["torch"] / e["median_s"]
                    e["memory"]["torch"] = tr["memory"]
                    e["losses"]["torch"] = tr["losses"]
                    e["step_s"]["torch"] = tr["step_s"]
                    e["max_abs_loss_diff"] = max(abs(a - c) for a, c in zip(k["losses"], tr["losses"]))
            results.append(e)
    return results, missing, peer


def table_lines(doc):
    """Peak-memory lines for the LoRA cases of a bench_train doc."""
    out = []
    for r in doc["results"]:
        for side, m in r.get("memory", {}).items():
            out.append(f"  {r['name']} [{side}]: peak RSS {m['peak_rss_mib']:.0f} MiB, step peak "
                       f"+{m['step_peak_extra_mib']:.0f} MiB over {m['rss_before_step_mib']:.0f} MiB loaded "
                       f"({m['rss_after_imports_mib']:.0f} MiB of it before the model)"
                       + (" (the load's peak; the step's own is hidden)" if m["peak_is_load"] else ""))
        if "max_abs_loss_diff" in r:
            out.append(f"  {r['name']}: losses kiln {r['losses']['kiln'][0]:.4f}..{r['losses']['kiln'][-1]:.4f}, "
                       f"max |kiln - torch| {r['max_abs_loss_diff']:.2e}")
    return out


if __name__ == "__main__":
    sys.exit(main())
