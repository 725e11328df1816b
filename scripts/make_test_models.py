#!/usr/bin/env python3
"""Write kiln's tiny test checkpoints and their reference logits.

Each model is a random-weight Hugging Face checkpoint written by transformers'
own ``save_pretrained`` (so names, shapes and config fields are exactly what the
ecosystem writes), small enough to commit. Beside it, ``reference.safetensors``
holds ``input_ids`` [1, T] (int64) and ``logits`` [1, T, vocab] (float32) that
transformers computed in float32 from the saved weights -- the oracle kiln's
runtime is checked against without needing torch at test time.

FP8 variants of the MoE model are written in the two published formats:
  fp8-block : quantization_config.quant_method "fp8", weight_block_size [128, 128],
              e4m3fn weights + float32 ``weight_scale_inv`` [ceil(N/128), ceil(K/128)]
              (Qwen3-*-FP8 / DeepSeek style);
  fp8-channel: compressed-tensors "float-quantized", e4m3fn weights + float32
              ``weight_scale`` [N, 1] (strategy "channel").
Their reference logits come from the dequantized weights.

With --default-model GGUF it also writes ``default_model_reference.safetensors``:
transformers' float32 logits for the default model (SmolLM2-135M-Instruct Q4_1 GGUF,
dequantized by transformers + gguf) on a fixed prompt -- ``input_ids`` [1, T],
``positions`` [P] and ``logits`` [P, vocab] at those positions -- and its greedy
continuation ``greedy_ids`` [1, T + 12].

Needs torch, transformers, safetensors, numpy (+ gguf, accelerate for the GGUF);
not a test dependency:
    python scripts/make_test_models.py tests/data/models [--default-model PATH.gguf]
"""
import argparse
import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForCausalLM, LlamaConfig, MixtralConfig, OlmoeConfig, Qwen2Config,
                          Qwen3Config, Qwen3MoeConfig)

SEED = 1234
T = 12  # prompt length of the reference
FP8_MAX = 448.0

COMMON = dict(vocab_size=256, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=256, initializer_range=0.08,
              tie_word_embeddings=False, rms_norm_eps=1e-6,
              bos_token_id=1, eos_token_id=2, pad_token_id=None)

MODELS = {
    "tiny-llama": lambda: LlamaConfig(**COMMON, intermediate_size=192, head_dim=32, rope_theta=500000.0,
                                      rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                        high_freq_factor=4.0,
                                                        original_max_position_embeddings=64)),
    "tiny-qwen2": lambda: Qwen2Config(**{**COMMON, "tie_word_embeddings": True}, intermediate_size=192,
                                      rope_theta=1000000.0),
    "tiny-qwen3": lambda: Qwen3Config(**COMMON, intermediate_size=192, head_dim=32, rope_theta=1000000.0),
    "tiny-qwen3-moe": lambda: Qwen3MoeConfig(**COMMON, intermediate_size=192, moe_intermediate_size=64,
                                             head_dim=32, num_experts=4, num_experts_per_tok=2,
                                             norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                                             rope_theta=1000000.0),
    "tiny-mixtral": lambda: MixtralConfig(**COMMON, intermediate_size=64, num_local_experts=4,
                                          num_experts_per_tok=2, rope_theta=1000000.0),
    "tiny-olmoe": lambda: OlmoeConfig(**COMMON, intermediate_size=64, num_experts=8, num_experts_per_tok=2,
                                      norm_topk_prob=False, rope_theta=10000.0),
}
FP8_BASE = "tiny-qwen3-moe"


def prompt_ids(vocab):
    g = np.random.default_rng(SEED)
    return torch.tensor(g.integers(0, vocab, size=(1, T)), dtype=torch.int64)


def reference_logits(model_dir):
    """Logits of the checkpoint in model_dir, computed in float32."""
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    ids = prompt_ids(model.config.vocab_size)
    with torch.no_grad():
        logits = model(ids).logits.float()
    return ids, logits


def write_reference(model_dir, ids, logits):
    save_file({"input_ids": ids.contiguous(), "logits": logits.contiguous()},
              str(Path(model_dir) / "reference.safetensors"))


def quantizable(name, tensor):
    """The linear weights an FP8 checkpoint stores in e4m3fn: not embeddings, norms, routers, lm_head."""
    return (name.endswith("_proj.weight") and tensor.dim() == 2)


