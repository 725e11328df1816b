# Memory of kiln.models' VAE blocks in inference: the tensors a ResNet block
# allocates above its input, counted by kiln's allocator (memory_stats), are at
# most what the computation needs with each intermediate freed after its last
# use and silu / the residual add done in place: max(Cin + Cout, 2 Cout) floats
# per position, plus the convolutions' layout copies and fixed-size scratch. The outputs must not change with it (checked against NumPy).
import numpy as np
import pytest

import kiln
from kiln.models.vae_blocks import ResnetBlock2D


def _block(cin, cout):
    kiln.manual_seed(0)
    b = ResnetBlock2D(cin, cout, groups=4).eval()
    b.requires_grad_(False)
    return b


def _peak_above_input(fn, x):
    with kiln.no_grad():
        kiln.reset_peak_memory_stats()
        before = kiln.memory_stats()["current_bytes"]
        y = fn(x)
        return y, kiln.memory_stats()["peak_bytes"] - before


@pytest.mark.parametrize("cin,cout", [(8, 8), (8, 16), (16, 8)])
def test_resnet_block_inference_peak(cin, cout):
    b = _block(cin, cout)
    x = kiln.randn(1, cin, 32, 32)
    y, extra = _peak_above_input(b, x)
    assert list(y.shape) == [1, cout, 32, 32]
    # The block's own intermediates: max(Cin + Cout, 2 Cout) floats per position.
    # On top of them a float32 NCHW convolution runs its channels-last kernel
    # through a copy of its input and of its output (Cin_conv + Cout_conv per
    # position, at most cin + cout here) and fixed-size im2col / packing blocks
    # (the 512 KiB). A whole-image im2col (9 Cin per position) breaks this bound.
    copies = max(cin + cout, 2 * cout)
    assert extra <= (max(cin + cout, 2 * cout) + copies) * 32 * 32 * 4 + 512 * 1024


def _np_group_norm(x, groups, w, b, eps=1e-6):
    n, c, h, ww = x.shape
    g = x.reshape(n, groups, -1).astype(np.float64)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    return g.reshape(n, c, h, ww) * w.reshape(1, c, 1, 1) + b.reshape(1, c, 1, 1)


def _np_conv(x, w, b):  # stride 1, padding k // 2
    k = w.shape[-1]
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    n, _, h, ww = x.shape
    out = np.zeros((n, w.shape[0], h, ww))
    for i in range(k):
        for j in range(k):
            out += np.einsum("ncyx,oc->noyx", xp[:, :, i:i + h, j:j + ww], w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


def _silu(v):
    return v / (1 + np.exp(-v))


@pytest.mark.parametrize("cin,cout", [(8, 8), (8, 16)])
def test_resnet_block_inference_matches_numpy(cin, cout):
    b = _block(cin, cout)
    x = kiln.randn(1, cin, 9, 7)
    with kiln.no_grad():
        y = b(x).numpy()
    p = {k: v.numpy().astype(np.float64) for k, v in b.state_dict().items()}
    xn = x.numpy().astype(np.float64)
    h = _np_conv(_silu(_np_group_norm(xn, 4, p["norm1.weight"], p["norm1.bias"])), p["conv1.weight"], p["conv1.bias"])
    h = _np_conv(_silu(_np_group_norm(h, 4, p["norm2.weight"], p["norm2.bias"])), p["conv2.weight"], p["conv2.bias"])
    if cin != cout:
        xn = _np_conv(xn, p["conv_shortcut.weight"], p["conv_shortcut.bias"])
    np.testing.assert_allclose(y, xn + h, rtol=1e-4, atol=1e-4)


def test_resnet_block_still_trains():
    # with gradients on, nothing is done in place: the gradient reaches the input and the weights
    b = _block(8, 8)
    b.requires_grad_(True)
    x = kiln.randn(1, 8, 6, 6).requires_grad_()
    b(x).square().sum().backward()
    assert x.grad is not None and b.conv1.weight.grad is not None and b.norm1.weight.grad is not None
    assert float(x.grad.abs().sum().item()) > 0
