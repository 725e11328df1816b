# `kiln bench linear|scaled_mm|moe --quick --json`: runs, writes the promised
# fields. No timing assertions.
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
@pytest.mark.parametrize("what", ["linear", "scaled_mm", "moe"])
def test_bench_matmul_quick_json(what):
    out = subprocess.run(["kiln", "bench", what, "--quick", "--json", "--repeat", "2"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["command"] == "bench " + what
    assert doc["machine"]["roof"]["median_gbps"] > 0
    assert doc["results"]
    for r in doc["results"]:
        assert r["repeat"] == 2
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
    if what == "linear":
        assert set(doc["summary"]["geomean_roof_fraction"]) == {"f32", "bf16", "fp8"}
        assert doc["summary"]["prefill_ratio_f32_over_openblas"] > 0


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
def test_bench_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "linear.png"
    subprocess.run(["kiln", "bench", "linear", "--quick", "--no-prefill", "--repeat", "1", "--plot", str(png)],
                   cwd=ROOT, check=True, capture_output=True, text=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A plot that cannot be written is an error, not a silent skip.
    bad = subprocess.run(["kiln", "bench", "linear", "--quick", "--no-prefill", "--repeat", "1", "--plot",
                          str(tmp_path / "missing-dir" / "x.png")], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and "--plot" in bad.stderr
