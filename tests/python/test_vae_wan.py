"""kiln.models.AutoencoderKLWan against diffusers: the committed tiny fixtures
(tests/data/vae, written by scripts/make_wan_vae_fixture.py with diffusers) hold
random-weight Wan 2.1 and Wan 2.2 TI2V (residual, patched) video VAEs and diffusers'
encode / decode outputs on them; a live comparison runs where diffusers is installed."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import kiln
from vae_util import assert_state_dict_is_diffusers, close
from kiln.models import AutoencoderKLWan
from kiln.nn import functional as F
from kiln.models.wan_vae_blocks import CausalConv3d, FrameCache, RMSNorm

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "vae")
MODEL = os.path.join(DATA, "tiny_autoencoder_kl_wan")
OUTPUTS = os.path.join(DATA, "tiny_autoencoder_kl_wan_outputs.safetensors")
MODEL22 = os.path.join(DATA, "tiny_autoencoder_kl_wan22")
OUTPUTS22 = os.path.join(DATA, "tiny_autoencoder_kl_wan22_outputs.safetensors")
TILED_OUTPUTS = os.path.join(DATA, "tiny_autoencoder_kl_wan_tiled_outputs.safetensors")
TILED_OUTPUTS22 = os.path.join(DATA, "tiny_autoencoder_kl_wan22_tiled_outputs.safetensors")


@pytest.fixture(scope="module")
def vae():
    return AutoencoderKLWan.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def ref():
    return kiln.load(OUTPUTS)


def test_state_dict_keys_are_diffusers(vae):
    assert_state_dict_is_diffusers(vae, MODEL)
    assert vae.temporal_scale == 2 and vae.spatial_scale == 4


def test_decode_matches_diffusers(vae, ref):
    with kiln.no_grad():
        out = vae.decode(ref["latents"])
    assert list(out.shape) == [1, 3, 5, 16, 16]  # 1 + (3 - 1) * 2 frames
    close(out, ref["decode"])
    assert float(out.abs().max()) == 1.0  # the clamp to [-1, 1] is part of decode


def test_encode_matches_diffusers(vae, ref):
    with kiln.no_grad():
        dist = vae.encode(ref["video"])
    assert list(dist.mean.shape) == [1, 4, 5, 4, 4]  # 1 + (9 - 1) / 2 latent frames
    close(dist.mean, ref["encode_mean"])
    close(dist.logvar, ref["encode_logvar"])


def test_causal_conv_chunks_equal_one_pass():
    # A FrameCache carries the past between chunks: frames fed 1, 2, 1 at a time give
    # what one causally padded pass over all 4 frames gives (a float64 direct reference).
    kiln.manual_seed(0)
    conv = CausalConv3d(2, 3, 3, padding=1)
    x = kiln.randn(1, 2, 4, 5, 5)
    with kiln.no_grad():
        cache = FrameCache()
        chunks = [conv(x.narrow(2, s, n), cache) for s, n in ((0, 1), (1, 2), (3, 1))]
        got = kiln.cat(chunks, 2).numpy()
    w, b, xs = conv.weight.numpy().astype(np.float64), conv.bias.numpy(), x.numpy().astype(np.float64)
    xp = np.pad(xs, ((0, 0), (0, 0), (2, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 3, 4, 5, 5))
    for t in range(4):
        for i in range(5):
            for j in range(5):
                patch = xp[0, :, t:t + 3, i:i + 3, j:j + 3]  # [Cin, 3, 3, 3]
                want[0, :, t, i, j] = np.tensordot(w, patch, axes=([1, 2, 3, 4], [0, 1, 2, 3])) + b
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_rms_norm_against_numpy_and_in_half_precision():
    kiln.manual_seed(1)
    norm = RMSNorm(4)
    with kiln.no_grad():
        norm.gamma.copy_(kiln.tensor(np.array([0.5, 1.0, 1.5, -2.0], dtype=np.float32).reshape(4, 1, 1, 1)))
    x = kiln.randn(2, 4, 3, 2, 2)
    xs, g = x.numpy().astype(np.float64), norm.gamma.numpy().astype(np.float64)
    want = xs / np.sqrt((xs * xs).sum(1, keepdims=True)) * 2.0 * g
    close(norm(x), want, rel=1e-5)
    # 4 * 300**2 overflows float16: the norm is taken in float32, as diffusers does.
    big = kiln.full((1, 4, 1, 1, 1), 300.0, dtype=kiln.float16)
    out = norm.to(kiln.float16)(big)
    assert out.dtype == kiln.float16
    np.testing.assert_allclose(out.float().numpy().ravel(), [0.5, 1.0, 1.5, -2.0])


def test_decode_one_latent_frame_at_a_time(vae, ref, monkeypatch):
    # Memory stays bounded because the decoder only ever sees one latent frame (and the
    # encoder 1 + 4-frame chunks), each causal conv keeping at most 2 past frames.
    seen, kept = [], []
    decoder, encoder = vae.decoder.forward, vae.encoder.forward

    def record(fn):
        def run(x, cache=None, *rest):
            seen.append(x.shape[2])
            out = fn(x, cache, *rest)
            kept.append(max(v.shape[2] for v in cache._state.values() if not isinstance(v, str)))
            return out
        return run

    monkeypatch.setattr(vae.decoder, "forward", record(decoder))
    with kiln.no_grad():
        vae.decode(ref["latents"])
    assert seen == [1, 1, 1] and max(kept) == 2
    seen.clear()
    monkeypatch.setattr(vae.encoder, "forward", record(encoder))
    with kiln.no_grad():
        vae.encode(ref["video"])
    assert seen == [1, 4, 4] and max(kept) == 2


def test_latent_normalisation(vae):
    z = kiln.randn(1, 4, 2, 3, 3)
    mean = np.array([0.1, -0.2, 0.3, -0.4]).reshape(1, 4, 1, 1, 1)
    std = np.array([1.5, 0.5, 2.0, 1.25]).reshape(1, 4, 1, 1, 1)
    s = vae.scale_latents(z)
    close(s, (z.numpy() - mean) / std)
    close(vae.unscale_latents(s), z)


def test_errors(vae, tmp_path):
    with pytest.raises(ValueError, match=r"\[AutoencoderKLWan.decode\].*\[1, 4, 3, 4\]"):
        vae.decode(kiln.zeros(1, 4, 3, 4))
    with pytest.raises(ValueError, match=r"\[AutoencoderKLWan.encode\]"):
        vae.encode(kiln.zeros(1, 4, 1, 8, 8))
    with pytest.raises(ValueError, match=r"\[AutoencoderKLWan.encode\] \[1, 3, 6, 16, 16\].*multiple of 2"):
        vae.encode(kiln.zeros(1, 3, 6, 16, 16))  # the last 1-frame chunk cannot be halved in time
    with pytest.raises(FileNotFoundError, match="no config.json"):
        AutoencoderKLWan.from_pretrained(str(tmp_path))
    with pytest.raises(ValueError, match="describes a AutoencoderKL"):
        AutoencoderKLWan.from_pretrained(os.path.join(DATA, "tiny_autoencoder_kl"))
    d = tmp_path / "patched"
    shutil.copytree(MODEL, d)
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(patch_size=2)  # 3 channels are not whole 2x2 patches
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="patch_size"):
        AutoencoderKLWan.from_pretrained(str(d))
    with pytest.raises(ValueError, match=r"\[AutoencoderKLWan.encode\].*\[N, 3, T >= 1, H, W\]"):
        AutoencoderKLWan.from_pretrained(MODEL22).encode(kiln.zeros(1, 12, 1, 8, 8))


# ---- spatial tiling (diffusers' enable_tiling) ----

@pytest.mark.parametrize("model,outputs", [(MODEL, TILED_OUTPUTS), (MODEL22, TILED_OUTPUTS22)],
                         ids=["wan21", "wan22_residual"])
def test_tiled_matches_diffusers(model, outputs):
    # diffusers' tiled_encode / tiled_decode on inputs of several tiles, ragged last
    # tiles included; the tiny Wan 2.2 config's scale_factor_spatial (4) is not its true
    # scale (8), so both sides ran with spatial_compression_ratio set to the stored one.
    vae = AutoencoderKLWan.from_pretrained(model)
    ref = kiln.load(outputs)
    tile, stride, ratio = (int(v) for v in ref["settings"].tolist())
    vae.spatial_compression_ratio = ratio
    vae.enable_tiling(tile, tile, stride, stride)
    tiles = []
    with kiln.no_grad():
        out = vae.decode(ref["latents"], progress=lambda done, total: tiles.append((done, total)))
        dist = vae.encode(ref["video"])
        untiled = vae.decode(ref["latents"], tiled=False)
    h, w = ref["latents"].shape[3], ref["latents"].shape[4]
    step = stride // ratio
    n = len(range(0, h, step)) * len(range(0, w, step))
    assert tiles == [(k, n) for k in range(1, n + 1)] and n >= 4
    close(out, ref["decode"])
    close(dist.mean, ref["encode_mean"])
    close(dist.logvar, ref["encode_logvar"])
    assert list(untiled.shape) == list(out.shape)
    assert float((untiled - out).abs().max()) > 1e-2  # the seams are blended, not the untiled result


def test_tiling_settings_and_errors(vae):
    # Fresh model: diffusers' defaults (256 / 192); the square shorthand; refusals.
    m = AutoencoderKLWan.from_pretrained(MODEL)
    assert not m.use_tiling and (m.tile_sample_min_height, m.tile_sample_stride_width) == (256, 192)
    m.enable_tiling(tile_size=32, overlap=0.5)
    assert m.use_tiling and (m.tile_sample_min_width, m.tile_sample_stride_height) == (32, 16)
    m.enable_tiling(20, 24, 12, 16)
    assert (m.tile_sample_min_height, m.tile_sample_min_width, m.tile_sample_stride_height,
            m.tile_sample_stride_width) == (20, 24, 12, 16)
    m.disable_tiling()
    assert not m.use_tiling
    z = kiln.load(TILED_OUTPUTS)["latents"]
    with kiln.no_grad():
        # A tile that covers the input runs the untiled path; a per-call tile_size tiles.
        whole = m.decode(z, tiled=True, tile_size=32)
        close(whole, m.decode(z))
        close(m.decode(z, tiled=True, tile_size=16), kiln.load(TILED_OUTPUTS)["decode"])
    with pytest.raises(ValueError, match=r"tile height 18 must be a positive multiple of 4"):
        m.enable_tiling(18)
    with pytest.raises(ValueError, match=r"tile stride 6 must be a positive multiple of 4"):
        m.decode(z, tiled=True, tile_size=8, overlap=0.25)
    with pytest.raises(ValueError, match=r"strides \(24, 24\) must not exceed the tile \(16, 16\)"):
        m.enable_tiling(16, 16, 24, 24)
    with pytest.raises(ValueError, match=r"overlap 1.5 must be a fraction"):
        m.encode(kiln.zeros(1, 3, 1, 8, 8), tiled=True, overlap=1.5)


# ---- Wan 2.2 TI2V-5B layout: residual blocks, 2x2 patches ----

def test_wan22_residual_layout_matches_diffusers():
    vae = AutoencoderKLWan.from_pretrained(MODEL22)
    on_disk = kiln.load(os.path.join(MODEL22, "diffusion_pytorch_model.safetensors"))
    assert sorted(vae.state_dict()) == sorted(on_disk)
    assert vae.spatial_scale == 8 and vae.temporal_scale == 2
    ref = kiln.load(OUTPUTS22)
    with kiln.no_grad():
        dist = vae.encode(ref["video"])
        out = vae.decode(ref["latents"])
    assert list(dist.mean.shape) == [1, 4, 3, 2, 2]
    close(dist.mean, ref["encode_mean"])
    close(dist.logvar, ref["encode_logvar"])
    assert list(out.shape) == [1, 3, 5, 16, 16]
    close(out, ref["decode"])


def test_patchify_round_trip_and_layout():
    from kiln.models.wan_vae_residual import patchify, unpatchify

    x = np.arange(2 * 3 * 2 * 4 * 6, dtype=np.float32).reshape(2, 3, 2, 4, 6)
    p = patchify(kiln.tensor(x), 2).numpy()
    assert p.shape == (2, 12, 2, 2, 3)
    # channel c * 4 + dw * 2 + dh holds pixel (2 * i + dh, 2 * j + dw)
    for c in range(3):
        for dh in range(2):
            for dw in range(2):
                np.testing.assert_array_equal(p[:, c * 4 + dw * 2 + dh], x[:, c, :, dh::2, dw::2])
    np.testing.assert_array_equal(unpatchify(kiln.tensor(p), 2).numpy(), x)


@pytest.mark.parametrize("residual", [False, True], ids=["wan21", "wan22_residual"])
def test_matches_diffusers_live(tmp_path, residual):
    torch = pytest.importorskip("torch")
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(5)
    extra = dict(is_residual=True, patch_size=2, in_channels=12, out_channels=12,
                 scale_factor_spatial=16) if residual else {}
    ref = diffusers.AutoencoderKLWan(base_dim=8, z_dim=3, dim_mult=[1, 2, 2, 2], num_res_blocks=2,
                                     temperal_downsample=[True, True, False], **extra).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ref.save_pretrained(str(tmp_path / "vae"))
    mine = AutoencoderKLWan.from_pretrained(str(tmp_path / "vae"))
    g = torch.Generator().manual_seed(1)
    scale = 16 if residual else 8
    # Untiled, then tiled: 2 x 3 tiles of 2 latent positions with stride 1 (ragged at the edges).
    for frames, (h, w), tiled in ((9, (2, 3), False), (5, (3, 4), True)):
        if tiled:
            ref.enable_tiling(2 * scale, 2 * scale, scale, scale)
            mine.enable_tiling(2 * scale, 2 * scale, scale, scale)
        video = torch.rand(1, 3, frames, h * scale, w * scale, generator=g) * 2 - 1
        latents = torch.randn(1, 3, 1 + (frames - 1) // 4, h, w, generator=g)
        with torch.no_grad():
            dist = ref.encode(video).latent_dist
            dec = ref.decode(latents).sample
        with kiln.no_grad():
            got = mine.encode(kiln.tensor(video.numpy()))
            out = mine.decode(kiln.tensor(latents.numpy()))
        close(got.mean, dist.mean.numpy())
        close(got.logvar, dist.logvar.numpy())
        close(out, dec.numpy())


# ---- CLI (kiln vae picks the class from config.json) ----

def _run(*args):
    return subprocess.run([sys.executable, "-m", "kiln.vae", *args], capture_output=True, text=True, timeout=300)


def test_cli_video_round_trip(vae, tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(2)
    pixels = rng.integers(0, 256, (5, 16, 12, 3), dtype=np.uint8)  # [T, H, W, 3]
    (tmp_path / "frames").mkdir()
    for t in range(5):
        Image.fromarray(pixels[t], "RGB").save(tmp_path / "frames" / f"f{t:02d}.png")
    r = _run("encode", MODEL, str(tmp_path / "frames"), str(tmp_path / "z.safetensors"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == "kiln vae encode: chunk 2/2"
    z = kiln.load(str(tmp_path / "z.safetensors"))["latents"]
    x = kiln.tensor(pixels.transpose(3, 0, 1, 2)[None].astype(np.float32) / 127.5 - 1.0)  # [1, 3, T, H, W]
    with kiln.no_grad():
        close(z, vae.scale_latents(vae.encode(x).mode()))
    assert list(z.shape) == [1, 4, 3, 4, 3]

    r = _run("decode", MODEL, str(tmp_path / "z.safetensors"), str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == "kiln vae decode: latent frame 3/3"
    with kiln.no_grad():
        want = vae.decode(vae.unscale_latents(z)).numpy()[0]  # [3, T, H, W]
    names = sorted(os.listdir(tmp_path / "out"))
    assert names == [f"{t:04d}.png" for t in range(5)]
    for t, n in enumerate(names):
        got = np.asarray(Image.open(tmp_path / "out" / n))
        assert got.shape == (16, 12, 3) and got.dtype == np.uint8
        expect = np.rint((want[:, t] + 1) * 127.5).transpose(1, 2, 0)
        assert np.abs(got.astype(np.float64) - expect).max() <= 1


def test_cli_wan_tiled_decode(tmp_path):
    # --tile-size 16 (latent tiles of 4, stride 3 at overlap 0.25): the CLI's frames are
    # the module's tiled decode, and progress counts tiles.
    Image = pytest.importorskip("PIL.Image")
    ref = kiln.load(TILED_OUTPUTS)
    kiln.save({"latents": ref["latents"]}, str(tmp_path / "z.safetensors"))
    r = _run("decode", MODEL, str(tmp_path / "z.safetensors"), str(tmp_path / "out"), "--raw", "--tile-size", "16")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == "kiln vae decode: tile 6/6"
    want = ref["decode"].numpy()[0]  # diffusers' tiled decode, [3, T, H, W]
    names = sorted(os.listdir(tmp_path / "out"))
    assert len(names) == 5
    for t, n in enumerate(names):
        got = np.asarray(Image.open(tmp_path / "out" / n)).astype(np.float64)
        assert np.abs(got - np.rint((want[:, t] + 1) * 127.5).transpose(1, 2, 0)).max() <= 1
    r = _run("decode", MODEL, str(tmp_path / "z.safetensors"), str(tmp_path / "out2"), "--tile-size", "10")
    assert r.returncode == 1 and "tile height 10 must be a positive multiple of 4" in r.stderr


def test_channels_last_frame_helpers_match_row_major():
    # The decoder runs channels-last; its frame views and its frame interleaving
    # keep channels-last results equal to the row-major ops. A single frame's view
    # must read as channels-last, or the 2x upsample after it goes row-major.
    from kiln.models.wan_vae_blocks import _frames, _interleave_frames

    kiln.manual_seed(3)
    for t in (1, 3):
        v = kiln.randn(1, 5, t, 3, 4)
        f = _frames(v.contiguous(memory_format=kiln.channels_last_3d))
        assert kiln._C.suggest_memory_format(f) == kiln.channels_last
        np.testing.assert_array_equal(f.numpy(), v.numpy().transpose(0, 2, 1, 3, 4).reshape(t, 5, 3, 4))
        up = F.interpolate(f, scale_factor=2.0, mode="nearest")
        assert up.is_contiguous(memory_format=kiln.channels_last) and not up.is_contiguous()
    x = kiln.randn(1, 6, 2, 3, 4)  # [N, 2C, T, H, W]: even frames, then odd frames
    want = x.numpy().reshape(1, 2, 3, 2, 3, 4).transpose(0, 2, 3, 1, 4, 5).reshape(1, 3, 4, 3, 4)
    cl = _interleave_frames(x.contiguous(memory_format=kiln.channels_last_3d).reshape(1, 2, 3, 2, 3, 4))
    assert cl.is_contiguous(memory_format=kiln.channels_last_3d) and not cl.is_contiguous()
    np.testing.assert_array_equal(cl.numpy(), want)
    np.testing.assert_array_equal(_interleave_frames(x.reshape(1, 2, 3, 2, 3, 4)).numpy(), want)
