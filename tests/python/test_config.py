# Model configs: Hugging Face config.json for every supported architecture, the
# FP8 checkpoint formats, GGUF metadata mapped to the same fields, and refusals
# by name.
import json

import numpy as np
import pytest

import kiln
import kiln.io

LLAMA = {
    "model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "rope_theta": 100000, "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "torch_dtype": "bfloat16",
}
QWEN3_MOE = {
    "model_type": "qwen3_moe", "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
    "max_position_embeddings": 40960, "tie_word_embeddings": False, "eos_token_id": 151645,
}


def parse(d):
    return kiln.io.parse_config(json.dumps(d))


def test_llama():
    c = parse(LLAMA)
    assert c["architecture"] == "llama" and c["head_dim"] == 64 and c["num_key_value_heads"] == 3
    assert c["tie_word_embeddings"] and not c["attention_bias"] and not c["qk_norm"]
    assert c["rope_theta"] == 100000 and c["rope_scaling"] is None
    assert c["eos_token_ids"] == [2] and c["bos_token_id"] == 1
    assert c["quantization"]["scheme"] == "none"
    # SmolLM2-135M has 134,515,008 parameters.
    assert c["parameter_count"] == 134515008


def test_llama3_rope_scaling():
    d = dict(LLAMA, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
             eos_token_id=[128001, 128008, 128009])
    c = parse(d)
    assert c["rope_scaling"]["type"] == "llama3" and c["rope_scaling"]["factor"] == 8.0
    assert c["rope_scaling"]["original_max_position_embeddings"] == 8192
    assert c["eos_token_ids"] == [128001, 128008, 128009]


def test_qwen2_qwen3():
    q2 = parse(dict(LLAMA, model_type="qwen2", use_sliding_window=False, sliding_window=4096))
    assert q2["attention_bias"] and q2["sliding_window"] is None and not q2["qk_norm"]
    q3 = parse(dict(LLAMA, model_type="qwen3", head_dim=128))
    assert q3["qk_norm"] and q3["head_dim"] == 128 and not q3["attention_bias"]


def test_moe_families():
    c = parse(QWEN3_MOE)
    assert c["num_experts"] == 128 and c["num_experts_per_tok"] == 8 and c["moe_intermediate_size"] == 768
    assert c["norm_topk_prob"] and c["qk_norm"]
    # Qwen3-30B-A3B: about 30.5B parameters.
    assert 30.0e9 < c["parameter_count"] < 31.0e9
    m = parse(dict(LLAMA, model_type="mixtral", num_local_experts=8, num_experts_per_tok=2, sliding_window=None))
    assert m["num_experts"] == 8 and m["moe_intermediate_size"] == LLAMA["intermediate_size"] and m["norm_topk_prob"]
    o = parse(dict(LLAMA, model_type="olmoe", num_experts=64, num_experts_per_tok=8))
    assert o["num_experts"] == 64 and not o["norm_topk_prob"] and o["qk_norm"]


def test_fp8_block():
    q = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128],
         "modules_to_not_convert": ["lm_head"]}
    c = parse(dict(QWEN3_MOE, quantization_config=q))["quantization"]
    assert c["scheme"] == "fp8-block" and c["block_size"] == (128, 128)
    assert c["scale_name"] == "weight_scale_inv" and c["ignore"] == ["lm_head"] and c["dynamic_activations"]


@pytest.mark.parametrize("strategy,scheme", [("channel", "fp8-channel"), ("tensor", "fp8-tensor")])
def test_compressed_tensors_fp8(strategy, scheme):
    q = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
         "config_groups": {"group_0": {"targets": ["Linear"],
                                       "weights": {"num_bits": 8, "type": "float", "strategy": strategy,
                                                   "symmetric": True, "dynamic": False},
                                       "input_activations": {"num_bits": 8, "type": "float", "strategy": "token",
                                                             "dynamic": True}}}}
    c = parse(dict(LLAMA, quantization_config=q))["quantization"]
    assert c["scheme"] == scheme and c["scale_name"] == "weight_scale" and c["ignore"] == ["lm_head"]


