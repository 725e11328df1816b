#!/usr/bin/env python3
"""Write the models `kiln bench generate` measures, into a cache directory (never the repo).

1. The default model at equal bytes per weight for llama.cpp: SmolLM2-135M-Instruct's Q4_1 GGUF
   dequantized and written again as Q8_0 (vs kiln FP8) and BF16 (vs kiln bf16) GGUF files, with
   all of its metadata (tokenizer included):
       <out>/smollm2-135m-instruct.q8_0.gguf, <out>/smollm2-135m-instruct.bf16.gguf
2. A synthetic MoE with Qwen3-30B-A3B's real widths (hidden 2048, 128 experts of 768, top-8,
   norm_topk_prob, 32 q / 4 kv heads of 128, vocab 151936) and only a few layers, random weights:
       <out>/qwen3-30b-a3b-widths-L<n>/          Hugging Face directory (config.json, bf16
                                                  safetensors shards + index, Qwen3 tokenizer.json)
       <out>/qwen3-30b-a3b-widths-L<n>.q8_0.gguf  the same weights for llama.cpp (arch qwen3moe)
       <out>/qwen3-30b-a3b-widths-L<n>.bf16.gguf
   The three files hold the same values (bf16-rounded; Q8_0 quantizes those). To write ~4G
   random weights in a minute rather than a quarter hour, each weight row is drawn from a pool of
   random rows (a fresh random choice of rows per tensor), quantized once: every expert is a
   distinct matrix in memory, which is all a decode-speed benchmark needs. The GGUF files carry a
   placeholder SentencePiece vocabulary (llama.cpp needs one to load; the bench feeds token ids).

Needs numpy, ml_dtypes and gguf (the project's .venv has them); no torch.
    python scripts/make_bench_models.py [--out DIR] [--default-gguf PATH] [--moe-layers 4]
                                        [--only default|moe]
<out> defaults to $KILN_CACHE_DIR/bench, else $XDG_CACHE_HOME/kiln/bench, else ~/.cache/kiln/bench.
"""
import argparse
import json
import os
import sys
import tarfile
from pathlib import Path

import ml_dtypes
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

REPO = Path(__file__).resolve().parent.parent
ALIGN = gguf.GGUF_DEFAULT_ALIGNMENT

# Qwen3-30B-A3B's widths (its published config.json), with few layers.
MOE = dict(hidden=2048, experts=128, moe_inter=768, top_k=8, heads=32, kv_heads=4, head_dim=128,
           vocab=151936, dense_inter=6144, rope_theta=1000000.0, eps=1e-6, max_pos=40960)

# llama.cpp file types (general.file_type) for the two encodings.
FILE_TYPE = {Q.Q8_0: 7, Q.BF16: 32}


def default_out():
    if os.environ.get("KILN_CACHE_DIR"):
        return Path(os.environ["KILN_CACHE_DIR"]) / "bench"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kiln" / "bench"


def default_model_path():
    """The default model where kiln's cache keeps it (kiln::llm::default_model_cached_path())."""
    return default_out().parent / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def encode(x, qtype):
    """float32 [rows, cols] -> the bytes of `qtype` as uint8 [rows, row_bytes]."""
    if qtype == Q.BF16:
        return np.ascontiguousarray(x.astype(ml_dtypes.bfloat16)).view(np.uint8)
    if qtype == Q.F32:
        return np.ascontiguousarray(x, dtype=np.float32).view(np.uint8)
    return gguf.quants.quantize(np.ascontiguousarray(x, dtype=np.float32), qtype)


def row_bytes(cols, qtype):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    return cols // block * size


class StreamingGGUF:
    """A GGUF file written tensor by tensor (in declaration order) without holding the data."""

    def __init__(self, path, arch, tensors):
        # tensors: [(name, numpy shape (outermost first), qtype)]
        self.w = gguf.GGUFWriter(path, arch)
        self.order = []
        for name, shape, qtype in tensors:
            nbytes = int(np.prod(shape[:-1], dtype=np.int64)) * row_bytes(shape[-1], qtype)
            # A float32 dtype with raw_dtype keeps `shape` as the element shape.
            self.w.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=qtype)
            self.order.append((name, nbytes))
        self.i = 0
        self.done = 0

    def begin(self):
        self.w.write_header_to_file()
        self.w.write_kv_data_to_file()
        self.w.write_ti_data_to_file()
        self.f = self.w.fout[0]
        self._pad()

    def _pad(self):
        pos = self.f.tell()
        self.f.write(b"\0" * ((-pos) % ALIGN))

    def write(self, name, chunk):
        """Appends bytes of the current tensor (call in order; chunks may split a tensor)."""
        want, nbytes = self.order[self.i]
        assert name == want, (name, want)
        self.f.write(memoryview(np.ascontiguousarray(chunk)).cast("B"))
        self.done += chunk.nbytes
        if self.done == nbytes:
            self._pad()
            self.i += 1
            self.done = 0

    def close(self):
        assert self.i == len(self.order), "not every tensor was written"
        self.w.close()


