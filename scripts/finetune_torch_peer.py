#!/usr/bin/env python3
"""The kiln.finetune LoRA recipe in PyTorch + PEFT on the same GGUF weights and the
same token batches, to compare training loss and held-out perplexity with kiln's.

Two steps (kiln and torch need not share an environment):
  1. with kiln:   python scripts/finetune_torch_peer.py dump MODEL.gguf TRAIN.txt HELDOUT.txt batches.npz \\
                      --steps 100 --batch 4 --seq-len 128 --seed 0
  2. with torch:  python scripts/finetune_torch_peer.py train MODEL.gguf batches.npz --lr 2e-4 --rank 8
     (needs torch, peft, numpy and the gguf package; a small Llama written here holds the weights)
"""

import argparse
import json
import math
import sys
import time

import numpy as np


def dump(a):
    import kiln
    from kiln import finetune_data as fd

    tok = kiln.Tokenizer.from_file(a.model)
    train = fd.load_examples(a.train, tok, a.seq_len)
    held = fd.load_examples(a.heldout, tok, a.seq_len)
    pad = tok.pad_token_id if tok.pad_token_id is not None and tok.pad_token_id >= 0 else tok.eos_token_id

    def pack(seqs):
        inp, lab = fd.collate(seqs, pad)
        return inp.numpy(), lab.numpy()

    out = {}
    for s in range(a.steps):
        idx = fd.batch_order(len(train), a.batch, s, a.seed)
        out[f"train_{s}_in"], out[f"train_{s}_lab"] = pack([train[i] for i in idx])
    for i in range(0, len(held), a.batch):
        out[f"eval_{i}_in"], out[f"eval_{i}_lab"] = pack(held[i:i + a.batch])
    np.savez(a.out, **out)


