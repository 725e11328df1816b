"""Memory formats (kiln.contiguous_format, channels_last, channels_last_3d,
preserve_format): strides written out by hand, values against NumPy, and the
layouts compared with torch's where torch is installed."""
import pickle

import numpy as np
import pytest

import kiln
from kiln.nn import functional as F

CL = (60, 1, 15, 3)  # channels-last strides of [2, 3, 4, 5]: [H*W*C, 1, W*C, C]
CF = (60, 20, 5, 1)


def ramp(shape, dtype=np.float32):
    n = int(np.prod(shape))
    return ((np.arange(n) - n // 2) * 0.25).astype(dtype).reshape(shape)


def test_objects():
    assert repr(kiln.channels_last) == "kiln.channels_last"
    assert repr(kiln.contiguous_format) == "kiln.contiguous_format"
    assert repr(kiln.channels_last_3d) == "kiln.channels_last_3d"
    assert repr(kiln.preserve_format) == "kiln.preserve_format"
    assert kiln.channels_last == kiln.channels_last
    assert kiln.channels_last != kiln.contiguous_format
    assert isinstance(kiln.channels_last, kiln.memory_format)
    assert pickle.loads(pickle.dumps(kiln.channels_last)) == kiln.channels_last
    assert len({kiln.channels_last, kiln.channels_last, kiln.preserve_format}) == 2


def test_contiguous_and_is_contiguous():
    a = ramp((2, 3, 4, 5))
    x = kiln.tensor(a)
    y = x.contiguous(memory_format=kiln.channels_last)
    assert y.stride() == CL
    assert not y.is_contiguous()
    assert y.is_contiguous(memory_format=kiln.channels_last)
    assert not y.is_contiguous(memory_format=kiln.channels_last_3d)
    assert x.is_contiguous(memory_format=kiln.contiguous_format)
    np.testing.assert_array_equal(y.numpy(), a)
    assert y.contiguous().stride() == CF
    np.testing.assert_array_equal(y.contiguous().numpy(), a)
    z = kiln.tensor(ramp((2, 3, 4, 5, 6))).contiguous(memory_format=kiln.channels_last_3d)
    assert z.stride() == (360, 1, 90, 18, 3)
    assert z.is_contiguous(memory_format=kiln.channels_last_3d)


def test_errors():
    with pytest.raises(ValueError, match="rank 4"):
        kiln.tensor(ramp((2, 3, 4))).contiguous(memory_format=kiln.channels_last)
    with pytest.raises(ValueError, match="rank 5"):
        kiln.tensor(ramp((2, 3, 4, 5))).contiguous(memory_format=kiln.channels_last_3d)
    with pytest.raises(ValueError, match="preserve"):
        kiln.tensor(ramp((2, 3))).t().contiguous(memory_format=kiln.preserve_format)
    with pytest.raises(ValueError):
        kiln.empty(2, 3, 4, 5, memory_format=kiln.preserve_format)
    with pytest.raises(ValueError, match="rank 4"):
        kiln.empty(2, 3, 4, memory_format=kiln.channels_last)
    with pytest.raises(TypeError, match="memory_format"):
        kiln.tensor(ramp((2, 3))).contiguous(memory_format="channels_last")


def test_factories():
    assert kiln.empty(2, 3, 4, 5, memory_format=kiln.channels_last).stride() == CL
    assert kiln.empty((2, 3, 4, 5, 6), memory_format=kiln.channels_last_3d).stride() == (360, 1, 90, 18, 3)
    assert kiln.empty(2, 3, 4, 5).stride() == CF
    x = kiln.tensor(ramp((2, 3, 4, 5))).contiguous(memory_format=kiln.channels_last)
    for f in (kiln.empty_like, kiln.zeros_like, kiln.ones_like, kiln.rand_like, kiln.randn_like):
        assert f(x).stride() == CL, f.__name__
        assert f(x, memory_format=kiln.contiguous_format).stride() == CF, f.__name__
        assert f(x, dtype=kiln.float64).stride() == CL, f.__name__
    assert kiln.full_like(x, 2.5).stride() == CL
    np.testing.assert_array_equal(kiln.full_like(x, 2.5).numpy(), np.full((2, 3, 4, 5), 2.5, np.float32))
    np.testing.assert_array_equal(kiln.ones_like(x).numpy(), np.ones((2, 3, 4, 5), np.float32))
    c = kiln.tensor(ramp((2, 3, 4, 5)))
    assert kiln.empty_like(c, memory_format=kiln.channels_last).stride() == CL
    assert kiln.zeros_like(c).stride() == CF
    # a transposed matrix keeps its layout (preserve_format on a dense tensor)
    t = kiln.tensor(ramp((3, 4))).t()
    assert kiln.empty_like(t).stride() == (1, 4)
    assert t.clone().stride() == (1, 4)


def test_clone_and_to():
    a = ramp((2, 3, 4, 5))
    x = kiln.tensor(a).contiguous(memory_format=kiln.channels_last)
    assert x.clone().stride() == CL
    assert x.clone(memory_format=kiln.contiguous_format).stride() == CF
    assert kiln.tensor(a).clone(memory_format=kiln.channels_last).stride() == CL
    d = x.to(kiln.float64)
    assert d.stride() == CL
    np.testing.assert_array_equal(d.numpy(), a.astype(np.float64))
    assert x.to(memory_format=kiln.channels_last) is x
    assert x.to(memory_format=kiln.contiguous_format).stride() == CF
    assert kiln.tensor(a).to(memory_format=kiln.channels_last).stride() == CL
    assert kiln.tensor(a).to(kiln.float64, memory_format=kiln.channels_last).stride() == CL
    assert x.to("cpu", copy=True).stride() == CL
    # a non-dense channels-last-ordered view gives a dense channels-last copy
    s = kiln.tensor(ramp((2, 3, 4, 10))).contiguous(memory_format=kiln.channels_last)[..., ::2]
    assert s.clone().stride() == CL
    np.testing.assert_array_equal(s.clone().numpy(), s.numpy())


def test_elementwise_keeps_channels_last():
    a, b = ramp((2, 3, 4, 5)), ramp((2, 3, 4, 5)) * -0.5
    x = kiln.tensor(a).contiguous(memory_format=kiln.channels_last)
    y = kiln.tensor(b).contiguous(memory_format=kiln.channels_last)
    bias = ramp((3, 1, 1))
    cases = {
        "exp": (kiln.exp(x), np.exp(a)),
        "neg": (-x, -a),
        "abs": (kiln.abs(x), np.abs(a)),
        "add": (x + y, a + b),
        "mul_scalar": (x * 2, a * 2),
        "bias_right": (x + kiln.tensor(bias), a + bias),
        "bias_left": (kiln.tensor(bias) + x, bias + a),
        "gt": (x > 0, a > 0),
        "where": (kiln.where(x > 0, x, 0.0), np.where(a > 0, a, 0)),
    }
    for name, (got, want) in cases.items():
        assert got.stride() == CL, name
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=name)
    assert (kiln.tensor(b) + x).stride() == CF  # the first operand's layout decides
    assert kiln.exp(kiln.tensor(a)).stride() == CF
    assert kiln.suggest_memory_format(x) == kiln.channels_last
    assert kiln.suggest_memory_format(kiln.tensor(a)) == kiln.contiguous_format


# ---- against torch (skipped where torch is not installed) ----

AMBIGUOUS = [
    ((4, 1, 1, 1), (1, 1, 1, 1)),
    ((4, 1, 1, 1), (7, 7, 7, 7)),
    ((1, 3, 1, 5), (15, 5, 5, 1)),
    ((1, 5, 1, 3), (15, 1, 5, 5)),
    ((2, 3, 4, 5), (60, 1, 15, 3)),
    ((2, 3, 4, 5), (60, 0, 15, 3)),
    ((1, 3, 4, 5), (60, 1, 15, 3)),
    ((3, 1, 2, 2), (4, 1, 2, 1)),
    ((3, 1, 2, 2), (4, 4, 2, 1)),
    ((2, 3, 4, 5), (120, 1, 30, 6)),
    ((2, 3, 4, 5), (1, 2, 12, 48)),
    ((2, 3, 4, 5), (60, 1, 3, 12)),
    ((2, 3, 1, 5), (15, 1, 15, 3)),
    ((2, 3, 4, 1), (12, 1, 3, 3)),
    ((3, 4), (1, 3)),
]


@pytest.mark.parametrize("size,stride", AMBIGUOUS)
def test_layouts_match_torch(size, stride):
    torch = pytest.importorskip("torch")
    from torch._prims_common import suggest_memory_format

    t = torch.zeros(1000).as_strided(size, stride)
    k = kiln.zeros(1000).as_strided(size, stride)
    assert k.is_contiguous() == t.is_contiguous()
    if len(size) == 4:
        assert k.is_contiguous(memory_format=kiln.channels_last) == t.is_contiguous(
            memory_format=torch.channels_last)
        assert repr(kiln.suggest_memory_format(k)) == repr(suggest_memory_format(t)).replace("torch.", "kiln.")
    assert kiln.exp(k).stride() == t.exp().stride()
    assert k.clone().stride() == t.clone().stride()
    assert kiln.empty_like(k).stride() == torch.empty_like(t).stride()
    assert k.to(kiln.float64).stride() == t.to(torch.float64).stride()


def test_binary_layouts_match_torch():
    torch = pytest.importorskip("torch")
    ta = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    ka = kiln.tensor(ta.contiguous().numpy()).contiguous(memory_format=kiln.channels_last)
    for shape in [(2, 3, 4, 5), (3, 1, 1), (5,), (1, 3, 1, 1), (2, 1, 1, 1), (3, 4, 5)]:
        tb, kb = torch.randn(shape), kiln.tensor(np.ones(shape, np.float32))
        assert (ka + kb).stride() == (ta + tb).stride(), shape
        assert (kb + ka).stride() == (tb + ta).stride(), shape


def test_torch_memory_format_objects_accepted():
    torch = pytest.importorskip("torch")
    x = kiln.tensor(ramp((2, 3, 4, 5)))
    assert x.contiguous(memory_format=torch.channels_last).stride() == CL


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int64])
def test_layout_changes_are_exact_copies(dtype):
    # NCHW <-> NHWC, NCDHW <-> NDHWC and arbitrary permutations copied to contiguous run as
    # blocked transposes; every element lands where NumPy's transpose puts it, odd sizes and
    # size-1 dims included.
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((2, 35, 3, 1, 67)) * 100).astype(dtype)
    for perm in [(0, 2, 3, 4, 1), (4, 3, 2, 1, 0), (1, 0, 4, 2, 3), (0, 1, 2, 4, 3)]:
        np.testing.assert_array_equal(kiln.tensor(a).permute(*perm).contiguous().numpy(), a.transpose(perm))
    x = kiln.tensor(a)
    cl = x.contiguous(memory_format=kiln.channels_last_3d)
    assert cl.is_contiguous(memory_format=kiln.channels_last_3d)
    np.testing.assert_array_equal(cl.numpy(), a)
    np.testing.assert_array_equal(cl.contiguous().numpy(), a)
    b = (rng.standard_normal((3, 5, 33, 40)) * 100).astype(dtype)
    cl2 = kiln.tensor(b).contiguous(memory_format=kiln.channels_last)
    np.testing.assert_array_equal(np.asarray(cl2.numpy()), b)
    np.testing.assert_array_equal(cl2.contiguous().numpy(), b)
    # A strided (sliced) source is not a plain transpose: the general loop, same answer.
    np.testing.assert_array_equal(kiln.tensor(b)[:, :, ::2].contiguous(memory_format=kiln.channels_last).numpy(),
                                  b[:, :, ::2])


