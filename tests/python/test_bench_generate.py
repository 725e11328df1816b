# `kiln bench generate --quick --json` on the tiny test models: runs in seconds,
# writes the promised fields with sane values. No timing assertions.
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "tests", "data", "models")

pytestmark = pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")


def run(*args, check=True):
    return subprocess.run(["kiln", "bench", "generate", *args], cwd=ROOT, check=check, capture_output=True,
                          text=True)


@pytest.fixture(scope="module")
def doc():
    out = run("--quick", "--json", "--models", os.path.join(MODELS, "tiny-llama"),
              os.path.join(MODELS, "tiny-qwen3-moe"), "--tokens", "3", "--prompt-tokens", "5").stdout
    return json.loads(out)


def test_document_fields(doc):
    assert doc["command"] == "bench generate"
    assert doc["kiln_version"]
    assert doc["machine"]["roof"]["median_gbps"] > 0
    assert doc["settings"]["decode_tokens"] == 3 and doc["settings"]["prompt_tokens"] == 5
    assert doc["missing"] == []
    names = [r["name"] for r in doc["results"]]
    assert names == [f"{m} decode {d}" for m in ("tiny-llama", "tiny-qwen3-moe") for d in ("fp8", "bf16", "f32")]


def test_each_case_is_sane(doc):
    for r in doc["results"]:
        k = r["kiln"]
        assert r["min_s"] <= r["median_s"] <= r["max_s"] and r["median_s"] > 0
        assert k["decode_tok_s"] == pytest.approx(1 / r["median_s"])
        assert k["prefill_tok_s"] > 0
        assert len(k["prompt_ids"]) == 5 and len(k["greedy_ids"]) == 3
        assert k["greedy_repeatable"]
        b = k["bytes_per_token"]
        assert 0 < b["weights"] <= k["weight_bytes"]
        assert 0 < b["weights_runtime_counter"] <= k["weight_bytes"]
        assert b["kv"] > 0 and b["total"] == pytest.approx(b["weights"] + b["kv"])
        assert r["gbps"] == pytest.approx(b["total"] / r["median_s"] / 1e9)
        assert r["roof_fraction"] == pytest.approx(r["gbps"] / r["roof_gbps"])
        assert k["bound_tok_s"] == pytest.approx(r["roof_gbps"] * 1e9 / b["total"])
        mem = k["memory"]
        assert 0 < mem["rss_before_load"] <= mem["peak_during_load"]
        assert mem["rss_generating"] <= mem["peak_generating"]
        assert mem["weights_plus_kv"] == pytest.approx(k["weight_bytes"] + k["kv_cache_bytes"])
        assert mem["limit"] == pytest.approx(1.15 * mem["weights_plus_kv"] + 100e6)
        assert r["peer_median_s"] == {}  # --quick runs no peers


def test_weight_bytes_follow_the_dtype(doc):
    for model in ("tiny-llama", "tiny-qwen3-moe"):
        wb = {r["kiln"]["dtype"]: r["kiln"]["weight_bytes"] for r in doc["results"] if r["kiln"]["model"] == model}
        assert wb["fp8"] < wb["bf16"] < wb["f32"]


def test_moe_counts_only_the_experts_read(doc):
    # tiny-qwen3-moe: 2 of 4 experts per token, so a decode step reads well under all the weights.
    for r in doc["results"]:
        if r["kiln"]["model"] == "tiny-qwen3-moe":
            b = r["kiln"]["bytes_per_token"]
            assert b["weights"] < r["kiln"]["weight_bytes"]
            assert b["weights_runtime_counter"] < r["kiln"]["weight_bytes"]


def test_missing_model_is_a_missing_row():
    out = run("--quick", "--json", "--models", os.path.join(MODELS, "no-such-model"), "--dtypes", "fp8").stdout
    d = json.loads(out)
    assert d["results"] == []
    assert len(d["missing"]) == 1 and "no-such-model" in d["missing"][0]["name"]


def test_quick_needs_models():
    r = run("--quick", "--json", check=False)
    assert r.returncode != 0 and "--models" in r.stderr
