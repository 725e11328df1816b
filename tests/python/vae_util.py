# Shared checks of the VAE tests (test_vae.py, test_vae_wan.py).
import os

import numpy as np

import kiln


def close(got, want, rel=1e-4):
    got = got.numpy() if isinstance(got, kiln.Tensor) else np.asarray(got)
    want = want.numpy() if isinstance(want, kiln.Tensor) else np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rel, atol=rel * float(np.abs(want).max()))


def assert_state_dict_is_diffusers(vae, model_dir):
    """The model's keys and values are the checkpoint's, and it loads frozen."""
    on_disk = kiln.load(os.path.join(model_dir, "diffusion_pytorch_model.safetensors"))
    assert sorted(vae.state_dict()) == sorted(on_disk)
    for k, v in on_disk.items():
        np.testing.assert_array_equal(vae.state_dict()[k].numpy(), v.numpy())
    assert not any(p.requires_grad for p in vae.parameters())