@pytest.mark.parametrize("bad,msg", [
    ({"model_type": "gpt2"}, "architecture 'gpt2'"),
    ({"quantization_config": {"quant_method": "awq"}}, "quantization method 'awq'"),
    ({"quantization_config": {"quant_method": "fp8"}}, "weight_block_size"),
    ({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                              "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}}}, "pack-quantized"),
    ({"quantization_config": {"quant_method": "compressed-tensors",
                              "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}}}}}, "type int"),
    ({"hidden_act": "gelu"}, "hidden_act"),
    ({"num_key_value_heads": 4}, "not a multiple"),
    ({"hidden_size": "576"}, "must be an integer"),
    ({"num_hidden_layers": -1}, "out of range"),
    ({"rope_scaling": {"rope_type": "longrope"}}, "longrope"),
])
def test_refusals(bad, msg):
    with pytest.raises(ValueError, match=msg):
        parse(dict(LLAMA, **bad))


def test_malformed_json():
    with pytest.raises(ValueError, match="invalid JSON"):
        kiln.io.parse_config("{")
    with pytest.raises(ValueError, match="duplicate key"):
        kiln.io.parse_config('{"model_type": "llama", "model_type": "qwen2"}')
    with pytest.raises(ValueError, match="model_type"):
        kiln.io.parse_config("{}")


def test_load_config_from_dir_and_gguf(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    assert kiln.io.load_config(str(tmp_path))["hidden_size"] == 576
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(8192)
    w.add_embedding_length(64)
    w.add_block_count(2)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(100000.0)
    w.add_token_list(["a", "b", "c"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_tensor("token_embd.weight", np.zeros((3, 64), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    c = kiln.io.load_config(str(path))
    assert c["architecture"] == "llama" and c["hidden_size"] == 64 and c["num_hidden_layers"] == 2
    assert c["num_attention_heads"] == 4 and c["num_key_value_heads"] == 2 and c["head_dim"] == 16
    assert c["vocab_size"] == 3 and c["tie_word_embeddings"] and c["rope_theta"] == 100000.0
    assert c["rms_norm_eps"] == pytest.approx(1e-5) and c["eos_token_ids"] == [2]
    assert c["quantization"]["scheme"] == "gguf"


def _fp8_checkpoint(tmp_path, quant, scale_name, scale_shape):
    import ml_dtypes
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((256, 384)) * 0.5).astype(ml_dtypes.float8_e4m3fn)
    s = rng.uniform(0.01, 0.1, scale_shape).astype(np.float32)
    kiln.io.save_file({"model.layers.0.mlp.up_proj.weight": w,
                       f"model.layers.0.mlp.up_proj.{scale_name}": s,
                       "model.embed_tokens.weight": np.zeros((10, 384), ml_dtypes.bfloat16)},
                      str(tmp_path / "model.safetensors"))
    cfg = dict(LLAMA, hidden_size=384, num_attention_heads=6, num_key_value_heads=2, vocab_size=10,
               quantization_config=quant)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return w, s


@pytest.mark.parametrize("fmt", ["fp8-block", "fp8-channel", "fp8-tensor"])
def test_fp8_checkpoint_fixture(tmp_path, fmt):
    import ml_dtypes
    if fmt == "fp8-block":
        quant = {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}
        scale_name, scale_shape = "weight_scale_inv", (2, 3)
    else:
        strategy = fmt.split("-")[1]
        quant = {"quant_method": "compressed-tensors", "format": "float-quantized",
                 "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": strategy}}}}
        scale_name, scale_shape = "weight_scale", ((256, 1) if strategy == "channel" else (1,))
    w, s = _fp8_checkpoint(tmp_path, quant, scale_name, scale_shape)
    c = kiln.io.load_config(str(tmp_path))
    assert c["quantization"]["scheme"] == fmt and c["quantization"]["scale_name"] == scale_name
    d = kiln.io.load_file(str(tmp_path))
    wt = np.asarray(d["model.layers.0.mlp.up_proj.weight"])
    assert wt.dtype == ml_dtypes.float8_e4m3fn and wt.tobytes() == w.tobytes()
    st = np.asarray(d[f"model.layers.0.mlp.up_proj.{scale_name}"])
    assert st.shape == scale_shape and st.tobytes() == s.tobytes()
    if fmt == "fp8-block":
        bn, bk = c["quantization"]["block_size"]
        assert st.shape == (-(-wt.shape[0] // bn), -(-wt.shape[1] // bk))
    from io_util import kiln_cli
    import subprocess
    cli = kiln_cli()
    if cli:
        out = subprocess.run([cli, "info", "--json", str(tmp_path)], check=True, capture_output=True, text=True).stdout
        doc = json.loads(out)
        assert doc["config"]["quantization"] == fmt
        assert doc["dtypes"]["float8_e4m3fn"]["tensors"] == 1