# --------------------------------------------------------------------------- default model


def field_value(field):
    return field.contents()


def write_default(src, out):
    reader = gguf.GGUFReader(src)
    arch = field_value(reader.fields["general.architecture"])
    for qtype, suffix in ((Q.Q8_0, "q8_0"), (Q.BF16, "bf16")):
        path = out / f"smollm2-135m-instruct.{suffix}.gguf"
        if path.exists():
            print(f"have {path}")
            continue
        tmp = path.with_suffix(".tmp")
        specs, datas = [], []
        for t in reader.tensors:
            x = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            shape = tuple(int(d) for d in reversed(t.shape.tolist()))  # numpy order
            x = x.reshape(shape)
            tq = qtype if x.ndim == 2 and shape[-1] % 32 == 0 else Q.F32  # norms stay f32
            specs.append((t.name, shape, tq))
            datas.append(encode(x.reshape(-1, shape[-1]), tq))
        w = StreamingGGUF(tmp, arch, specs)
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
                continue
            types = field.types
            sub = types[-1] if types[0] == V.ARRAY else None
            w.w.add_key_value(name, field_value(field), types[0], sub)
        w.w.add_file_type(FILE_TYPE[qtype])
        w.begin()
        for (name, _, _), d in zip(specs, datas):
            w.write(name, d)
        w.close()
        tmp.rename(path)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB)")


# --------------------------------------------------------------------------- synthetic MoE


class RowPool:
    """Random rows of one width, bf16-rounded, held in each encoding the files need."""

    def __init__(self, rng, rows, cols, std):
        x = (rng.standard_normal((rows, cols), dtype=np.float32) * std).astype(ml_dtypes.bfloat16)
        x = x.astype(np.float32)
        self.rows = rows
        self.enc = {Q.BF16: encode(x, Q.BF16), Q.Q8_0: encode(x, Q.Q8_0)}

    def take(self, idx, qtype):
        return self.enc[qtype][idx]


def moe_tensors(L):
    """[(hf name, gguf name, numpy shape, kind)] in the order the files hold them.
    kind: 'mat' (a pooled matrix), 'norm' (ones), 'router' (float32 random)."""
    m = MOE
    H, E, I, D = m["hidden"], m["experts"], m["moe_inter"], m["head_dim"]
    t = [("model.embed_tokens.weight", "token_embd.weight", (m["vocab"], H), "mat"),
         ("model.norm.weight", "output_norm.weight", (H,), "norm"),
         ("lm_head.weight", "output.weight", (m["vocab"], H), "mat")]
    for i in range(L):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        t += [(p + "input_layernorm.weight", g + "attn_norm.weight", (H,), "norm"),
              (p + "self_attn.q_proj.weight", g + "attn_q.weight", (m["heads"] * D, H), "mat"),
              (p + "self_attn.k_proj.weight", g + "attn_k.weight", (m["kv_heads"] * D, H), "mat"),
              (p + "self_attn.v_proj.weight", g + "attn_v.weight", (m["kv_heads"] * D, H), "mat"),
              (p + "self_attn.o_proj.weight", g + "attn_output.weight", (H, m["heads"] * D), "mat"),
              (p + "self_attn.q_norm.weight", g + "attn_q_norm.weight", (D,), "norm"),
              (p + "self_attn.k_norm.weight", g + "attn_k_norm.weight", (D,), "norm"),
              (p + "post_attention_layernorm.weight", g + "ffn_norm.weight", (H,), "norm"),
              (p + "mlp.gate.weight", g + "ffn_gate_inp.weight", (E, H), "router")]
        # GGUF stacks the experts: ffn_{gate,up}_exps [E, I, H], ffn_down_exps [E, H, I].
        for proj, gname, shape in (("gate_proj", "ffn_gate_exps", (I, H)), ("up_proj", "ffn_up_exps", (I, H)),
                                   ("down_proj", "ffn_down_exps", (H, I))):
            t.append(([p + f"mlp.experts.{e}.{proj}.weight" for e in range(E)], g + gname + ".weight",
                      (E,) + shape, "experts"))
    return t