def quantize_block(w, block=128):
    # w: [N, K] -> e4m3fn [N, K], scale_inv: [ceil(N/128), ceil(K/128)] with w ~= q * scale_inv
    n, k = w.shape
    bn, bk = math.ceil(n / block), math.ceil(k / block)
    q = torch.empty(n, k, dtype=torch.float8_e4m3fn)
    s = torch.empty(bn, bk, dtype=torch.float32)
    for i in range(bn):
        for j in range(bk):
            blk = w[i * block:(i + 1) * block, j * block:(j + 1) * block].float()
            amax = blk.abs().max().clamp(min=1e-12)
            s[i, j] = amax / FP8_MAX
            q[i * block:(i + 1) * block, j * block:(j + 1) * block] = (blk / s[i, j]).clamp(
                -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, s


def dequantize_block(q, s, block=128):
    scale = s.repeat_interleave(block, 0)[:q.shape[0]].repeat_interleave(block, 1)[:, :q.shape[1]]
    return q.float() * scale


def quantize_channel(w):
    # w: [N, K] -> e4m3fn [N, K], scale: [N, 1]
    amax = w.float().abs().amax(dim=1, keepdim=True).clamp(min=1e-12)
    s = amax / FP8_MAX
    return (w.float() / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), s


def write_fp8(src_dir, dst_dir, fmt):
    shutil.copytree(src_dir, dst_dir)
    (Path(dst_dir) / "reference.safetensors").unlink()
    weights = load_file(str(Path(src_dir) / "model.safetensors"))
    out, deq = {}, {}
    for name, w in weights.items():
        if not quantizable(name, w):
            out[name] = w
            deq[name] = w.float()
        elif fmt == "fp8-block":
            q, s = quantize_block(w)
            out[name], out[name + "_scale_inv"] = q, s
            deq[name] = dequantize_block(q, s)
        else:
            q, s = quantize_channel(w)
            out[name], out[name + "_scale"] = q, s
            deq[name] = q.float() * s
    save_file(out, str(Path(dst_dir) / "model.safetensors"), metadata={"format": "pt"})
    cfg_path = Path(dst_dir) / "config.json"
    cfg = json.loads(cfg_path.read_text())
    not_converted = ["lm_head"] + [f"model.layers.{i}.mlp.gate" for i in range(cfg["num_hidden_layers"])]
    if fmt == "fp8-block":
        cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic",
                                      "fmt": "e4m3", "weight_block_size": [128, 128],
                                      "modules_to_not_convert": not_converted}
    else:
        cfg["quantization_config"] = {
            "quant_method": "compressed-tensors", "format": "float-quantized",
            "quantization_status": "compressed", "ignore": not_converted,
            "config_groups": {"group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True,
                            "dynamic": False},
                "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                      "symmetric": True, "dynamic": True}}}}
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    return deq


DEFAULT_PROMPT = "The capital of France is Paris. The capital of Germany is"


def write_default_model_reference(gguf_path, out_dir):
    from transformers import AutoTokenizer
    gguf_path = Path(gguf_path)
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                 dtype=torch.float32).eval()
    ids = tok(DEFAULT_PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(ids).logits[0].float()
        greedy = model.generate(ids, max_new_tokens=12, do_sample=False)
    positions = torch.tensor([0, ids.shape[1] // 2, ids.shape[1] - 1], dtype=torch.int64)
    save_file({"input_ids": ids.contiguous(), "positions": positions,
               "logits": logits[positions].contiguous(), "greedy_ids": greedy.contiguous()},
              str(Path(out_dir) / "default_model_reference.safetensors"),
              metadata={"prompt": DEFAULT_PROMPT, "model": gguf_path.name})
    print("default model:", repr(tok.decode(greedy[0])))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="directory to write the models into (e.g. tests/data/models)")
    ap.add_argument("--default-model", type=Path, help="the default model's GGUF: also write its reference")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.default_model:
        write_default_model_reference(args.default_model, args.out)
    for name, make_config in MODELS.items():
        torch.manual_seed(SEED)
        model = AutoModelForCausalLM.from_config(make_config(), dtype=torch.float32)
        d = args.out / name
        if d.exists():
            shutil.rmtree(d)
        # bf16 on disk keeps the fixtures small; the reference is computed from exactly those values.
        model.to(torch.bfloat16).save_pretrained(d)
        write_reference(d, *reference_logits(d))
        print(f"{name}: {sum(p.stat().st_size for p in d.iterdir()) / 1e6:.2f} MB")
    for fmt in ("fp8-block", "fp8-channel"):
        d = args.out / f"{FP8_BASE}-{fmt}"
        if d.exists():
            shutil.rmtree(d)
        deq = write_fp8(args.out / FP8_BASE, d, fmt)
        # The reference runs the unquantized model class on the dequantized weights.
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(args.out / FP8_BASE / "config.json", tmp)
            save_file(deq, str(Path(tmp) / "model.safetensors"), metadata={"format": "pt"})
            write_reference(d, *reference_logits(tmp))
        print(f"{d.name}: {sum(p.stat().st_size for p in d.iterdir()) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
