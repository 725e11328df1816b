"""Complex gradients in torch's convention: for a real loss L, the gradient of
z = x + iy is dL/dx + i dL/dy. Each case compares kiln with a closed form in
NumPy (and with torch when it is installed)."""

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(361)


def cz(*shape):
    return RNG.uniform(-2, 2, shape) + 1j * RNG.uniform(-2, 2, shape)


def leaf(zn):
    return kiln.tensor(zn).to("complex128").requires_grad_()


def test_parts_and_conj_forward():
    zn = cz(3, 4)
    z = kiln.tensor(zn).to("complex128")
    np.testing.assert_array_equal(kiln.conj(z).numpy(), np.conj(zn))
    np.testing.assert_array_equal(z.conj().numpy(), np.conj(zn))
    np.testing.assert_array_equal(z.real.numpy(), zn.real)
    np.testing.assert_array_equal(kiln.imag(z).numpy(), zn.imag)
    np.testing.assert_allclose(kiln.angle(z).numpy(), np.angle(zn), rtol=1e-15)
    assert z.is_complex() and kiln.is_complex(z) and not kiln.is_complex(z.real)
    a, b = RNG.uniform(0, 2, 5), RNG.uniform(-3, 3, 5)
    np.testing.assert_array_equal(kiln.complex(kiln.tensor(a), kiln.tensor(b)).numpy(), a + 1j * b)
    np.testing.assert_allclose(kiln.polar(kiln.tensor(a), kiln.tensor(b)).numpy(), a * np.exp(1j * b),
                               rtol=1e-15, atol=1e-15)
    with pytest.raises(TypeError, match=r"\[imag\]"):
        kiln.imag(kiln.tensor(a))


def test_sum_abs_squared_is_2z():
    zn = cz(5)
    z = leaf(zn)
    (z * z.conj()).real.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * zn, rtol=1e-14)
    z2 = leaf(zn)
    (kiln.abs(z2) * kiln.abs(z2)).sum().backward()
    np.testing.assert_allclose(z2.grad.numpy(), 2 * zn, rtol=1e-13)


def test_mul_by_constant_gives_conj_c_times_g():
    zn, c, g = cz(4), 0.5 - 1.5j, cz(4)
    z = leaf(zn)
    (z * c).backward(kiln.tensor(g).to("complex128"))
    np.testing.assert_allclose(z.grad.numpy(), np.conj(c) * g, rtol=1e-15)
    # Both operands tensors: grad a = g conj(b), grad b = g conj(a).
    a, b = leaf(zn), leaf(cz(4))
    (a * b).backward(kiln.tensor(g).to("complex128"))
    np.testing.assert_allclose(a.grad.numpy(), g * np.conj(b.detach().numpy()), rtol=1e-15)
    np.testing.assert_allclose(b.grad.numpy(), g * np.conj(zn), rtol=1e-15)


def test_div_and_add_with_complex_alpha():
    an, bn, g = cz(4), cz(4) + 3, cz(4)
    a, b = leaf(an), leaf(bn)
    (a / b).backward(kiln.tensor(g).to("complex128"))
    np.testing.assert_allclose(a.grad.numpy(), g / np.conj(bn), rtol=1e-13)
    np.testing.assert_allclose(b.grad.numpy(), -g * np.conj(an / bn**2), rtol=1e-13)
    alpha = 2 - 1j
    a, b = leaf(an), leaf(bn)
    kiln.sub(a, b, alpha=alpha).backward(kiln.tensor(g).to("complex128"))
    np.testing.assert_allclose(b.grad.numpy(), -np.conj(alpha) * g, rtol=1e-15)


@pytest.mark.parametrize(
    "fn,deriv",
    [
        (kiln.exp, np.exp),
        (kiln.log, lambda z: 1 / z),
        (kiln.sin, np.cos),
        (kiln.tanh, lambda z: 1 - np.tanh(z) ** 2),
        (kiln.sqrt, lambda z: 0.5 / np.sqrt(z)),
        (kiln.reciprocal, lambda z: -1 / z**2),
        (kiln.square, lambda z: 2 * z),
    ],
)
def test_holomorphic_unary_grad_is_g_conj_derivative(fn, deriv):
    zn, g = cz(6) + 2.5, cz(6)  # right half-plane: away from log/sqrt's branch cut
    z = leaf(zn)
    fn(z).backward(kiln.tensor(g).to("complex128"))
    np.testing.assert_allclose(z.grad.numpy(), g * np.conj(deriv(zn)), rtol=1e-12)