def moe_config(L):
    m = MOE
    return {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "hidden_size": m["hidden"], "intermediate_size": m["dense_inter"],
        "moe_intermediate_size": m["moe_inter"], "num_experts": m["experts"],
        "num_experts_per_tok": m["top_k"], "norm_topk_prob": True, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "num_attention_heads": m["heads"], "num_key_value_heads": m["kv_heads"],
        "head_dim": m["head_dim"], "num_hidden_layers": L, "vocab_size": m["vocab"],
        "max_position_embeddings": m["max_pos"], "max_window_layers": L, "rms_norm_eps": m["eps"],
        "rope_theta": m["rope_theta"], "rope_scaling": None, "tie_word_embeddings": False,
        "hidden_act": "silu", "attention_bias": False, "attention_dropout": 0.0,
        "use_sliding_window": False, "sliding_window": None, "router_aux_loss_coef": 0.001,
        "output_router_logits": False, "initializer_range": 0.02, "torch_dtype": "bfloat16",
        "bos_token_id": 151643, "eos_token_id": 151645, "use_cache": True,
    }


def placeholder_vocab(w, n):
    """A SentencePiece-style vocabulary llama.cpp accepts: <unk> <s> </s>, 256 byte tokens, rest plain."""
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    toks += [f"t{i}" for i in range(len(toks), n)]
    types += [1] * (n - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * n)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(False)


def write_safetensors_header(f, entries):
    """entries: [(name, shape)] all bf16; returns the data offset of each, in order."""
    header, off, offs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, shape in entries:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        offs.append(off)
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((-len(h)) % 8)
    f.write(len(h).to_bytes(8, "little"))
    f.write(h)


