"""unfold / fold (and nn.Unfold / nn.Fold) against NumPy loops written from the
definition; their gradients (each the other's adjoint); torch's where it imports."""

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(37)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _blocks(H, W, k, d, p, s):
    oh = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    return oh, ow


def unfold_ref(x, k, d=1, p=0, s=1):
    k, d, p, s = map(_pair, (k, d, p, s))
    N, C, H, W = x.shape
    oh, ow = _blocks(H, W, k, d, p, s)
    out = np.zeros((N, C, k[0], k[1], oh, ow), x.dtype)
    for ki in range(k[0]):
        for kj in range(k[1]):
            for oy in range(oh):
                for ox in range(ow):
                    y, xx = oy * s[0] - p[0] + ki * d[0], ox * s[1] - p[1] + kj * d[1]
                    if 0 <= y < H and 0 <= xx < W:
                        out[:, :, ki, kj, oy, ox] = x[:, :, y, xx]
    return out.reshape(N, C * k[0] * k[1], oh * ow)


def fold_ref(cols, size, k, d=1, p=0, s=1):
    size, k, d, p, s = map(_pair, (size, k, d, p, s))
    N = cols.shape[0]
    C = cols.shape[1] // (k[0] * k[1])
    oh, ow = _blocks(size[0], size[1], k, d, p, s)
    c = cols.reshape(N, C, k[0], k[1], oh, ow)
    out = np.zeros((N, C) + size, cols.dtype)
    for ki in range(k[0]):
        for kj in range(k[1]):
            for oy in range(oh):
                for ox in range(ow):
                    y, xx = oy * s[0] - p[0] + ki * d[0], ox * s[1] - p[1] + kj * d[1]
                    if 0 <= y < size[0] and 0 <= xx < size[1]:
                        out[:, :, y, xx] += c[:, :, ki, kj, oy, ox]
    return out


CASES = [  # kernel, dilation, padding, stride
    ((3, 3), 1, 0, 1),
    ((2, 3), (2, 1), (1, 0), (2, 1)),
    (2, 1, 1, 2),
    ((1, 4), 1, (0, 2), (1, 3)),
]


@pytest.mark.parametrize("k,d,p,s", CASES)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_unfold_fold_forward(k, d, p, s, dt):
    x = RNG.standard_normal((2, 3, 7, 6)).astype(dt)
    got = F.unfold(kiln.tensor(x), k, dilation=d, padding=p, stride=s)
    want = unfold_ref(x, k, d, p, s)
    np.testing.assert_array_equal(np.asarray(got), want)
    cols = RNG.standard_normal(want.shape).astype(dt)
    got = F.fold(kiln.tensor(cols), (7, 6), k, dilation=d, padding=p, stride=s)
    np.testing.assert_allclose(np.asarray(got), fold_ref(cols, (7, 6), k, d, p, s), rtol=1e-6, atol=1e-6)


def test_unbatched_noncontiguous_and_modules():
    x = RNG.standard_normal((6, 7, 3)).astype(np.float32)
    xt = kiln.tensor(x).permute(2, 0, 1)  # [3, 6, 7], not contiguous
    got = nn.Unfold(2, padding=1)(xt)
    want = unfold_ref(x.transpose(2, 0, 1)[None], 2, 1, 1, 1)[0]
    np.testing.assert_array_equal(np.asarray(got), want)
    back = nn.Fold((6, 7), 2, padding=1)(got)
    np.testing.assert_allclose(np.asarray(back), fold_ref(want[None], (6, 7), 2, 1, 1, 1)[0], rtol=1e-6)
    assert repr(nn.Fold((6, 7), 2)) == "Fold(output_size=(6, 7), kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(nn.Unfold(2)) == "Unfold(kernel_size=2, dilation=1, padding=0, stride=1)"


@pytest.mark.parametrize("k,d,p,s", CASES)
def test_gradients_are_the_adjoints(k, d, p, s):
    x = RNG.standard_normal((2, 3, 7, 6))
    xt = kiln.tensor(x)
    xt.requires_grad_()
    cols = F.unfold(xt, k, d, p, s)
    g = RNG.standard_normal(tuple(cols.shape))
    (cols * kiln.tensor(g)).sum().backward()
    np.testing.assert_allclose(np.asarray(xt.grad), fold_ref(g, (7, 6), k, d, p, s), rtol=1e-12, atol=1e-12)
    ct = kiln.tensor(g)
    ct.requires_grad_()
    (F.fold(ct, (7, 6), k, d, p, s) * kiln.tensor(x)).sum().backward()
    np.testing.assert_allclose(np.asarray(ct.grad), unfold_ref(x, k, d, p, s), rtol=1e-12, atol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match=r"\[unfold\].*sliding blocks"):
        F.unfold(kiln.zeros(1, 2, 3, 3), 4)
    with pytest.raises(ValueError, match=r"\[unfold\].*3-d or 4-d"):
        F.unfold(kiln.zeros(3, 3), 2)
    with pytest.raises(ValueError, match=r"\[unfold\].*stride"):
        F.unfold(kiln.zeros(1, 2, 3, 3), 2, stride=0)
    with pytest.raises(ValueError, match=r"\[fold\].*divisible"):
        F.fold(kiln.zeros(1, 5, 4), (3, 3), 2)
    with pytest.raises(ValueError, match=r"\[fold\].*sliding blocks 4"):
        F.fold(kiln.zeros(1, 8, 5), (3, 3), 2)


def test_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 7, 6))
    for k, d, p, s in CASES:
        want = torch.nn.functional.unfold(torch.tensor(x), k, d, p, s).numpy()
        np.testing.assert_array_equal(np.asarray(F.unfold(kiln.tensor(x), k, d, p, s)), want)
        back = torch.nn.functional.fold(torch.tensor(want), (7, 6), k, d, p, s).numpy()
        got = F.fold(kiln.tensor(want), (7, 6), k, d, p, s)
        np.testing.assert_allclose(np.asarray(got), back, rtol=1e-12, atol=1e-12)