def _gguf_weights(path):
    import gguf
    import torch

    r = gguf.GGUFReader(path)
    kv = {f.name: f for f in r.fields.values()}

    def val(k):
        f = kv[k]
        return f.parts[f.data[0]].tolist()[0]

    cfg = dict(n_layer=val("llama.block_count"), n_head=val("llama.attention.head_count"),
               n_kv=val("llama.attention.head_count_kv"), eps=val("llama.attention.layer_norm_rms_epsilon"),
               theta=val("llama.rope.freq_base"))
    w = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        a = a.reshape([int(x) for x in reversed(t.shape)]) if a.ndim == 1 and len(t.shape) > 1 else a
        x = torch.from_numpy(np.ascontiguousarray(a))
        # llama.cpp's converter interleaved the rope pairs of Q/K rows; put them back in rotate-half order.
        if t.name.endswith(("attn_q.weight", "attn_k.weight")):
            h = cfg["n_head"] if "attn_q" in t.name else cfg["n_kv"]
            x = x.reshape(h, x.shape[0] // h // 2, 2, -1).transpose(1, 2).reshape(x.shape)
        w[t.name] = x
    return cfg, w


def train(a):
    import torch
    import torch.nn.functional as F
    from peft import LoraConfig, get_peft_model
    from torch import nn

    torch.manual_seed(a.seed)
    cfg, w = _gguf_weights(a.model)

    def lin(name):
        m = nn.Linear(w[name].shape[1], w[name].shape[0], bias=False)
        m.weight = nn.Parameter(w[name], requires_grad=False)
        return m

    class Attn(nn.Module):
        def __init__(self, i):
            super().__init__()
            p = f"blk.{i}."
            self.q_proj, self.k_proj = lin(p + "attn_q.weight"), lin(p + "attn_k.weight")
            self.v_proj, self.o_proj = lin(p + "attn_v.weight"), lin(p + "attn_output.weight")

    class Layer(nn.Module):
        def __init__(self, i):
            super().__init__()
            p = f"blk.{i}."
            self.self_attn = Attn(i)
            self.gate_proj, self.up_proj = lin(p + "ffn_gate.weight"), lin(p + "ffn_up.weight")
            self.down_proj = lin(p + "ffn_down.weight")
            self.n1, self.n2 = w[p + "attn_norm.weight"], w[p + "ffn_norm.weight"]

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Layer(i) for i in range(cfg["n_layer"]))
            self.emb, self.norm = w["token_embd.weight"], w["output_norm.weight"]
            d = self.layers[0].self_attn.q_proj.weight.shape[0] // cfg["n_head"]
            self.d = d
            self.inv = 1.0 / cfg["theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d)

        def forward(self, ids):
            B, T = ids.shape
            ang = torch.arange(T, dtype=torch.float64)[:, None] * self.inv[None]
            cos = torch.cat([ang.cos(), ang.cos()], -1).float()
            sin = torch.cat([ang.sin(), ang.sin()], -1).float()

            def rope(x):  # [B, h, T, d], rotate-half pairs
                x1, x2 = x[..., : self.d // 2], x[..., self.d // 2:]
                return x * cos + torch.cat([-x2, x1], -1) * sin

            def rms(x, g):
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg["eps"]) * g

            x = F.embedding(ids, self.emb)
            nh, nkv = cfg["n_head"], cfg["n_kv"]
            for L in self.layers:
                h = rms(x, L.n1)
                A = L.self_attn
                q = rope(A.q_proj(h).view(B, T, nh, self.d).transpose(1, 2))
                k = rope(A.k_proj(h).view(B, T, nkv, self.d).transpose(1, 2))
                v = A.v_proj(h).view(B, T, nkv, self.d).transpose(1, 2)
                k, v = k.repeat_interleave(nh // nkv, 1), v.repeat_interleave(nh // nkv, 1)
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + A.o_proj(o.transpose(1, 2).reshape(B, T, nh * self.d))
                h = rms(x, L.n2)
                x = x + L.down_proj(F.silu(L.gate_proj(h)) * L.up_proj(h))
            return rms(x, self.norm) @ self.emb.T

    model = get_peft_model(Llama(), LoraConfig(r=a.rank, lora_alpha=a.alpha or 2 * a.rank,
                                               target_modules=["q_proj", "v_proj"], lora_dropout=0.0))
    data = np.load(a.batches)
    steps = sorted(int(k.split("_")[1]) for k in data.files if k.startswith("train_") and k.endswith("_in"))
    evals = sorted(int(k.split("_")[1]) for k in data.files if k.startswith("eval_") and k.endswith("_in"))

    def loss_of(prefix, i):
        inp = torch.from_numpy(data[f"{prefix}_{i}_in"])
        lab = torch.from_numpy(data[f"{prefix}_{i}_lab"])
        logits = model(inp)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), lab.reshape(-1), ignore_index=-100), lab

    def evaluate():
        tot, n = 0.0, 0
        with torch.no_grad():
            for i in evals:
                loss, lab = loss_of("eval", i)
                c = int((lab != -100).sum())
                tot, n = tot + loss.item() * c, n + c
        return tot / n, math.exp(tot / n)

    before = evaluate()
    print(f"held-out before: loss {before[0]:.4f} ppl {before[1]:.3f}", file=sys.stderr)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=a.lr, weight_decay=0.0)
    losses = []
    t0 = time.perf_counter()
    for s in steps:
        opt.zero_grad()
        loss, _ = loss_of("train", s)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        print(f"step {s + 1}/{len(steps)} loss {losses[-1]:.4f} {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    after = evaluate()
    print(json.dumps({"train_loss_first": losses[0], "train_loss_last": losses[-1], "eval_loss_before": before[0],
                      "eval_ppl_before": before[1], "eval_loss_after": after[0], "eval_ppl_after": after[1]}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("model")
    d.add_argument("train")
    d.add_argument("heldout")
    d.add_argument("out")
    d.add_argument("--steps", type=int, default=100)
    d.add_argument("--batch", type=int, default=4)
    d.add_argument("--seq-len", type=int, default=128)
    d.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("train")
    t.add_argument("model")
    t.add_argument("batches")
    t.add_argument("--lr", type=float, default=2e-4)
    t.add_argument("--rank", type=int, default=8)
    t.add_argument("--alpha", type=float, default=None)
    t.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    dump(a) if a.cmd == "dump" else train(a)


if __name__ == "__main__":
    main()
