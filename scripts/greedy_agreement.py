#!/usr/bin/env python3
"""How far bf16, FP8 and native greedy decoding follow float32, over a set of prompts.

For each prompt, every weight format decodes greedily from a fresh cache; the table gives the
first token where bf16 / FP8 / native (a GGUF's blocks as stored; the same as fp8 for other
models) leave the float32 continuation (N = never within --tokens) and
float32's margin between its top two logits at that token (a small margin is a near-tie that
any rounding can flip). The last lines count the prompts that agree all the way.

    .venv/bin/python scripts/greedy_agreement.py [--model PATH] [--tokens 32] [--kv-dtype float32]
                                                 [--prompts FILE] [--json]

MODEL defaults to kiln's default model (fetched on first use). --prompts takes one prompt per
line; without it a fixed list of 16 short English and code prompts is used.
"""
import argparse
import json
import sys

import numpy as np

import kiln

PROMPTS = [
    "The capital of Germany is",
    "Once upon a time",
    "The theory of relativity states that",
    "Here is a recipe for pancakes:",
    "def fibonacci(n):",
    "The best way to learn a new language is",
    "In 1492, Columbus",
    "Water boils at",
    "The mitochondria is",
    "My favourite book is",
    "The quick brown fox",
    "Photosynthesis is the process",
    "To be or not to be",
    "The stock market",
    "Artificial intelligence will",
    "The weather today is",
]

FORMATS = ("bf16", "fp8", "native")


def greedy(model, ids, n):
    """n greedy tokens after ids, and float32's top-2 margin at each step."""
    model.reset()
    logits = np.asarray(model.forward(ids))[-1]
    out, margins = [], []
    for _ in range(n):
        top2 = np.partition(logits, -2)[-2:]
        margins.append(float(top2[1] - top2[0]))
        t = int(np.argmax(logits))
        out.append(t)
        logits = np.asarray(model.forward([t]))[-1]
    return out, margins


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="model path (default: kiln's default model)")
    ap.add_argument("--tokens", type=int, default=32, help="greedy tokens per prompt (default 32)")
    ap.add_argument("--kv-dtype", default=None, choices=["float32", "bfloat16", "float16"],
                    help="KV cache dtype for every format (default: the runtime's)")
    ap.add_argument("--prompts", help="a file with one prompt per line")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    if a.tokens < 1:
        sys.exit("greedy_agreement: --tokens must be >= 1")
    prompts = PROMPTS
    if a.prompts:
        with open(a.prompts, encoding="utf-8") as f:
            prompts = [line.rstrip("\n") for line in f if line.strip()]
    kv = getattr(kiln, a.kv_dtype) if a.kv_dtype else None
    models = {d: kiln.llm.load(a.model, dtype=d, kv_dtype=kv) for d in ("f32",) + FORMATS}
    rows = []
    for p in prompts:
        ids = models["f32"].tokenizer.encode(p)
        ref, margins = greedy(models["f32"], ids, a.tokens)
        row = {"prompt": p}
        for d in FORMATS:
            got, _ = greedy(models[d], ids, a.tokens)
            first = next((i for i, (x, y) in enumerate(zip(ref, got)) if x != y), None)
            row[d] = {"first_difference": first,
                      "f32_top2_margin": None if first is None else margins[first]}
        rows.append(row)
    summary = {d: sum(r[d]["first_difference"] is None for r in rows) for d in FORMATS}
    if a.json:
        print(json.dumps({"tokens": a.tokens, "kv_dtype": a.kv_dtype, "prompts": len(rows),
                          "agree_all_the_way": summary, "rows": rows}, indent=2))
        return
    print(f"{'prompt':40s}" + "".join(f" {d:>16s}" for d in FORMATS) + "   (first differing token, f32 top-2 margin)")
    for r in rows:
        cells = []
        for d in FORMATS:
            f = r[d]["first_difference"]
            cells.append(f"{'N':>4s}{'':8s}" if f is None else f"{f:4d} ({r[d]['f32_top2_margin']:5.2f})")
        print(f"{r['prompt'][:40]:40s}" + "".join(f" {c:>16s}" for c in cells))
    for d in FORMATS:
        print(f"{d}: {summary[d]} of {len(rows)} prompts follow float32 for all {a.tokens} tokens")


if __name__ == "__main__":
    main()
