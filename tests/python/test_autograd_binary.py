"""Gradients of the binary and ternary ops against closed-form NumPy derivatives
(broadcasting, Python-number operands, ties and bounds), and torch's when it
imports."""

import numpy as np
import pytest

import kiln

rng = np.random.default_rng(36)


def leaf(a):
    t = kiln.from_numpy(np.ascontiguousarray(a))
    t.requires_grad_()
    return t


def reduce_to(g, shape):
    """Sums a broadcast-shaped gradient down to an operand's shape."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


def run(f, *arrays):
    """f over leaves made of the arrays (Python numbers passed as they are);
    returns the upstream gradient and each leaf's gradient."""
    args = [leaf(a) if isinstance(a, np.ndarray) else a for a in arrays]
    out = f(*args)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(kiln.from_numpy(g))
    return g, [a.grad.numpy() if isinstance(a, kiln.Tensor) else None for a in args]


def check(got, want, shape):
    np.testing.assert_allclose(got, reduce_to(np.asarray(want, dtype=np.float64), shape), rtol=1e-10, atol=1e-12)


def test_div_broadcast():
    a, b = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (4,))
    g, (ga, gb) = run(kiln.div, a, b)
    check(ga, g / b, a.shape)
    check(gb, -g * a / b**2, b.shape)
    g, (ga, gb) = run(kiln.true_divide, a, b)
    check(gb, -g * a / b**2, b.shape)


def test_div_scalar_operands():
    x = rng.uniform(0.5, 2.0, (5,))
    g, (gx, _) = run(lambda t, s: kiln.div(t, s), x, 4.0)
    check(gx, g / 4.0, x.shape)
    g, (_, gx) = run(lambda s, t: kiln.div(s, t), 3.0, x)
    check(gx, -3.0 * g / x**2, x.shape)


def test_python_float_operand_keeps_double_precision():
    # The formula sees 0.1 as a double, not rounded to float32.
    x = rng.standard_normal((4,))
    g, (gx, _) = run(lambda t, s: kiln.mul(t, s), x, 0.1)
    check(gx, g * 0.1, x.shape)
    g, (gx, _) = run(lambda t, s: kiln.div(t, s), x, 0.1)
    check(gx, g / 0.1, x.shape)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_div_rounding_modes_have_zero_gradient(mode):
    a, b = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (4,))
    g, (ga, gb) = run(lambda x, y: kiln.div(x, y, rounding_mode=mode), a, b)
    assert not ga.any() and not gb.any() and gb.shape == b.shape


def test_remainder_and_fmod():
    a, b = rng.uniform(-5, 5, (2, 3)), rng.uniform(0.7, 1.9, (2, 3)) * rng.choice([-1, 1], (2, 3))
    g, (ga, gb) = run(kiln.remainder, a, b)
    check(ga, g, a.shape)
    check(gb, -g * np.floor(a / b), b.shape)
    g, (ga, gb) = run(kiln.fmod, a, b)
    check(ga, g, a.shape)
    check(gb, -g * np.trunc(a / b), b.shape)


def test_pow_tensor_tensor_broadcast():
    a, b = rng.uniform(0.5, 2.0, (3, 1)), rng.uniform(-2, 2, (4,))
    g, (ga, gb) = run(kiln.pow, a, b)
    check(ga, g * b * a ** (b - 1), a.shape)
    check(gb, g * a**b * np.log(a), b.shape)


def test_pow_at_zero():
    # 0^2: grad 0; 0^0 (exponent 0): grad base 0 and grad exponent 0, as torch.
    x = np.array([0.0, 1.5, -2.0])
    g, (gx, _) = run(lambda t, s: kiln.pow(t, s), x, 2.0)
    check(gx, 2 * g * x, x.shape)
    g, (gx, _) = run(lambda t, s: kiln.pow(t, s), x, 0.0)
    assert not gx.any()
    e = np.array([0.0, 1.0, 2.5])
    g, (_, ge) = run(lambda s, t: kiln.pow(s, t), 0.0, e)
    assert not ge.any()
    g, (_, ge) = run(lambda s, t: kiln.pow(s, t), 2.0, e)
    check(ge, g * 2.0**e * np.log(2.0), e.shape)
    a, b = np.array([0.0, 0.0, 2.0]), np.array([0.0, 3.0, 0.0])
    g, (ga, gb) = run(kiln.pow, a, b)
    check(ga, np.array([0.0, 0.0, 0.0]), a.shape)
    check(gb, np.array([0.0, 0.0, g[2] * np.log(2.0)]), b.shape)


