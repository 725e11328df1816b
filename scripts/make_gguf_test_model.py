"""Writes tests/data/models/tiny-qwen3-moe.gguf and tiny-llama.gguf: the tiny
fixtures' weights as GGUF files, as llama.cpp's converter lays them out
(qwen3moe: experts stacked; llama: Q/K rows permuted for interleaved rope and
the Llama 3 rope scaling as a rope_freqs tensor), F16 matrices, so kiln's GGUF
path is checked against the same transformers references.

    python scripts/make_gguf_test_model.py [tests/data/models]

Needs numpy and the `gguf` package (not needed by the tests).
"""

import json
import math
import pathlib
import sys

import struct

import gguf
import numpy as np


def load_file(path):
    # safetensors read with NumPy alone (bf16 widened to f32 by a shift).
    raw = pathlib.Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for k, e in json.loads(raw[8 : 8 + n]).items():
        if k == "__metadata__":
            continue
        b, end = e["data_offsets"]
        buf = raw[8 + n + b : 8 + n + end]
        if e["dtype"] == "BF16":
            a = (np.frombuffer(buf, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(buf, dtype={"F32": np.float32, "F16": np.float16}[e["dtype"]])
        out[k] = a.reshape(e["shape"])
    return out


def main(root):
    src = pathlib.Path(root) / "tiny-qwen3-moe"
    cfg = json.loads((src / "config.json").read_text())
    t = {k: v.astype(np.float32) for k, v in load_file(str(src / "model.safetensors")).items()}
    w = gguf.GGUFWriter(str(pathlib.Path(root) / "tiny-qwen3-moe.gguf"), "qwen3moe")
    L, E = cfg["num_hidden_layers"], cfg.get("num_experts", cfg.get("num_local_experts"))
    w.add_block_count(L)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_expert_count(E)
    w.add_expert_used_count(cfg["num_experts_per_tok"])
    w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
    w.add_expert_weights_norm(cfg["norm_topk_prob"])
    w.add_vocab_size(cfg["vocab_size"])

    def put(name, a, f16=True):
        w.add_tensor(name, a.astype(np.float16 if f16 else np.float32))

    put("token_embd.weight", t["model.embed_tokens.weight"])
    put("output_norm.weight", t["model.norm.weight"], False)
    put("output.weight", t["lm_head.weight"])
    for i in range(L):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        put(g + "attn_norm.weight", t[p + "input_layernorm.weight"], False)
        put(g + "ffn_norm.weight", t[p + "post_attention_layernorm.weight"], False)
        put(g + "attn_q_norm.weight", t[p + "self_attn.q_norm.weight"], False)
        put(g + "attn_k_norm.weight", t[p + "self_attn.k_norm.weight"], False)
        for a, b in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("output", "o_proj")):
            put(g + f"attn_{a}.weight", t[p + f"self_attn.{b}.weight"])
        put(g + "ffn_gate_inp.weight", t[p + "mlp.gate.weight"], False)
        for a, b in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
            put(g + f"ffn_{a}_exps.weight", np.stack([t[p + f"mlp.experts.{e}.{b}.weight"] for e in range(E)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def permute(x, n_head):
    # llama.cpp convert_hf_to_gguf: rotate-half rows -> interleaved pairs per head.
    return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def llama(root):
    src = pathlib.Path(root) / "tiny-llama"
    cfg = json.loads((src / "config.json").read_text())
    t = load_file(str(src / "model.safetensors"))
    rp = cfg["rope_parameters"]
    w = gguf.GGUFWriter(str(pathlib.Path(root) / "tiny-llama.gguf"), "llama")
    L, H, nh, nkv, D = (cfg[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads",
                                         "num_key_value_heads", "head_dim"))
    w.add_block_count(L)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(H)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_rope_dimension_count(D)
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    # Llama 3 rope scaling as llama.cpp's converter precomputes it.
    freqs = 1.0 / (rp["rope_theta"] ** (np.arange(0, D, 2, dtype=np.float32) / D))
    old, fac, lo, hi = rp["original_max_position_embeddings"], rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
    factors = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < old / hi:
            factors.append(1.0)
        elif wavelen > old / lo:
            factors.append(fac)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            factors.append(1 / ((1 - smooth) / fac + smooth))
    w.add_tensor("rope_freqs.weight", np.array(factors, dtype=np.float32))
    w.add_tensor("token_embd.weight", t["model.embed_tokens.weight"].astype(np.float16))
    w.add_tensor("output_norm.weight", t["model.norm.weight"].astype(np.float32))
    w.add_tensor("output.weight", t["lm_head.weight"].astype(np.float16))
    for i in range(L):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        w.add_tensor(g + "attn_norm.weight", t[p + "input_layernorm.weight"].astype(np.float32))
        w.add_tensor(g + "ffn_norm.weight", t[p + "post_attention_layernorm.weight"].astype(np.float32))
        w.add_tensor(g + "attn_q.weight", permute(t[p + "self_attn.q_proj.weight"], nh).astype(np.float16))
        w.add_tensor(g + "attn_k.weight", permute(t[p + "self_attn.k_proj.weight"], nkv).astype(np.float16))
        w.add_tensor(g + "attn_v.weight", t[p + "self_attn.v_proj.weight"].astype(np.float16))
        w.add_tensor(g + "attn_output.weight", t[p + "self_attn.o_proj.weight"].astype(np.float16))
        for a, b in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
            w.add_tensor(g + f"ffn_{a}.weight", t[p + f"mlp.{b}.weight"].astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/models")
    llama(sys.argv[1] if len(sys.argv) > 1 else "tests/data/models")
