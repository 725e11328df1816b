# `python -m kiln.bench_train` and `kiln bench train`: they run, the JSON has the
# fields every bench result has, torch (when there) sits beside kiln, and a
# missing torch is a missing column. No timing assertions.
import json
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
        assert all("torch" in r["peer_median_s"] for r in doc["results"])


def test_bench_train_json_quick():
    out = subprocess.run([sys.executable, "-m", "kiln.bench_train", "--quick", "--json", "--repeat", "1"],
                         check=True, capture_output=True, text=True).stdout
    _check_doc(json.loads(out), 1)


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
    doc = bench_train.bench_train(1, True, 0, peer_python=sys.executable)
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