def test_maximum_minimum_split_ties():
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 5.0, 0.0, -1.0])
    g, (ga, gb) = run(kiln.maximum, a, b)
    check(ga, g * ((a > b) + 0.5 * (a == b)), a.shape)
    check(gb, g * ((b > a) + 0.5 * (a == b)), b.shape)
    g, (ga, gb) = run(kiln.minimum, a, b)
    check(ga, g * ((a < b) + 0.5 * (a == b)), a.shape)
    check(gb, g * ((b < a) + 0.5 * (a == b)), b.shape)


def test_maximum_broadcast_row():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((1, 4))
    g, (ga, gb) = run(kiln.maximum, a, b)
    check(ga, g * (a > b), a.shape)
    check(gb, g * (b > a), b.shape)


def test_fmax_fmin_ties_and_nan():
    a = np.array([1.0, 2.0, np.nan, 4.0])
    b = np.array([1.0, 3.0, 0.0, np.nan])
    g, (ga, gb) = run(kiln.fmax, a, b)
    to_a = (a >= b) | np.isnan(b)
    check(ga, g * to_a, a.shape)
    check(gb, g * ~to_a, b.shape)
    g, (ga, gb) = run(kiln.fmin, a, b)
    to_a = (a <= b) | np.isnan(b)
    check(ga, g * to_a, a.shape)
    check(gb, g * ~to_a, b.shape)


def test_smooth_binary_ops():
    a, b = rng.uniform(0.3, 2.0, (2, 3)), rng.uniform(-2.0, 2.0, (3,))
    g, (ga, gb) = run(kiln.atan2, a, b)
    r = a**2 + b**2
    check(ga, g * b / r, a.shape)
    check(gb, -g * a / r, b.shape)
    g, (ga, gb) = run(kiln.hypot, a, b)
    h = np.hypot(a, b)
    check(ga, g * a / h, a.shape)
    check(gb, g * b / h, b.shape)
    g, (ga, gb) = run(kiln.logaddexp, a, b)
    check(ga, g / (1 + np.exp(b - a)), a.shape)
    check(gb, g / (1 + np.exp(a - b)), b.shape)
    g, (ga, gb) = run(kiln.logaddexp2, a, b)
    check(ga, g / (1 + 2.0 ** (b - a)), a.shape)
    check(gb, g / (1 + 2.0 ** (a - b)), b.shape)
    g, (ga, gb) = run(kiln.copysign, a, b)
    check(ga, g * np.sign(np.copysign(1.0, b)), a.shape)
    assert not gb.any()
    g, (ga, gb) = run(kiln.ldexp, a, b)
    check(ga, g * 2.0**b, a.shape)
    check(gb, g * a * 2.0**b * np.log(2.0), b.shape)
    g, (ga, gb) = run(kiln.heaviside, a, b)
    assert not ga.any() and not gb.any()


def test_xlogy_at_zero():
    x = np.array([0.0, 0.0, 2.0, 1.5])
    y = np.array([-1.0, 3.0, 0.5, 2.0])
    g, (gx, gy) = run(kiln.xlogy, x, y)
    want = np.where((x == 0) & (y <= 0), 0.0, g * np.log(np.abs(y)))
    want[0] = 0.0
    check(gx, want, x.shape)
    check(gy, g * x / y, y.shape)


def test_float_power_float32_input():
    a = rng.uniform(0.5, 2.0, (4,)).astype(np.float32)
    g, (ga, _) = run(lambda t, s: kiln.float_power(t, s), a, 3)
    assert ga.dtype == np.float32
    np.testing.assert_allclose(ga, (g * 3 * a.astype(np.float64) ** 2).astype(np.float32), rtol=1e-6)


def test_where_broadcast_and_scalar():
    cond = kiln.from_numpy(np.array([[True, False, True], [False, False, True]]))
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    c = cond.numpy()
    g, (ga, gb) = run(lambda x, y: kiln.where(cond, x, y), a, b)
    check(ga, g * c, a.shape)
    check(gb, g * ~c, b.shape)
    g, (ga, _) = run(lambda x, s: kiln.where(cond, x, s), a, 0.5)
    check(ga, g * c, a.shape)


