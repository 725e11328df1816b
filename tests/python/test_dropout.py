"""kiln.nn.functional.dropout and its channel / alpha forms, and the kiln.nn
dropout modules: the mask against a NumPy Philox4x32-10 written from its
definition, keep statistics, exact scaling, whole-channel masks, alpha
dropout's moments, gradients (mask * scale, by hand), reproducibility, eval
mode and torch's errors. Comparisons with torch skip where torch is absent."""

import warnings

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

M32 = np.uint64(0xFFFFFFFF)
ALPHA = 1.7580993408473766


def philox(counter, key):
    """Philox4x32-10 of uint64 counters under a 64-bit key: four uint32 words each."""
    c = np.asarray(counter, dtype=np.uint64)
    c0, c1 = c & M32, c >> np.uint64(32)
    c2 = np.zeros_like(c)
    c3 = np.zeros_like(c)
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M32)
        k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & M32
    return np.stack([c0, c1, c2, c3], axis=-1)


def keep_mask(draws, p, seed, offset=0):
    """Draw j is kept when word j % 4 of philox(offset + j // 4, seed) / 2**32 >= p."""
    j = np.arange(draws, dtype=np.uint64)
    w = philox(np.uint64(offset) + j // np.uint64(4), seed)
    word = w[np.arange(draws), (j % np.uint64(4)).astype(np.int64)]
    return word.astype(np.float64) / 2.0**32 >= p


def alpha_consts(p, dt):
    """torch's alpha-dropout multiplier and offsets, rounded as its noise tensor is."""
    a = 1.0 / np.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    c1, c2 = dt(ALPHA * a), dt(ALPHA * a * p)
    return dt(a), c2, dt(dt(-c1) + c2)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_mask_is_the_documented_philox_stream(p):
    kiln.manual_seed(1234)
    y = F.dropout(kiln.ones(10007), p).numpy()
    np.testing.assert_array_equal(y != 0, keep_mask(10007, p, 1234))
    # The next call continues the stream: (10007 + 3) // 4 counters later.
    y2 = F.dropout(kiln.ones(64), p).numpy()
    np.testing.assert_array_equal(y2 != 0, keep_mask(64, p, 1234, offset=(10007 + 3) // 4))


def test_feature_mask_is_one_draw_per_channel():
    kiln.manual_seed(77)
    y = F.dropout2d(kiln.ones(4, 5, 3, 2), 0.5).numpy()
    np.testing.assert_array_equal(y[:, :, 0, 0] != 0, keep_mask(20, 0.5, 77).reshape(4, 5))


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.8])
def test_fraction_kept_within_a_few_sigma(p):
    n = 100_000
    kiln.manual_seed(int(p * 1000))
    kept = (F.dropout(kiln.ones(n), p).numpy() != 0).mean()
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(kept - (1 - p)) < 5 * sigma


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [0.1, 0.3, 1 / 3, 0.7])
def test_kept_elements_are_scaled_exactly(dtype, p):
    # torch's multiplier: 1 / (1 - p) computed and rounded in x's dtype.
    x = np.random.default_rng(0).standard_normal(20_000).astype(dtype)
    kiln.manual_seed(3)
    y = F.dropout(kiln.tensor(x), p).numpy()
    kept = keep_mask(x.size, p, 3)
    scale = dtype(1) / dtype(1 - p)
    np.testing.assert_array_equal(y[kept], x[kept] * scale)
    assert (y[~kept] == 0).all()


def test_half_precision_scaling():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x32 = np.random.default_rng(1).standard_normal(5000).astype(np.float32)
    for name, dt in [("bfloat16", ml_dtypes.bfloat16), ("float16", np.float16)]:
        xh = x32.astype(dt)
        kiln.manual_seed(9)
        y = F.dropout(kiln.tensor(xh), 0.3).numpy().astype(np.float32)
        kept = keep_mask(x32.size, 0.3, 9)
        scale = np.float32(np.float32(1) / np.float32(0.7)).astype(dt).astype(np.float32)
        want = (xh.astype(np.float32) * scale).astype(dt).astype(np.float32)
        np.testing.assert_array_equal(y[kept], want[kept], err_msg=name)
        assert (y[~kept] == 0).all(), name


