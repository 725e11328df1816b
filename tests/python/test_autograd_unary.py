"""Gradients of the unary ops against their closed-form derivatives in NumPy
(SciPy for the special functions), double backward, and the in-place forms."""

import math

import numpy as np
import pytest
import scipy.special as sp

import kiln

RNG = np.random.default_rng(36)


def ones(t):
    return kiln.tensor(np.ones(t.shape)).to(t.dtype)


def grad_of(fn, xn, dtype="float64"):
    x = kiln.tensor(xn).to(dtype).requires_grad_()
    y = fn(x)
    y.backward(ones(y))
    return x.grad.numpy()


def u(lo, hi, n=24):
    return RNG.uniform(lo, hi, n)


SQ2PI = math.sqrt(2 * math.pi)
K, C = math.sqrt(2 / math.pi), 0.044715

# (name, kiln function, inputs, closed-form derivative)
CASES = [
    ("exp", kiln.exp, u(-3, 3), np.exp),
    ("exp2", kiln.exp2, u(-3, 3), lambda x: np.exp2(x) * np.log(2)),
    ("expm1", kiln.expm1, u(-3, 3), np.exp),
    ("log", kiln.log, u(0.1, 5), lambda x: 1 / x),
    ("log2", kiln.log2, u(0.1, 5), lambda x: 1 / (x * np.log(2))),
    ("log10", kiln.log10, u(0.1, 5), lambda x: 1 / (x * np.log(10))),
    ("log1p", kiln.log1p, u(-0.9, 5), lambda x: 1 / (1 + x)),
    ("sqrt", kiln.sqrt, u(0.1, 5), lambda x: 0.5 / np.sqrt(x)),
    ("rsqrt", kiln.rsqrt, u(0.1, 5), lambda x: -0.5 * x**-1.5),
    ("reciprocal", kiln.reciprocal, u(0.2, 5), lambda x: -1 / x**2),
    ("sin", kiln.sin, u(-4, 4), np.cos),
    ("cos", kiln.cos, u(-4, 4), lambda x: -np.sin(x)),
    ("tan", kiln.tan, u(-1.4, 1.4), lambda x: 1 / np.cos(x) ** 2),
    ("tanh", kiln.tanh, u(-3, 3), lambda x: 1 - np.tanh(x) ** 2),
    ("sigmoid", kiln.sigmoid, u(-5, 5), lambda x: sp.expit(x) * (1 - sp.expit(x))),
    ("silu", kiln.silu, u(-5, 5), lambda x: sp.expit(x) * (1 + x * (1 - sp.expit(x)))),
    ("gelu", kiln.gelu, u(-4, 4), lambda x: sp.ndtr(x) + x * np.exp(-x * x / 2) / SQ2PI),
    ("gelu_tanh", lambda t: kiln.gelu(t, approximate="tanh"), u(-4, 4),
     lambda x: 0.5 * (1 + np.tanh(K * (x + C * x**3)))
     + 0.5 * x * (1 - np.tanh(K * (x + C * x**3)) ** 2) * K * (1 + 3 * C * x * x)),
    ("neg", kiln.neg, u(-3, 3), lambda x: -np.ones_like(x)),
    ("abs", kiln.abs, np.array([-2.0, -0.5, 0.0, 0.5, 3.0]), np.sign),
    ("relu", kiln.relu, np.array([-2.0, -0.5, 0.0, 0.5, 3.0]), lambda x: (x > 0).astype(float)),
    ("sign", kiln.sign, u(-3, 3), np.zeros_like),
    ("sgn", kiln.sgn, u(-3, 3), np.zeros_like),
    ("floor", kiln.floor, u(-3, 3), np.zeros_like),
    ("ceil", kiln.ceil, u(-3, 3), np.zeros_like),
    ("round", kiln.round, u(-3, 3), np.zeros_like),
    ("trunc", kiln.trunc, u(-3, 3), np.zeros_like),
    ("frac", kiln.frac, u(-3, 3), np.ones_like),
    ("acos", kiln.acos, u(-0.9, 0.9), lambda x: -1 / np.sqrt(1 - x * x)),
    ("asin", kiln.asin, u(-0.9, 0.9), lambda x: 1 / np.sqrt(1 - x * x)),
    ("atan", kiln.atan, u(-3, 3), lambda x: 1 / (1 + x * x)),
    ("acosh", kiln.acosh, u(1.1, 4), lambda x: 1 / np.sqrt(x * x - 1)),
    ("asinh", kiln.asinh, u(-3, 3), lambda x: 1 / np.sqrt(x * x + 1)),
    ("atanh", kiln.atanh, u(-0.9, 0.9), lambda x: 1 / (1 - x * x)),
    ("cosh", kiln.cosh, u(-3, 3), np.sinh),
    ("sinh", kiln.sinh, u(-3, 3), np.cosh),
    ("erf", kiln.erf, u(-3, 3), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    ("erfc", kiln.erfc, u(-3, 3), lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x)),
    ("erfinv", kiln.erfinv, u(-0.95, 0.95), lambda x: np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(x) ** 2)),
    ("lgamma", kiln.lgamma, u(0.1, 8), sp.digamma),
    ("digamma", kiln.digamma, np.concatenate([u(-4.9, 30), [0.25, 0.5, 1.0, 9.5, 10.0, 250.0, -0.5]]),
     lambda x: sp.polygamma(1, x)),
    ("i0", kiln.i0, np.concatenate([u(-12, 12), [0.0, 40.0, -80.0]]), sp.i1),
    ("sinc", kiln.sinc, np.concatenate([u(-3, 3), [0.0]]),
     lambda x: np.where(x == 0, 0.0, (np.cos(np.pi * x) - np.sinc(x)) / np.where(x == 0, 1, x))),
    ("deg2rad", kiln.deg2rad, u(-90, 90), lambda x: np.full_like(x, np.pi / 180)),
    ("rad2deg", kiln.rad2deg, u(-3, 3), lambda x: np.full_like(x, 180 / np.pi)),
    ("logit", kiln.logit, u(0.05, 0.95), lambda x: 1 / (x * (1 - x))),
    ("logit_eps", lambda t: kiln.logit(t, eps=0.2), np.array([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
     lambda x: np.where((x < 0.2) | (x > 0.8), 0.0, 1 / (x * (1 - x)))),
    ("square", kiln.square, u(-3, 3), lambda x: 2 * x),
    ("nan_to_num", kiln.nan_to_num, np.array([1.0, np.nan, np.inf, -np.inf, -2.0]),
     lambda x: np.isfinite(x).astype(float)),
]


@pytest.mark.parametrize("name,fn,xn,deriv", CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_closed_form(name, fn, xn, deriv):
    with np.errstate(all="ignore"):
        expected = deriv(xn)
    np.testing.assert_allclose(grad_of(fn, xn), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,fn,xn,deriv", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_float32_gradient(name, fn, xn, deriv):
    g = grad_of(fn, xn, "float32")
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, deriv(xn), rtol=1e-5)


def test_frexp_mantissa_gradient():
    xn = np.array([0.3, -5.0, 1024.0, 1e-3, 7.5])
    x = kiln.tensor(xn).requires_grad_()
    mantissa, exponent = kiln.frexp(x)
    assert exponent.grad_fn is None and not exponent.requires_grad
    mantissa.backward(ones(mantissa))
    _, e = np.frexp(xn)
    np.testing.assert_allclose(x.grad.numpy(), 2.0 ** -e.astype(float), rtol=0)


@pytest.mark.parametrize(
    "fn,d1,d2",
    [
        (kiln.exp, np.exp, np.exp),
        (kiln.tanh, lambda x: 1 - np.tanh(x) ** 2, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
        (kiln.sigmoid, lambda x: sp.expit(x) * (1 - sp.expit(x)),
         lambda x: sp.expit(x) * (1 - sp.expit(x)) * (1 - 2 * sp.expit(x))),
        (kiln.sin, np.cos, lambda x: -np.sin(x)),
        (kiln.sqrt, lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x**-1.5),
    ],
    ids=["exp", "tanh", "sigmoid", "sin", "sqrt"],
)
def test_double_backward(fn, d1, d2):
    xn = u(0.2, 3, 10)
    x = kiln.tensor(xn).requires_grad_()
    y = fn(x)
    (g,) = kiln.autograd.grad(y, x, ones(y), create_graph=True)
    np.testing.assert_allclose(g.numpy(), d1(xn), rtol=1e-12)
    assert g.requires_grad
    (gg,) = kiln.autograd.grad(g, x, ones(g))
    np.testing.assert_allclose(gg.numpy(), d2(xn), rtol=1e-10, atol=1e-14)


def test_digamma_and_i0_differentiate_twice():
    # digamma'' = polygamma(2, x), i0'' = i1' = i0(x) - i1(x) / x (SciPy's values).
    xn = np.array([1.5, 2.5])
    x = kiln.tensor(xn).requires_grad_()
    (g,) = kiln.autograd.grad(kiln.digamma(x), x, ones(x), create_graph=True)
    (gg,) = kiln.autograd.grad(g, x, ones(x))
    np.testing.assert_allclose(gg.numpy(), sp.polygamma(2, xn), rtol=1e-13)
    (g,) = kiln.autograd.grad(kiln.i0(x), x, ones(x), create_graph=True)
    (gg,) = kiln.autograd.grad(g, x, ones(x))
    np.testing.assert_allclose(gg.numpy(), sp.i0(xn) - sp.i1(xn) / xn, rtol=1e-13)


def test_node_names():
    x = kiln.tensor([0.5, 0.25]).requires_grad_()
    assert kiln.exp(x).grad_fn.name() == "ExpBackward0"
    assert kiln.gelu(x).grad_fn.name() == "GeluBackward0"
    assert kiln.floor(x).grad_fn.name() == "FloorBackward0"


@pytest.mark.parametrize(
    "inplace,deriv",
    [
        ("exp_", np.exp),
        ("sin_", np.cos),
        ("relu_", lambda x: (x > 0).astype(float)),
        ("sigmoid_", lambda x: sp.expit(x) * (1 - sp.expit(x))),
        ("floor_", np.zeros_like),
        ("square_", lambda x: 2 * x),
    ],
)
def test_inplace_records(inplace, deriv):
    xn = u(-2, 2, 8)
    x = kiln.tensor(xn).requires_grad_()
    y = x * 1.0
    v = y._version
    getattr(y, inplace)()
    assert y._version > v
    y.backward(ones(y))
    np.testing.assert_allclose(x.grad.numpy(), deriv(xn), rtol=1e-6, atol=1e-12)


def test_inplace_on_leaf_requiring_grad_raises():
    x = kiln.tensor([0.5, 1.5]).requires_grad_()
    with pytest.raises(RuntimeError):
        x.exp_()


def test_inplace_bumps_version_without_grad():
    x = kiln.tensor([0.5, 1.5])
    v = x._version
    x.exp_()
    assert x._version > v


def test_no_grad_records_nothing():
    x = kiln.tensor([0.5, 1.5]).requires_grad_()
    with kiln.no_grad():
        assert kiln.exp(x).grad_fn is None


def test_against_torch():
    torch = pytest.importorskip("torch")
    xn = u(-2, 2, 16)
    for name in ["exp", "tanh", "sigmoid", "erf", "digamma", "i0", "sinc", "silu"]:
        tx = torch.tensor(xn, requires_grad=True)
        getattr(torch, name)(tx).sum().backward()
        np.testing.assert_allclose(grad_of(getattr(kiln, name), xn), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