def test_clamp_scalar_bounds_pass_at_the_bounds():
    x = np.array([-2.0, -1.0, 0.3, 1.0, 2.0, np.nan])
    g, (gx,) = run(lambda t: kiln.clamp(t, -1.0, 1.0), x)
    check(gx, g * ((x >= -1) & (x <= 1)), x.shape)
    g, (gx,) = run(lambda t: kiln.clamp_min(t, -1.0), x)
    check(gx, g * (x >= -1), x.shape)
    g, (gx,) = run(lambda t: kiln.clamp_max(t, 1.0), x)
    check(gx, g * (x <= 1), x.shape)


def test_clamp_tensor_bounds():
    x = np.array([[-2.0, -1.0, 0.3, 1.0, 2.0]])
    lo = np.array([[-1.0], [0.5]])
    hi = np.array([[1.0], [0.0]])  # second row: lo > hi, the result is hi
    g, (gx, glo, ghi) = run(kiln.clamp, x, lo, hi)
    check(gx, g * ((x >= lo) & (x <= hi)), x.shape)
    check(glo, g * ((x < lo) & (lo < hi)), lo.shape)
    check(ghi, g * ((x > hi) | (hi < lo)), hi.shape)
    g, (gx, glo) = run(kiln.clamp_min, x, lo)
    check(gx, g * (x >= lo), x.shape)
    check(glo, g * (x < lo), lo.shape)


def test_lerp_and_addcmul():
    s, e, w = rng.standard_normal((2, 3)), rng.standard_normal((3,)), rng.standard_normal((2, 1))
    g, (gs, ge, gw) = run(kiln.lerp, s, e, w)
    check(gs, g * (1 - w), s.shape)
    check(ge, g * w, e.shape)
    check(gw, g * (e - s), w.shape)
    g, (gs, ge, _) = run(lambda a, b, c: kiln.lerp(a, b, c), s, e, 0.25)
    check(gs, g * 0.75, s.shape)
    check(ge, g * 0.25, e.shape)
    i, t1, t2 = rng.standard_normal((3,)), rng.standard_normal((2, 3)), rng.standard_normal((2, 1))
    g, (gi, g1, g2) = run(lambda a, b, c: kiln.addcmul(a, b, c, value=0.5), i, t1, t2)
    check(gi, g, i.shape)
    check(g1, 0.5 * g * t2, t1.shape)
    check(g2, 0.5 * g * t1, t2.shape)


def test_in_place_forms_record():
    x = rng.uniform(0.5, 2.0, (4,))
    e = rng.standard_normal((4,))

    def chain(t):
        y = kiln.mul(t, 1.0)  # a non-leaf the in-place ops may write
        y.clamp_(0.6, 1.5)
        y.pow_(2.0)
        y.lerp_(kiln.from_numpy(e), 0.25)
        y.div_(2.0)
        return y

    g, (gx,) = run(chain, x)
    inside = (x >= 0.6) & (x <= 1.5)
    c = np.clip(x, 0.6, 1.5)
    check(gx, g / 2.0 * 0.75 * 2 * c * inside, x.shape)


def test_without_derivative_like_torch():
    x = leaf(rng.standard_normal((3,)))
    with pytest.raises(NotImplementedError, match="nextafter"):
        kiln.nextafter(x, 0.0)
    with pytest.raises(NotImplementedError, match="floor_divide"):
        kiln.floor_divide(x, 2.0)
    # torch marks both of laguerre's inputs non-differentiable.
    n = kiln.from_numpy(np.array([0.0, 1.0, 2.0]))
    assert not kiln.special_laguerre_polynomial_l(x, n).requires_grad


def test_against_torch():
    torch = pytest.importorskip("torch")
    a, b = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(-1.0, 1.0, (4,))
    for name in ["div", "pow", "maximum", "atan2", "hypot", "logaddexp", "xlogy", "fmod", "remainder"]:
        g, (ga, gb) = run(getattr(kiln, name), a, b)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        getattr(torch, name)(ta, tb).backward(torch.tensor(g))
        np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-10, err_msg=name)
        np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-10, err_msg=name)
