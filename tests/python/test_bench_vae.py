# `python -m kiln.bench_vae` and `kiln bench vae`: they run (--quick: a tiny
# AutoencoderKL that kiln builds itself), the JSON has the fields every bench
# result has plus the memory figures, the live-set figure follows its stated
# formula, and torch + diffusers (when there) decode the same thing beside kiln.
# No timing or memory assertions.
import json
import os
import shutil
import subprocess
import sys

import pytest

import kiln
from kiln import bench_vae

QUICK_NAMES = ["decode 256x256 tile 256", "decode 256x256 tile 128", "encode 256x256 tile 256",
               "encode 256x256 tile 128"]


def _check_doc(doc):
    assert doc["kiln_version"] == kiln.__version__
    assert doc["quick"] and doc["threads"] == 2
    names = [r["name"] for r in doc["results"]]
    assert names == QUICK_NAMES
    for r in doc["results"]:
        assert r["min_s"] <= r["median_s"] <= r["max_s"] and r["median_s"] > 0
        assert r["tiled"] == (r["tile"] == 128)
        assert r["peak_rss_bytes"] > 0 and r["live_set_bytes"] > 0
        assert r["peak_over_live_set"] == pytest.approx(r["peak_rss_bytes"] / r["live_set_bytes"])
        want = [1, 3, 256, 256] if r["op"] == "decode" else [1, 4, 128, 128]  # the tiny model halves once
        assert r["output_shape"] == want
        for peer, t in r["peer_median_s"].items():
            assert r["speedup_vs_" + peer] == pytest.approx(t / r["median_s"])
            assert r["peak_ratio_vs_" + peer] == pytest.approx(r["peak_rss_bytes"] / r["peer_peak_rss_bytes"][peer])
    missing = [m["name"] for m in doc["missing"]]
    if "torch" not in doc["peers"]:
        assert "peer torch" in missing


def test_bench_vae_json_quick_kiln_only():
    out = subprocess.run([sys.executable, "-m", "kiln.bench_vae", "--quick", "--json", "--kiln-only"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    _check_doc(doc)
    assert doc["peers"] == {} and all(r["peer_median_s"] == {} for r in doc["results"])


def test_live_set_figure_by_hand():
    cfg = dict(bench_vae.QUICK_CONFIG, in_channels=3, out_channels=3)
    # Decoder of a 64x64 latent tile, channels (16, 8): the widest moment is the
    # first ResNet block of the last stage at 128x128, 16 -> 8 channels: its
    # input, the silu'd norm of it and the norm (3 * 16 floats per position).
    assert bench_vae._decoder_floats(cfg, 64) == 3 * 16 * 128 * 128
    # 256x256 image, 128-pixel tiles: latent 128, tiles of 64 stepping by 48 ->
    # sides 64, 64, 32 (9 tiles); tile outputs 3 x (2a) x (2b).
    outs = [3 * (2 * a) * (2 * b) for a in (64, 64, 32) for b in (64, 64, 32)]
    held = max(3 * 16 * 128 * 128 + sum(outs) - outs[-1], sum(outs) + 3 * 256 * 256)
    got, note = bench_vae.live_set_bytes(cfg, "decode", 256, 128, 1000)
    assert got == 1000 + 4 * (4 * 128 * 128 + held)
    assert "9 tile outputs" in note
    # Untiled (the tile covers the image): weights + input + one pass's activations.
    got, _ = bench_vae.live_set_bytes(cfg, "decode", 256, 256, 0)
    assert got == 4 * (4 * 128 * 128 + 3 * 16 * 256 * 256)
    # Encoder of a 64x64 image tile: conv_in 3 -> 8 (11 per position), ResNet
    # 8 -> 8 (3 * 8), pad + stride-2 conv 8 * (64^2 + 65^2) in all, then at
    # 32x32 ResNet 8 -> 16 (3 * 16) and attention (5 * 16): the first ResNet wins.
    assert bench_vae._encoder_floats(cfg, 64) == 3 * 8 * 64 * 64


WAN = os.path.join(os.path.dirname(__file__), "..", "data", "vae", "tiny_autoencoder_kl_wan")


@pytest.mark.parametrize("peer", [False, True], ids=["kiln_only", "beside_torch"])
def test_bench_vae_wan_video(peer):
    # The tiny Wan fixture (4 pixels per latent, 2 frames per latent frame) on a
    # 24x28x5 video with 16-pixel tiles (stride 12): 2 x 3 tiles either way.
    if peer:
        pytest.importorskip("torch")
        pytest.importorskip("diffusers")
    doc = bench_vae.bench_vae(model=WAN, video=(24, 28, 5), tiles=[16, 32], kiln_only=not peer)
    assert doc["model"]["class"] == "AutoencoderKLWan"
    names = [r["name"] for r in doc["results"]]
    assert names == ["decode 24x28x5 tile 16", "decode 24x28x5 tile 32", "encode 24x28x5 tile 16",
                     "encode 24x28x5 tile 32"]
    for r in doc["results"]:
        assert r["tiled"] == (r["tile"] == 16)
        assert r["input_shape"] == ([1, 4, 3, 6, 7] if r["op"] == "decode" else [1, 3, 5, 24, 28])
        assert r["output_shape"] == ([1, 3, 5, 24, 28] if r["op"] == "decode" else [1, 4, 3, 6, 7])
        assert r["tensor_peak_bytes"] > 0
        assert r["live_set_bytes"] == doc["model"]["weight_bytes"] + r["tensor_peak_bytes"]
        if peer:  # the same tiles on both sides: the same video
            assert r["output_mean_abs"] == pytest.approx(r["peer_output_mean_abs"]["torch"], rel=1e-4)
    with pytest.raises(ValueError, match=r"multiples of 4"):
        bench_vae.bench_vae(model=WAN, video=(25, 28, 5), kiln_only=True)


def test_bench_vae_rejects_bad_repeat():
    with pytest.raises(SystemExit):
        bench_vae.main(["--repeat", "0"])


def test_bench_vae_missing_model_names_the_script(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_bench_vae.py"):
        bench_vae.bench_vae(model=str(tmp_path), kiln_only=True)


def test_bench_vae_beside_torch():
    pytest.importorskip("torch")
    pytest.importorskip("diffusers")
    doc = bench_vae.bench_vae(quick=True)
    _check_doc(doc)
    assert "torch" in doc["peers"]
    for r in doc["results"]:  # same weights, same input, same tiles: the same picture
        assert r["output_mean_abs"] == pytest.approx(r["peer_output_mean_abs"]["torch"], rel=1e-4)


@pytest.mark.skipif(shutil.which("kiln") is None, reason="kiln CLI not on PATH")
def test_cli_bench_vae():
    out = subprocess.run(["kiln", "bench", "vae", "--quick", "--json", "--kiln-only", "--python", sys.executable],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    assert doc["command"] == "bench vae"
    assert doc["python"]["executable"] == sys.executable
    assert doc["machine"]["cpu_model"]
    _check_doc(doc)
