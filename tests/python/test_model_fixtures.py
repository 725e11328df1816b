# The committed tiny checkpoints (tests/data/models, written by transformers): kiln
# reads their configs as transformers wrote them, maps every tensor, and turns the
# FP8 checkpoints' weights and scales back into the values their reference
# logits were computed from.
import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import kiln
import kiln.io

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
NAMES = sorted(p.name for p in MODELS.iterdir() if (p / "config.json").exists())


def raw_safetensors(path):
    """An independent reader: the 8-byte header length, the JSON header, numpy views of the data."""
    blob = Path(path).read_bytes()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    dt = {"BF16": ml_dtypes.bfloat16, "F32": np.float32, "F8_E4M3": ml_dtypes.float8_e4m3fn,
          "I64": np.int64, "F16": np.float16}
    out = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + a:8 + n + b], dtype=dt[info["dtype"]]).reshape(info["shape"])
    return out


def test_fixtures_present():
    assert {"tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-qwen3-moe", "tiny-mixtral", "tiny-olmoe",
            "tiny-qwen3-moe-fp8-block", "tiny-qwen3-moe-fp8-channel"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_config_matches_what_transformers_wrote(name):
    raw = json.loads((MODELS / name / "config.json").read_text())
    c = kiln.io.load_config(str(MODELS / name))
    assert c["architecture"] == raw["model_type"]
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "tie_word_embeddings"):
        assert c[key] == raw[key], key
    assert c["rope_theta"] == raw["rope_parameters"]["rope_theta"]
    experts = raw.get("num_experts", raw.get("num_local_experts", 0))
    assert c["num_experts"] == experts
    assert c["num_experts_per_tok"] == raw.get("num_experts_per_tok", 0)
    if raw["model_type"] == "llama":
        assert c["rope_scaling"]["type"] == "llama3" and c["rope_scaling"]["factor"] == 8.0
    assert c["qk_norm"] == (raw["model_type"] in ("qwen3", "qwen3_moe", "olmoe"))
    scheme = {"fp8": "fp8-block", "compressed-tensors": "fp8-channel"}
    want = scheme.get(raw.get("quantization_config", {}).get("quant_method"), "none")
    assert c["quantization"]["scheme"] == want


@pytest.mark.parametrize("name", NAMES)
def test_tensors_read_bit_exact(name):
    ref = raw_safetensors(MODELS / name / "model.safetensors")
    got = kiln.io.load_file(str(MODELS / name / "model.safetensors"))
    assert sorted(got) == sorted(ref)
    for k, v in ref.items():
        g = np.asarray(got[k])
        assert g.dtype == v.dtype and g.shape == v.shape, k
        assert g.tobytes() == v.tobytes(), k


@pytest.mark.parametrize("fmt", ["fp8-block", "fp8-channel"])
def test_fp8_checkpoint_dequantizes_to_its_reference_weights(fmt):
    ref = raw_safetensors(MODELS / f"tiny-qwen3-moe-{fmt}" / "model.safetensors")
    base = raw_safetensors(MODELS / "tiny-qwen3-moe" / "model.safetensors")
    got = kiln.io.load_file(str(MODELS / f"tiny-qwen3-moe-{fmt}" / "model.safetensors"))
    suffix = "_scale_inv" if fmt == "fp8-block" else "_scale"
    quantized = [k for k in ref if k + suffix in ref]
    assert len(quantized) == 2 * (4 + 4 * 3)  # per layer: q/k/v/o + 4 experts x gate/up/down
    for k in quantized:
        w, s = ref[k].astype(np.float64), ref[k + suffix].astype(np.float64)
        if fmt == "fp8-block":
            s = np.repeat(np.repeat(s, 128, 0), 128, 1)[:w.shape[0], :w.shape[1]]
        expect = w * s
        back = kiln.dequantize(got[k], got[k + suffix])
        np.testing.assert_allclose(np.asarray(back).astype(np.float64), expect, rtol=1e-6, atol=0)
        # The FP8 weights stay close to the bf16 originals they were made from.
        orig = base[k].astype(np.float64)
        assert np.abs(expect - orig).max() <= 0.07 * np.abs(orig).max()