def write_moe(out, L, seed):
    m = MOE
    name = f"qwen3-30b-a3b-widths-L{L}"
    hf_dir = out / name
    gg = {Q.Q8_0: out / f"{name}.q8_0.gguf", Q.BF16: out / f"{name}.bf16.gguf"}
    if (hf_dir / "config.json").exists() and all(p.exists() for p in gg.values()):
        print(f"have {hf_dir} and its GGUF files")
        return
    rng = np.random.default_rng(seed)
    H, I = m["hidden"], m["moe_inter"]
    print("drawing the row pools ...", flush=True)
    pools = {c: RowPool(rng, 8192, c, 0.02) for c in (H, I, m["heads"] * m["head_dim"])}
    tensors = moe_tensors(L)

    # GGUF writers: names and shapes are known up front, so the header goes first.
    writers = {}
    for qtype, path in gg.items():
        specs = []
        for _, gname, shape, kind in tensors:
            tq = Q.F32 if kind in ("norm", "router") else qtype
            specs.append((gname, shape, tq))
        w = StreamingGGUF(path.with_suffix(".tmp"), "qwen3moe", specs)
        a = "qwen3moe"
        w.w.add_name(name)
        w.w.add_context_length(m["max_pos"])
        w.w.add_embedding_length(H)
        w.w.add_block_count(L)
        w.w.add_feed_forward_length(m["dense_inter"])
        w.w.add_head_count(m["heads"])
        w.w.add_head_count_kv(m["kv_heads"])
        w.w.add_key_length(m["head_dim"])
        w.w.add_value_length(m["head_dim"])
        w.w.add_rope_freq_base(m["rope_theta"])
        w.w.add_layer_norm_rms_eps(m["eps"])
        w.w.add_expert_count(m["experts"])
        w.w.add_expert_used_count(m["top_k"])
        w.w.add_expert_feed_forward_length(I)
        w.w.add_uint32(f"{a}.vocab_size", m["vocab"])
        w.w.add_file_type(FILE_TYPE[qtype])
        placeholder_vocab(w.w, m["vocab"])
        w.begin()
        writers[qtype] = w

    # HF: one shard for the embeddings/head/norms, one per layer.
    hf_dir.mkdir(parents=True, exist_ok=True)
    shard_of = {}
    shards = [[]]
    for hname, _, shape, kind in tensors:
        if isinstance(hname, list):
            names = [(n, shape[1:]) for n in hname]
        else:
            names = [(hname, shape)]
        if hname is not None and not isinstance(hname, list) and hname.startswith("model.layers."):
            layer = int(hname.split(".")[2])
        elif isinstance(hname, list):
            layer = int(hname[0].split(".")[2])
        else:
            layer = -1
        while len(shards) < layer + 2:
            shards.append([])
        shards[layer + 1] += names
    n_shards = len(shards)
    files = []
    for s, entries in enumerate(shards):
        fname = f"model-{s + 1:05d}-of-{n_shards:05d}.safetensors"
        f = open(hf_dir / (fname + ".tmp"), "wb")
        write_safetensors_header(f, entries)
        files.append((f, fname))
        for n, _ in entries:
            shard_of[n] = s

    def hf_write(n, arr_bf16_bytes):
        files[shard_of[n]][0].write(memoryview(np.ascontiguousarray(arr_bf16_bytes)).cast("B"))

    # Tensors are written in the same order in all files (each HF shard's header lists its
    # tensors in the order they come here).
    total = sum(int(np.prod(s)) for _, _, s, _ in tensors)
    done = 0
    for hname, gname, shape, kind in tensors:
        if kind == "norm":
            x = np.ones(shape, np.float32)
            hf_write(hname, x.astype(ml_dtypes.bfloat16).view(np.uint8))
            for w in writers.values():
                w.write(gname, x)
        elif kind == "router":
            x = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(ml_dtypes.bfloat16)
            hf_write(hname, x.view(np.uint8))
            for w in writers.values():
                w.write(gname, x.astype(np.float32))
        else:
            mats = [(hname, shape)] if kind == "mat" else [(n, shape[1:]) for n in hname]
            for n, (rows, cols) in mats:
                pool = pools[cols]
                for r0 in range(0, rows, 8192):  # chunks bound the memory used
                    idx = rng.integers(0, pool.rows, min(8192, rows - r0))
                    hf_write(n, pool.take(idx, Q.BF16))
                    for qtype, w in writers.items():
                        w.write(gname, pool.take(idx, qtype))
        done += int(np.prod(shape))
        print(f"\r{done / total * 100:5.1f}% of {total / 1e9:.2f}G weights", end="", flush=True)
    print()
    for qtype, w in writers.items():
        w.close()
        w_path = gg[qtype]
        w_path.with_suffix(".tmp").rename(w_path)
        print(f"wrote {w_path} ({w_path.stat().st_size / 1e9:.2f} GB)")

    weight_map = {}
    for (f, fname), entries in zip(files, shards):
        f.close()
        (hf_dir / (fname + ".tmp")).rename(hf_dir / fname)
        for n, _ in entries:
            weight_map[n] = fname
    (hf_dir / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total * 2}, "weight_map": weight_map}, indent=1))
    (hf_dir / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 151643, "eos_token_id": 151645, "do_sample": False}, indent=1))
    tok = REPO / "tests/data/tokenizers/qwen3"
    with tarfile.open(tok / "tokenizer.json.tar.xz") as tf:
        tf.extract("tokenizer.json", hf_dir)
    (hf_dir / "tokenizer_config.json").write_bytes((tok / "tokenizer_config.json").read_bytes())
    (hf_dir / "config.json").write_text(json.dumps(moe_config(L), indent=1))  # last: marks it complete
    print(f"wrote {hf_dir} ({total * 2 / 1e9:.2f} GB of bf16)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="cache directory (default: see above)")
    ap.add_argument("--default-gguf", type=Path, default=None, help="the default model's Q4_1 GGUF")
    ap.add_argument("--moe-layers", type=int, default=4)
    ap.add_argument("--only", choices=["default", "moe"], default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    out = a.out or default_out()
    out.mkdir(parents=True, exist_ok=True)
    if a.only in (None, "default"):
        src = a.default_gguf or default_model_path()
        if not src.exists():
            sys.exit(f"no default model at {src}: pass --default-gguf PATH (or run `kiln generate` once)")
        write_default(src, out)
    if a.only in (None, "moe"):
        write_moe(out, a.moe_layers, a.seed)
    print(f"models in {out}")


if __name__ == "__main__":
    main()
