# `kiln bench linear|scaled_mm|moe --quick --json`: runs, writes the promised
# fields. No timing assertions.
import json
import os
import shutil
import subprocess
import sys

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
def test_bench_linear_exact_too_pairs_each_dot_case():
    out = subprocess.run(["kiln", "bench", "linear", "--quick", "--json", "--repeat", "1", "--no-prefill",
                          "--dtypes", "f32,bf16,fp8", "--exact-too"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    doc = json.loads(out)
    kinds = [r["kind"] for r in doc["results"]]
    speedups = doc["summary"].get("geomean_speedup_dot_over_exact", {})
    if "bf16-exact" in kinds:
        # A CPU with the dot kernel: bf16 and FP8 cases each come twice, f32 once.
        assert kinds == ["f32", "bf16", "bf16-exact", "fp8", "fp8-exact"]
        assert doc["results"][2]["name"] == doc["results"][1]["name"] + " exact"
        assert set(speedups) == {"bf16", "fp8"} and all(v > 0 for v in speedups.values())
    else:
        assert kinds == ["f32", "bf16", "fp8"] and not speedups


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
def test_bench_linear_bf16_activations_kind_reads_half_the_activation_bytes():
    out = subprocess.run(["kiln", "bench", "linear", "--quick", "--json", "--repeat", "1", "--no-prefill",
                          "--dtypes", "bf16,bf16-bf16x"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    f32x, bf16x = json.loads(out)["results"]
    assert (f32x["kind"], bf16x["kind"]) == ("bf16", "bf16-bf16x")
    # Same weights; x [1, K] and y [1, N] in bf16 instead of float32.
    N, K = bf16x["N"], bf16x["K"]
    assert f32x["bytes"] - bf16x["bytes"] == 2 * (N + K)
    bad = subprocess.run(["kiln", "bench", "linear", "--quick", "--dtypes", "bf16-f32x"], cwd=ROOT,
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "bf16-bf16x" in bad.stderr


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


def _python_without_torch(tmp_path):
    # This interpreter without site-packages: the peer script's `import torch` fails
    # even where torch is installed.
    wrapper = tmp_path / "python-no-site"
    wrapper.write_text(f"#!/bin/sh\nexec '{sys.executable}' -S \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def _python_with_torch():
    # KILN_TORCH_PYTHON names an interpreter that has torch; else this one if it has it.
    exe = os.environ.get("KILN_TORCH_PYTHON") or sys.executable
    if not os.access(exe, os.X_OK):
        return None
    ok = subprocess.run([exe, "-c", "import torch"], capture_output=True).returncode == 0
    return exe if ok else None


def _run(*args):
    p = subprocess.run(["kiln", "bench", *args, "--quick", "--json", "--repeat", "2"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
@pytest.mark.parametrize("what", ["moe", "linear"])
def test_bench_peer_without_torch_is_a_missing_column(tmp_path, what):
    py = _python_without_torch(tmp_path)
    args = [what, "--peer-python", py] + (["--no-prefill"] if what == "linear" else [])
    doc = _run(*args)
    peer = doc["summary"]["peer"]
    assert peer["executable"] == py
    assert "torch" in peer["error"]
    assert doc["results"]
    for r in doc["results"]:
        assert "peer_median_s" not in r
        assert not any(k.startswith("speedup_vs_") for k in r)


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
def test_bench_moe_torch_peers(tmp_path):
    py = _python_with_torch()
    if py is None:
        pytest.skip("no python with torch (set KILN_TORCH_PYTHON)")
    doc = _run("moe", "--peer-python", py)
    peer = doc["summary"]["peer"]
    assert "error" not in peer and peer["torch_version"]
    assert {"torch_grouped_mm", "torch_linear_loop", "torch_scaled_mm_loop"} <= set(peer["peers"])
    assert [r["tokens"] for r in doc["results"]] == [1, 16, 1, 16]
    for r in doc["results"]:
        loop = "torch_linear_loop" if r["kind"] == "bf16" else "torch_scaled_mm_loop"
        # Every peer either ran (a time and its speedup) or says why not.
        for key in ("torch_grouped_mm", loop):
            if key in r.get("peer_missing", {}):
                assert r["peer_missing"][key]
                assert any(m["name"] == r["name"] and m["peer"] == key for m in peer["missing"])
            else:
                t = r["peer_median_s"][key]
                assert t > 0
                assert r["speedup_vs_" + key] == pytest.approx(t / r["median_s"])
        if r["kind"] == "bf16":
            # torch runs both bf16 peers on CPU; they compute the same layer.
            assert set(r["peer_median_s"]) == {"torch_grouped_mm", "torch_linear_loop"}
            assert r["peer_max_rel_diff"] < 0.05
    for kind in ("bf16", "fp8"):
        loop = "torch_linear_loop" if kind == "bf16" else "torch_scaled_mm_loop"
        assert doc["summary"]["geomean_speedup_vs_" + loop][kind] > 0
