"""Writes the small seed corpora in fuzz/corpus/ (run once; the seeds are committed)."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def st(header, data):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "two", st({"__metadata__": {"format": "pt"},
                              "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                              "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}, bytes(range(22))))
put("safetensors", "empty", st({}, b""))


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, data):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, payload in kvs:
        out += gstr(k) + struct.pack("<I", t) + payload
    for name, dims, t, off in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, off)
    out += b"\0" * (-len(out) % 32)
    return out + data


kvs = [("general.architecture", 8, gstr("llama")), ("general.alignment", 4, struct.pack("<I", 32)),
       ("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2) + gstr("a") + gstr("b")),
       ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 2) + struct.pack("<ff", 0.5, 1.5)),
       ("llama.rope.freq_base", 6, struct.pack("<f", 10000.0))]
q8 = struct.pack("<e", 0.5) + bytes(range(32))
q4 = struct.pack("<e", 0.25) + bytes(range(16))
q41 = struct.pack("<ee", 0.25, -1.0) + bytes(range(16))
data = q8 + bytes(30) + q4 + bytes(14) + q41 + bytes(12) + struct.pack("<4f", 1, 2, 3, 4)
put("gguf", "mixed", gguf(kvs, [("q8", [32], 8, 0), ("q4", [32], 2, 64), ("q41", [32], 3, 96), ("f", [2, 2], 0, 128)],
                          data))

put("config", "llama", json.dumps({
    "model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "rope_theta": 100000,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0}, "eos_token_id": [1, 2], "tie_word_embeddings": True}))
put("config", "qwen3_moe_fp8", json.dumps({
    "model_type": "qwen3_moe", "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
    "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "num_experts": 8, "num_experts_per_tok": 2, "mlp_only_layers": [1],
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}))
put("config", "compressed", json.dumps({
    "model_type": "qwen2", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
    "num_attention_heads": 2, "quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}}))
