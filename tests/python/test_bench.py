# The Python side of `kiln bench ops`: it runs, its JSON has the promised
# fields, and a missing peer is a missing column. No timing assertions.
import json
import shutil
import subprocess
import sys

import pytest

import kiln
from kiln import bench


def test_bench_ops_json_quick():
    out = subprocess.run([sys.executable, "-m", "kiln.bench", "ops", "--quick", "--json", "--repeat", "2"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["kiln_version"] == kiln.__version__
    assert isinstance(doc["peers"], dict)
    assert isinstance(doc["missing"], list)
    names = [r["name"] for r in doc["results"]]
    if hasattr(kiln, "add"):
        assert "py add 1-element dispatch" in names
    for r in doc["results"]:
        assert r["repeat"] == 2
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["ns_per_call"] == pytest.approx(r["median_s"] * 1e9)
        for peer, t in r.get("peer_median_s", {}).items():
            assert t > 0
            assert r["speedup_vs_" + peer] == pytest.approx(t / r["median_s"])
    if "torch" not in doc["peers"]:
        assert any(m["name"] == "peer torch" for m in doc["missing"])


def test_bench_ops_rejects_bad_repeat():
    with pytest.raises(SystemExit):
        bench.main(["ops", "--repeat", "0"])


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
def test_cli_merges_python_side():
    out = subprocess.run(["kiln", "bench", "ops", "--quick", "--json", "--repeat", "1", "--filter", "dispatch",
                          "--python", sys.executable], check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["python"]["executable"] == sys.executable
    sides = {r.get("side", "c++") for r in doc["results"]}
    assert "c++" in sides
    if hasattr(kiln, "add"):
        assert "python" in sides
