# `kiln bench linalg --quick --json`: it runs, its JSON has the promised fields
# (bench/README.md), the NumPy peer column appears, a missing torch is a missing
# column. No timing assertions.
import json
import os
import shutil
import subprocess
import sys

import pytest


def _kiln():
    here = os.path.join(os.path.dirname(sys.executable), "kiln")
    return here if os.path.exists(here) else shutil.which("kiln")


@pytest.mark.skipif(_kiln() is None, reason="kiln CLI not installed")
def test_bench_linalg_quick_json():
    out = subprocess.run([_kiln(), "bench", "linalg", "--quick", "--json", "--repeat", "1", "--warmup", "0",
                          "--python", sys.executable], check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["command"] == "bench linalg" and doc["quick"] is True
    names = [r["name"] for r in doc["results"]]
    for prefix in ("inv f32", "solve_triangular f32", "lu_factor c64", "qr f32", "svd f32"):
        assert any(n.startswith(prefix) for n in names), prefix
    for r in doc["results"]:
        assert 0 < r["min_s"] <= r["median_s"] <= r["max_s"]
        assert "numpy" in r["peer_median_s"]
        for peer, t in r["peer_median_s"].items():
            assert r["speedup_vs_" + peer] == pytest.approx(t / r["median_s"])
        if r["name"].startswith(("lu_factor", "qr", "svd")):
            assert "lapack" in r["peer_median_s"]
    if "torch" not in doc["peers"]:
        assert any(m["name"] == "torch peer" for m in doc.get("missing", []))