def test_abs_angle_real_imag_grads():
    zn, g = cz(5), RNG.uniform(-1, 1, 5)
    gt = kiln.tensor(g)
    z = leaf(zn)
    kiln.abs(z).backward(gt)
    np.testing.assert_allclose(z.grad.numpy(), g * zn / np.abs(zn), rtol=1e-14)
    z = leaf(zn)
    kiln.angle(z).backward(gt)
    # angle = atan2(y, x): dL/dx + i dL/dy = g (-y + i x) / |z|^2
    np.testing.assert_allclose(z.grad.numpy(), g * (-zn.imag + 1j * zn.real) / np.abs(zn) ** 2, rtol=1e-13)
    z = leaf(zn)
    z.real.backward(gt)
    np.testing.assert_array_equal(z.grad.numpy(), g + 0j)
    z = leaf(zn)
    z.imag.backward(gt)
    np.testing.assert_array_equal(z.grad.numpy(), 1j * g)


def test_complex_and_polar_grads():
    r, t, g = RNG.uniform(0.5, 2, 4), RNG.uniform(-3, 3, 4), cz(4)
    gt = kiln.tensor(g).to("complex128")
    a, b = kiln.tensor(r).requires_grad_(), kiln.tensor(t).requires_grad_()
    kiln.complex(a, b).backward(gt)
    np.testing.assert_array_equal(a.grad.numpy(), g.real)
    np.testing.assert_array_equal(b.grad.numpy(), g.imag)
    a, b = kiln.tensor(r).requires_grad_(), kiln.tensor(t).requires_grad_()
    kiln.polar(a, b).backward(gt)
    e = np.exp(1j * t)
    np.testing.assert_allclose(a.grad.numpy(), (np.conj(g) * e).real, rtol=1e-14)
    np.testing.assert_allclose(b.grad.numpy(), (np.conj(g) * 1j * r * e).real, rtol=1e-14, atol=1e-15)


def test_reductions():
    zn = cz(3, 4)
    z = leaf(zn)
    kiln.var(z, dim=1).sum().backward()
    want = 2 * (zn - zn.mean(axis=1, keepdims=True)) / 3
    np.testing.assert_allclose(z.grad.numpy(), want, rtol=1e-13)
    z = leaf(zn)
    g = cz(3)
    kiln.prod(z, dim=1).backward(kiln.tensor(g).to("complex128"))
    others = np.prod(zn, axis=1, keepdims=True) / zn
    np.testing.assert_allclose(z.grad.numpy(), g[:, None] * np.conj(others), rtol=1e-12)


def test_linalg_det():
    An = cz(3, 3) + 4 * np.eye(3)
    A = leaf(An)
    kiln.linalg.det(A).backward(kiln.tensor(np.array(1 + 0j)))
    # d det = det tr(A^-1 dA): torch's gradient is conj(det A^-T).
    np.testing.assert_allclose(A.grad.numpy(), np.conj(np.linalg.det(An) * np.linalg.inv(An).T), rtol=1e-12)


def test_unimplemented_complex_gradients_raise():
    # inv's formula needs a complex matmul, which kiln does not have yet.
    A = leaf(cz(3, 3) + 4 * np.eye(3))
    with pytest.raises(NotImplementedError, match=r"\[linalg.inv\] complex gradients"):
        kiln.linalg.inv(A)


def test_against_torch():
    torch = pytest.importorskip("torch")
    zn, g = cz(5) + 2.5, cz(5)
    z = leaf(zn)
    (kiln.log(z) * (1 - 2j)).backward(kiln.tensor(g).to("complex128"))
    zt = torch.tensor(zn, requires_grad=True)
    (torch.log(zt) * (1 - 2j)).backward(torch.tensor(g))
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-13)
