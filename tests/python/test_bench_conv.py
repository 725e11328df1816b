# `kiln bench conv --quick --json`: the document's structure (machine, one
# result per case with its target, roof figures for the memory-bound ops,
# GFLOP/s for the convolutions, the torch column when a torch is at hand).
# Smoke runs at tiny sizes: never a timing threshold.
import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")

MEMORY_OPS = {"group_norm", "interpolate", "pad", "dropout"}


def bench(*args):
    r = subprocess.run(["kiln", "bench", "conv", "--quick", "--json", "--repeat", "2", *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_quick_json_structure():
    doc = bench()
    assert doc["command"] == "bench conv" and doc["quick"] is True and doc["repeat"] == 2
    assert doc["machine"]["cpu_model"] and doc["machine"]["threads"] >= 1
    assert any(m["name"] == "torch peer" for m in doc["missing"])
    results = doc["results"]
    names = [r["name"] for r in results]
    assert len(names) == len(set(names))
    ops = {r["op"] for r in results}
    assert ops == {"conv1d", "conv2d", "conv3d"} | MEMORY_OPS
    for r in results:
        assert r["min_s"] <= r["median_s"] <= r["max_s"] and r["median_s"] > 0
        assert r["target"]["speedup_vs_torch"] > 0
        assert "speedup_vs_torch" not in r
        if r["op"] in MEMORY_OPS:
            assert r["bytes"] > 0 and r["gbps"] > 0 and r["roof_fraction"] > 0
            assert r["target"]["roof_fraction"] == 0.7
            assert isinstance(r["meets_target"], bool)  # the roof fraction alone decides without torch
        else:
            assert r["gflops"] > 0 and r["roof_fraction"] is None and "meets_target" not in r
            assert r["spec"]["variant"] in ("fwd", "bwd")
    # conv2d and conv3d: forward and backward, each in both memory formats.
    for op in ("conv2d", "conv3d"):
        kinds = {(r["spec"]["variant"], r["spec"]["layout"]) for r in results if r["op"] == op}
        assert kinds == {(v, l) for v in ("fwd", "bwd") for l in ("nchw", "channels_last")}
    # The depthwise causal conv1d: groups resolved to the channel count, output length L + 3.
    dw = [r for r in results if r["op"] == "conv1d" and r["spec"].get("groups", 1) > 1]
    assert dw and all(r["spec"]["groups"] == r["spec"]["input"][1] for r in dw)
    assert all(r["output_shape"][2] == r["spec"]["input"][2] + 3 for r in dw)


def test_cases_file_and_filter(tmp_path):
    cases = {"cases": [{"op": "conv2d", "input": [1, 8, 9, 7], "out_channels": 4, "kernel": 3, "padding": 1},
                       {"op": "pad", "input": [1, 3, 5, 6], "pad": [0, 1, 0, 1]}]}
    f = tmp_path / "cases.json"
    f.write_text(json.dumps(cases))
    doc = bench("--cases", f, "--filter", "conv2d")
    assert doc["cases_file"] == str(f)
    assert [(r["spec"]["variant"], r["spec"]["layout"]) for r in doc["results"]] == [
        ("fwd", "nchw"), ("fwd", "channels_last"), ("bwd", "nchw"), ("bwd", "channels_last")]
    assert all(r["output_shape"] == [1, 4, 9, 7] for r in doc["results"])
    doc = bench("--cases", f, "--filter", "pad")
    (r,) = doc["results"]
    assert r["bytes"] == 4 * (3 * 5 * 6 + 3 * 6 * 7)


def test_torch_peer_column():
    pytest.importorskip("torch")
    doc = bench("--peer-python", sys.executable)
    assert doc["peers"]["torch"] and "missing" not in doc
    assert doc["results"]
    for r in doc["results"]:
        assert r["peer_median_s"]["torch"] > 0 and r["speedup_vs_torch"] > 0
        assert isinstance(r["meets_target"], bool)
