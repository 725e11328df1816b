"""kiln.models.AutoencoderKL against diffusers: the committed tiny fixture
(tests/data/vae, written by scripts/make_vae_fixture.py with diffusers) holds a
random-weight AutoencoderKL and diffusers' encode / decode / tiled outputs on it;
a live comparison runs where diffusers is installed. Plus the `kiln vae` CLI."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import kiln
from vae_util import assert_state_dict_is_diffusers, close
from kiln.models import AutoencoderKL, DiagonalGaussianDistribution

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "vae")
MODEL = os.path.join(DATA, "tiny_autoencoder_kl")
OUTPUTS = os.path.join(DATA, "tiny_autoencoder_kl_outputs.safetensors")
TILE = 16  # the fixture's tile size in pixels


@pytest.fixture(scope="module")
def vae():
    return AutoencoderKL.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def ref():
    return kiln.load(OUTPUTS)


def test_state_dict_keys_are_diffusers(vae):
    assert_state_dict_is_diffusers(vae, MODEL)
    assert vae.scaling_factor == 0.5 and vae.shift_factor == 0.125


def test_encode_matches_diffusers(vae, ref):
    with kiln.no_grad():
        dist = vae.encode(ref["image"])
    assert list(dist.mean.shape) == [1, 4, 20, 28]
    close(dist.mean, ref["encode_mean"])
    close(dist.logvar, ref["encode_logvar"])
    close(dist.mode(), ref["encode_mean"])


def test_decode_matches_diffusers(vae, ref):
    with kiln.no_grad():
        out = vae.decode(ref["latents"])
    assert list(out.shape) == [1, 3, 40, 56]
    close(out, ref["decode"])


def test_tiled_decode_matches_diffusers(vae, ref):
    calls = []
    with kiln.no_grad():
        out = vae.decode(ref["latents"], tiled=True, tile_size=TILE, progress=lambda d, t: calls.append((d, t)))
    close(out, ref["tiled_decode"])
    # The tiles are seen: tiled output differs from the whole-image decode.
    assert np.abs(ref["tiled_decode"].numpy() - ref["decode"].numpy()).max() > 1e-3
    # 20 x 28 latents, tiles of 8 stepping by 6: 4 rows x 5 columns.
    assert calls == [(i, 20) for i in range(1, 21)]


def test_tiled_encode_matches_diffusers(vae, ref):
    vae.enable_tiling(tile_size=TILE)
    try:
        with kiln.no_grad():
            dist = vae.encode(ref["image"])
    finally:
        vae.disable_tiling()
        vae.tile_sample_min_size = 32
    close(dist.mean, ref["tiled_encode_mean"])
    close(dist.logvar, ref["tiled_encode_logvar"])


def test_small_input_is_not_tiled(vae, ref):
    z = ref["latents"][:, :, :8, :8]
    with kiln.no_grad():
        close(vae.decode(z, tiled=True, tile_size=TILE), vae.decode(z), rel=1e-6)


def test_distribution_sample_and_kl():
    rng = np.random.default_rng(0)
    params = rng.standard_normal((2, 6, 3, 5)).astype(np.float32) * 4
    params[0, 3, 0, 0] = 50.0  # logvar clamped to 20
    d = DiagonalGaussianDistribution(kiln.tensor(params))
    mean, logvar = params[:, :3], np.clip(params[:, 3:], -30, 20)
    close(d.mean, mean)
    close(d.logvar, logvar)
    close(d.std, np.exp(0.5 * logvar))
    eps = kiln.randn(2, 3, 3, 5, generator=kiln.Generator(5)).numpy()
    close(d.sample(kiln.Generator(5)), mean + np.exp(0.5 * logvar) * eps)
    kl = 0.5 * (mean.astype(np.float64) ** 2 + np.exp(logvar) - 1.0 - logvar).sum(axis=(1, 2, 3))
    close(d.kl(), kl)


def _copy_sharded_old_names(dst):
    """The fixture as two shards with an index and pre-rename attention names."""
    os.makedirs(dst)
    shutil.copy(os.path.join(MODEL, "config.json"), dst)
    state = kiln.load(os.path.join(MODEL, "diffusion_pytorch_model.safetensors"))
    old = {"to_q": "query", "to_k": "key", "to_v": "value", "to_out.0": "proj_attn"}
    renamed = {}
    for k, v in state.items():
        for new, o in old.items():
            k = k.replace(f"attentions.0.{new}.", f"attentions.0.{o}.")
        renamed[k] = v
    keys = sorted(renamed)
    shards = {"diffusion_pytorch_model-00001-of-00002.safetensors": keys[: len(keys) // 2],
              "diffusion_pytorch_model-00002-of-00002.safetensors": keys[len(keys) // 2:]}
    weight_map = {}
    for name, ks in shards.items():
        kiln.save({k: renamed[k] for k in ks}, os.path.join(dst, name))
        weight_map.update({k: name for k in ks})
    with open(os.path.join(dst, "diffusion_pytorch_model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return any(".query." in k for k in renamed)


def test_sharded_checkpoint_with_old_attention_names(vae, ref, tmp_path):
    assert _copy_sharded_old_names(str(tmp_path / "pipe" / "vae"))
    other = AutoencoderKL.from_pretrained(str(tmp_path / "pipe"))  # finds the vae/ subfolder
    with kiln.no_grad():
        close(other.decode(ref["latents"]), vae.decode(ref["latents"]), rel=1e-6)


def test_half_precision_variant_is_cast_to_float32(tmp_path):
    shutil.copy(os.path.join(MODEL, "config.json"), tmp_path)
    state = kiln.load(os.path.join(MODEL, "diffusion_pytorch_model.safetensors"))
    kiln.save({k: v.to(kiln.float16) for k, v in state.items()},
              str(tmp_path / "diffusion_pytorch_model.fp16.safetensors"))
    with pytest.raises(FileNotFoundError, match="diffusion_pytorch_model.safetensors"):
        AutoencoderKL.from_pretrained(str(tmp_path))
    m = AutoencoderKL.from_pretrained(str(tmp_path), variant="fp16")
    for k, v in m.state_dict().items():
        assert v.dtype == kiln.float32
        np.testing.assert_array_equal(v.numpy(), state[k].numpy().astype(np.float16).astype(np.float32))


def test_errors(vae, tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        AutoencoderKL.from_pretrained(str(tmp_path))
    with open(tmp_path / "config.json", "w") as f:
        json.dump({"_class_name": "UNet2DConditionModel"}, f)
    with pytest.raises(ValueError, match="UNet2DConditionModel"):
        AutoencoderKL.from_pretrained(str(tmp_path))
    with open(tmp_path / "config.json", "w") as f:
        json.dump({"_class_name": "AutoencoderKL", "block_out_channels": [8], "norm_num_groups": 4}, f)
    with pytest.raises(FileNotFoundError, match="safetensors"):
        AutoencoderKL.from_pretrained(str(tmp_path))
    with pytest.raises(ValueError, match=r"\[N, 4, H, W\].*\[1, 3, 8, 8\]"):
        vae.decode(kiln.zeros(1, 3, 8, 8))
    with pytest.raises(ValueError, match="tile_size 15"):
        vae.decode(kiln.zeros(1, 4, 8, 8), tiled=True, tile_size=15)
    with pytest.raises(ValueError, match="overlap"):
        vae.enable_tiling(overlap=1.0)
    assert not vae.use_tiling  # a refused setting leaves tiling as it was
    with pytest.raises(ValueError, match="does not advance"):
        vae.decode(kiln.zeros(1, 4, 9, 9), tiled=True, tile_size=2, overlap=0.75)
    with pytest.raises(ValueError, match="CrossAttnDownBlock2D"):
        AutoencoderKL(down_block_types=("CrossAttnDownBlock2D",))


# ---- CLI ----

def _run(*args):
    return subprocess.run([sys.executable, "-m", "kiln.vae", *args], capture_output=True, text=True, timeout=300)


def test_cli_round_trip(vae, tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)
    Image.fromarray(pixels, "RGB").save(tmp_path / "in.png")
    r = _run("encode", MODEL, str(tmp_path / "in.png"), str(tmp_path / "z.safetensors"))
    assert r.returncode == 0, r.stderr
    z = kiln.load(str(tmp_path / "z.safetensors"))["latents"]
    x = kiln.tensor(pixels.transpose(2, 0, 1)[None].astype(np.float32) / 127.5 - 1.0)
    with kiln.no_grad():
        close(z, vae.scale_latents(vae.encode(x).mode()))
        want = vae.decode(vae.unscale_latents(z))
    assert list(z.shape) == [1, 4, 20, 28]

    r = _run("decode", MODEL, str(tmp_path / "z.safetensors"), str(tmp_path / "out.png"), "--tile-size", "16")
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stderr.splitlines() if "tile" in ln][-1] == "kiln vae decode: tile 20/20"
    with kiln.no_grad():
        want = vae.decode(vae.unscale_latents(z), tiled=True, tile_size=16).numpy()[0]
    got = np.asarray(Image.open(tmp_path / "out.png"))
    assert got.shape == (40, 56, 3) and got.dtype == np.uint8
    expect = np.rint((np.clip(want, -1, 1) + 1) * 127.5).transpose(1, 2, 0)
    assert np.abs(got.astype(np.float64) - expect).max() <= 1
    assert got.min() == 0 and got.max() == 255  # random weights: values beyond [-1, 1] are clipped


def test_cli_help_and_errors(tmp_path):
    r = _run("--help")
    assert r.returncode == 0 and "encode" in r.stdout and "decode" in r.stdout
    r = _run("decode", "--help")
    assert r.returncode == 0 and "--tile-size" in r.stdout and "--tiled" in r.stdout
    r = _run("decode", str(tmp_path), "z.safetensors", "out.png")
    assert r.returncode == 1 and "config.json" in r.stderr
    if shutil.which("kiln") is None:
        pytest.skip("kiln CLI not on PATH")
    r = subprocess.run(["kiln", "vae", "encode", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--tile-size" in r.stdout, r.stderr
    assert "vae" in subprocess.run(["kiln", "--help"], capture_output=True, text=True, timeout=120).stdout


def test_cli_without_pillow_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['PIL'] = None; from kiln.vae import main; "
            f"sys.exit(main(['encode', {MODEL!r}, 'in.png', {str(tmp_path / 'z.safetensors')!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "pip install pillow" in r.stderr, r.stderr


# ---- live comparison with diffusers ----

def test_live_diffusers_three_levels(tmp_path):
    torch = pytest.importorskip("torch")
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(3)
    ref = diffusers.AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3,
        block_out_channels=(8, 8, 16), layers_per_block=2, norm_num_groups=4, latent_channels=3,
        sample_size=32, use_quant_conv=False).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ref.save_pretrained(str(tmp_path / "vae"))
    mine = AutoencoderKL.from_pretrained(str(tmp_path / "vae"))
    assert mine.quant_conv is None and mine.post_quant_conv is not None
    image = torch.rand(2, 3, 36, 44) * 2 - 1
    latents = torch.randn(1, 3, 12, 14)
    with torch.no_grad():
        dist = ref.encode(image).latent_dist
        dec = ref.decode(latents).sample
        ref.enable_tiling()
        ref.tile_sample_min_size, ref.tile_latent_min_size = 32, 8
        tiled = ref.decode(latents).sample
    with kiln.no_grad():
        d = mine.encode(kiln.tensor(image.numpy()))
        close(d.mean, dist.mean.numpy())
        close(d.logvar, dist.logvar.numpy())
        close(mine.decode(kiln.tensor(latents.numpy())), dec.numpy())
        close(mine.decode(kiln.tensor(latents.numpy()), tiled=True, tile_size=32), tiled.numpy())