def _is_cl(t, fmt):
    return t.is_contiguous(memory_format=fmt) and not t.is_contiguous()


@pytest.mark.parametrize("dims,fmt", [(4, kiln.channels_last), (5, kiln.channels_last_3d)])
def test_cat_pad_and_elementwise_keep_channels_last(dims, fmt):
    # As torch: cat of inputs that all suggest one memory format keeps it (mixed
    # layouts give row-major), a constant pad keeps a channels-last input's layout,
    # and unary / binary ops (broadcasting included) run on channels-last operands;
    # values are NumPy's throughout, gradients flow through the channels-last pad.
    rng = np.random.default_rng(5)
    shape = (2, 5, 3, 4, 6)[:dims]
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    ta, tb = kiln.tensor(a).contiguous(memory_format=fmt), kiln.tensor(b).contiguous(memory_format=fmt)
    for d in range(dims):
        c = kiln.cat([ta, tb], d)
        assert _is_cl(c, fmt)
        np.testing.assert_array_equal(c.numpy(), np.concatenate([a, b], d))
    mixed = kiln.cat([ta, kiln.tensor(b)], 2)
    assert mixed.is_contiguous()
    np.testing.assert_array_equal(mixed.numpy(), np.concatenate([a, b], 2))
    pads = (1, 2, 0, 3) if dims == 4 else (1, 2, 0, 3, 2, 0)
    p = F.pad(ta, pads, value=0.5)
    assert _is_cl(p, fmt)
    np_pads = [(0, 0), (0, 0)] + [(pads[2 * i], pads[2 * i + 1]) for i in range(dims - 2)][::-1]
    np.testing.assert_array_equal(p.numpy(), np.pad(a, np_pads, constant_values=0.5))
    leaf = kiln.tensor(a).contiguous(memory_format=fmt).requires_grad_()
    (F.pad(leaf, pads) * kiln.tensor(np.pad(b, np_pads))).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), b)
    norm = (ta * ta).sum(1, keepdim=True)  # [N, 1, ...]: broadcast along the channels
    out = F.silu(ta / norm.sqrt()) * 2.0 + tb
    assert _is_cl(out, fmt)
    want = a / np.sqrt((a * a).sum(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), want / (1 + np.exp(-want)) * 2.0 + b, rtol=1e-5, atol=1e-6)