@pytest.mark.parametrize("fn,shape,channels", [
    (F.dropout1d, (6, 7, 11), 2), (F.dropout1d, (7, 11), 1),
    (F.dropout2d, (5, 6, 4, 3), 2), (F.dropout2d, (5, 6, 9), 2),
    (F.dropout3d, (3, 4, 2, 3, 5), 2), (F.dropout3d, (4, 2, 3, 5), 1),
    (F.feature_alpha_dropout, (5, 6, 4, 3), 2),
])
def test_feature_dropout_zeroes_whole_channels(fn, shape, channels):
    x = np.random.default_rng(2).uniform(1, 2, shape).astype(np.float32)
    kiln.manual_seed(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(kiln.tensor(x), 0.5, True).numpy()
    maps = y.reshape(int(np.prod(shape[:channels])), -1)
    xm = x.reshape(maps.shape)
    if fn is F.feature_alpha_dropout:
        a, keep_add, drop_add = alpha_consts(0.5, np.float32)
        dropped = (maps == drop_add).all(axis=1)
        kept = np.isclose(maps, xm * a + keep_add, rtol=1e-6).all(axis=1)
    else:
        dropped = (maps == 0).all(axis=1)
        kept = (maps == xm * np.float32(2)).all(axis=1)
    assert (dropped ^ kept).all()
    assert dropped.any() and kept.any()


def test_dropout2d_and_3d_rank_warnings():
    x = kiln.ones(2, 3, 4)
    with pytest.warns(UserWarning, match="interpreted as shape"):
        F.dropout2d(x, 0.5)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(kiln.ones(2, 3), 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.dropout2d(kiln.ones(2, 3, 4, 5), 0.5)
        F.dropout3d(kiln.ones(2, 3, 4, 5), 0.5)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_alpha_dropout_keeps_mean_and_variance(p):
    x = np.random.default_rng(4).standard_normal(200_000).astype(np.float32)
    kiln.manual_seed(21)
    y = F.alpha_dropout(kiln.tensor(x), p, True).numpy()
    assert abs(y.mean()) < 0.02
    assert abs(y.std() - 1) < 0.02
    kept = keep_mask(x.size, p, 21)
    a, keep_add, drop_add = alpha_consts(p, np.float32)
    np.testing.assert_array_equal(y[kept], x[kept] * a + keep_add)
    assert (y[~kept] == drop_add).all()


@pytest.mark.filterwarnings("ignore:dropout2d")
@pytest.mark.parametrize("fn,alpha", [(F.dropout, False), (F.alpha_dropout, True), (F.dropout2d, False)])
def test_gradient_is_mask_times_scale(fn, alpha):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6, 5))
    g = rng.standard_normal((4, 6, 5))
    xt = kiln.tensor(x)
    xt.requires_grad_()
    kiln.manual_seed(8)
    y = fn(xt, 0.4, True)
    y.backward(kiln.tensor(g))
    group = 5 if fn is F.dropout2d else 1
    kept = np.repeat(keep_mask(x.size // group, 0.4, 8), group).reshape(x.shape)
    mul = alpha_consts(0.4, np.float64)[0] if alpha else 1 / 0.6
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(kept, g * mul, 0.0))


def test_double_backward():
    x = kiln.tensor(np.random.default_rng(6).standard_normal(50))
    x.requires_grad_()
    v = kiln.ones(50, dtype=kiln.float64)
    v.requires_grad_()
    kiln.manual_seed(2)
    y = F.dropout(x, 0.5)
    (gx,) = kiln.autograd.grad([y], [x], [v], create_graph=True)
    (gv,) = kiln.autograd.grad([gx.sum()], [v])
    kept = keep_mask(50, 0.5, 2)
    np.testing.assert_array_equal(gv.numpy(), np.where(kept, 2.0, 0.0))


def test_same_seed_same_mask_and_modules():
    x = kiln.ones(4096)
    kiln.manual_seed(99)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    kiln.manual_seed(99)
    c = nn.Dropout(0.5)(x).numpy()
    np.testing.assert_array_equal(a, c)
    assert (a != b).any()


def test_eval_mode_and_shortcuts_return_the_input():
    x = kiln.ones(3, 4, 5)
    for m in [nn.Dropout(), nn.Dropout1d(), nn.Dropout2d(), nn.Dropout3d(), nn.AlphaDropout(),
              nn.FeatureAlphaDropout()]:
        m.eval()
        assert m(x) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False, as torch
    assert F.feature_alpha_dropout(x, 0.5) is x
    assert F.dropout2d(kiln.ones(4), 0.5, training=False).shape == (4,)


def test_p_one_gives_zeros_and_nan_stays_nan():
    x = kiln.tensor(np.array([1.0, -2.0, np.nan, np.inf], dtype=np.float32))
    for fn in (F.dropout, F.alpha_dropout):
        y = fn(x, 1.0, True).numpy()
        np.testing.assert_array_equal(y, [0, 0, np.nan, np.nan])


def test_inplace():
    x = kiln.ones(1000)
    kiln.manual_seed(5)
    y = F.dropout(x, 0.25, inplace=True)
    assert y is x
    np.testing.assert_array_equal(x.numpy() != 0, keep_mask(1000, 0.25, 5))
    leaf = kiln.ones(3)
    leaf.requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.dropout(leaf, 0.5, inplace=True)
    # A non-leaf in place records the backward.
    w = kiln.ones(8, dtype=kiln.float64)
    w.requires_grad_()
    h = w * 1.0
    kiln.manual_seed(6)
    F.dropout(h, 0.5, inplace=True).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.where(keep_mask(8, 0.5, 6), 2.0, 0.0))


def test_errors():
    x = kiln.ones(2, 3)
    for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
            fn(x, 1.5, True)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(kiln.ones(2, 3, 4, 5), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.dropout2d(kiln.ones(4), 0.5)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(kiln.ones(4), 0.5, True)
    with pytest.raises(TypeError):
        F.dropout(kiln.ones(3, dtype=kiln.int64), 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout2d(-0.5)
    assert repr(nn.AlphaDropout(0.2)) == "AlphaDropout(p=0.2, inplace=False)"


def test_agrees_with_torch_where_no_randomness_is_involved():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).standard_normal((2, 3, 4, 5)).astype(np.float32)
    pairs = [(F.dropout, torch.nn.functional.dropout), (F.dropout2d, torch.nn.functional.dropout2d),
             (F.dropout3d, torch.nn.functional.dropout3d), (F.alpha_dropout, torch.nn.functional.alpha_dropout),
             (F.feature_alpha_dropout, torch.nn.functional.feature_alpha_dropout)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, t in pairs:
            for p, training in [(1.0, True), (0.0, True), (0.5, False)]:
                np.testing.assert_array_equal(k(kiln.tensor(x), p, training).numpy(),
                                              t(torch.from_numpy(x), p, training).numpy())
    # torch's kept / dropped values for alpha dropout agree with the constants here.
    y = torch.nn.functional.alpha_dropout(torch.from_numpy(x.ravel()), 0.3, True).numpy()
    a, keep_add, drop_add = alpha_consts(0.3, np.float32)
    assert ((y == x.ravel() * a + keep_add) | (y == drop_add)).all()
