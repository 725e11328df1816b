# `python -m kiln.bench_train` and `kiln bench train`: they run, the JSON has the
# fields every bench result has, torch (when there) sits beside kiln, and a
# missing torch is a missing column. No timing assertions.
import json
import os
import shutil
import subprocess
import sys

import pytest

import kiln


def _check_doc(doc, repeat):
    assert doc["kiln_version"] == kiln.__version__
    names = [r["name"] for r in doc["results"]]
    missing = [m["name"] for m in doc["missing"]]
    assert "mlp digits epoch" in names + missing
    assert "cnn digits epoch" in names + missing
    assert "block fwd+bwd B2 T16 D32 H2" in names + missing
    for r in doc["results"]:
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["median_s"] > 0
        for peer, t in r["peer_median_s"].items():
            assert r["speedup_vs_" + peer] == pytest.approx(t / r["median_s"])
    for r in doc["results"]:
        if r["name"] in ("mlp digits epoch", "cnn digits epoch"):
            assert r["repeat"] == repeat and r["steps_per_epoch"] == 45  # ceil(1438 / 32)
    if "torch" not in doc["peers"]:
        assert "peer torch" in missing
    else:
        assert all("torch" in r["peer_median_s"] for r in doc["results"] if not r["name"].startswith("lora"))
    _check_lora(doc, missing)


def _check_lora(doc, missing):
    lora = {r["name"]: r for r in doc["results"] if r["name"].startswith("lora")}
    if not os.environ.get("KILN_DEFAULT_MODEL"):
        return  # the LoRA cases need the default model; they are on when it is cached
    assert set(lora) | {m for m in missing if m.startswith("lora")} >= {
        "lora step B2 T16 (finetune recipe)", "lora step B1 T32"}
    for r in lora.values():
        assert (r["recipe"]["rank"], r["recipe"]["alpha"], r["recipe"]["target"]) == (8, 16, ["q_proj", "v_proj"])
        assert r["dtype"] == "float32" and r["seq"] in (16, 32)
        assert r["repeat"] == len(r["step_s"]["kiln"]) - 1 >= 1
        sides = ["kiln"] + (["torch"] if "torch" in r["peer_median_s"] else [])
        assert sorted(r["memory"]) == sorted(sides) and sorted(r["losses"]) == sorted(sides)
        for side in sides:
            m = r["memory"][side]
            assert m["peak_rss_mib"] >= m["load_peak_rss_mib"] > 0
            assert m["step_peak_extra_mib"] == pytest.approx(m["peak_rss_mib"] - m["rss_before_step_mib"])
            assert len(r["losses"][side]) == r["repeat"] + 1
            assert all(0 < x < 20 for x in r["losses"][side])  # next-token cross-entropy of a 49152-token vocabulary
        if "torch" in sides:
            assert "torch+peft" in doc["peers"]
            # same weights, adapter and batches: the first step's loss (LoRA B = 0) is the base model's on both
            assert r["losses"]["torch"][0] == pytest.approx(r["losses"]["kiln"][0], abs=1e-3)
            assert r["max_abs_loss_diff"] == pytest.approx(
                max(abs(a - b) for a, b in zip(r["losses"]["kiln"], r["losses"]["torch"])))
        else:
            assert any(m.startswith("peer torch+peft") or m.startswith(r["name"]) for m in missing)


def test_bench_train_json_quick():
    out = subprocess.run([sys.executable, "-m", "kiln.bench_train", "--quick", "--json", "--repeat", "1"],
                         check=True, capture_output=True, text=True).stdout
    _check_doc(json.loads(out), 1)


def test_bench_train_no_lora_skips_the_lora_cases():
    from kiln import bench_train

    doc = bench_train.bench_train(1, True, 0, lora=False)
    assert not [r for r in doc["results"] if r["name"].startswith("lora")]


def test_bench_train_rejects_bad_repeat():
    from kiln import bench_train

    with pytest.raises(SystemExit):
        bench_train.main(["--repeat", "0"])


def test_peer_python_without_torch_is_a_missing_column():
    pytest.importorskip("numpy")
    try:
        import torch  # noqa: F401

        pytest.skip("torch imports here, so the peer python is not used")
    except ImportError:
        pass
    from kiln import bench_train

    # this interpreter has no torch: the peer script fails and says so
    doc = bench_train.bench_train(1, True, 0, peer_python=sys.executable, lora=False)
    why = [m["why"] for m in doc["missing"] if m["name"] == "peer torch"]
    assert why and "torch" in why[0]


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
def test_cli_bench_train():
    out = subprocess.run(["kiln", "bench", "train", "--quick", "--json", "--python", sys.executable],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["command"] == "bench train"
    assert doc["python"]["executable"] == sys.executable
    assert doc["machine"]["cpu_model"]
    _check_doc(doc, 1)
