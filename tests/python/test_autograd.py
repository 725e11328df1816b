"""The autograd engine and its Python API (torch's semantics), checked with
ops whose derivatives are closed forms: add, sub, mul and the views.

The per-family derivative tests live in test_autograd_<area>.py; the float64
gradcheck over every op-table entry is the C++ test Autograd.GradcheckEveryOpTableEntry.
"""

import gc

import numpy as np
import pytest

import kiln


def leaf(values, dtype=kiln.float64):
    return kiln.tensor(np.asarray(values, dtype=np.float64), dtype=dtype).requires_grad_()


def test_leaf_state_and_grad_fn_names():
    x = leaf([1.0, 2.0])
    assert x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    y = x * 3 + x
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "AddBackward0"
    names = {fn.name() for fn, _ in y.grad_fn.next_functions if fn is not None}
    assert names == {"MulBackward0", "AccumulateGrad"}


def test_backward_accumulates_into_leaves_and_sums_broadcasts():
    a = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = leaf([10.0, 20.0, 30.0])
    y = a * b - b * 2 + a  # b broadcast over two rows
    y.backward(kiln.ones(2, 3, dtype=kiln.float64))
    np.testing.assert_allclose(a.grad.numpy(), np.tile([11.0, 21.0, 31.0], (2, 1)))
    np.testing.assert_allclose(b.grad.numpy(), np.array([5.0, 7.0, 9.0]) - 4.0)
    # A second backward through a new graph adds to .grad.
    (a * 2).backward(kiln.ones(2, 3, dtype=kiln.float64))
    np.testing.assert_allclose(a.grad.numpy(), np.tile([13.0, 23.0, 33.0], (2, 1)))


def test_scalar_output_needs_no_gradient_argument_others_do():
    x = leaf([2.0])
    (x * x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0])
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y.backward()


def test_gradient_shape_mismatch_raises():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(kiln.ones(3, dtype=kiln.float64))


def test_float32_leaf_gets_float32_grad():
    x = leaf([1.0, 2.0], dtype=kiln.float32)
    (x * leaf([3.0, 4.0])).backward(kiln.ones(2, dtype=kiln.float64))  # float64 result
    assert x.grad.dtype == kiln.float32
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


def test_views_route_gradients():
    x = leaf(np.arange(12.0).reshape(3, 4))
    y = x.T[1:, ::2].reshape(-1) * leaf(np.arange(1.0, 7.0))  # x.T is [4, 3]
    y.backward(kiln.ones(6, dtype=kiln.float64))
    want = np.zeros((4, 3))
    want[1:, ::2] = np.arange(1.0, 7.0).reshape(3, 2)
    np.testing.assert_allclose(x.grad.numpy(), want.T)


def test_select_unsqueeze_expand_permute():
    x = leaf(np.arange(6.0).reshape(2, 3))
    y = x[1].unsqueeze(0).expand(4, 3).permute(1, 0) * 1.0  # [3, 4]
    y.backward(kiln.ones(3, 4, dtype=kiln.float64))
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], [4, 4, 4]])


def test_autograd_grad_does_not_touch_dot_grad_and_allow_unused():
    x, z = leaf([1.0, 2.0]), leaf([5.0])
    y = x * x
    (gx,) = kiln.autograd.grad(y, x, kiln.ones(2, dtype=kiln.float64))
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="not have been used"):
        kiln.autograd.grad(x * 2, [x, z], kiln.ones(2, dtype=kiln.float64))
    gx, gz = kiln.autograd.grad(x * 2, [x, z], kiln.ones(2, dtype=kiln.float64), allow_unused=True)
    assert gz is None
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])


def test_grad_with_respect_to_an_intermediate():
    x = leaf([1.0, 2.0, 3.0])
    h = x * x
    y = h * 3
    (gh,) = kiln.autograd.grad(y, h, kiln.ones(3, dtype=kiln.float64))
    np.testing.assert_allclose(gh.numpy(), [3.0, 3.0, 3.0])


def test_second_backward_through_freed_graph_raises_and_retain_graph_allows_it():
    x = leaf([1.0, 2.0])
    y = x * x
    g = kiln.ones(2, dtype=kiln.float64)
    y.backward(g, retain_graph=True)
    y.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(g)


def test_double_backward_with_create_graph():
    x = leaf([1.5, -2.0])
    y = x * x * x  # y' = 3x^2, y'' = 6x
    (g,) = kiln.autograd.grad(y, x, kiln.ones(2, dtype=kiln.float64), create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.numpy(), 3 * np.array([1.5, -2.0]) ** 2)
    (gg,) = kiln.autograd.grad(g, x, kiln.ones(2, dtype=kiln.float64))
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([1.5, -2.0]))


def test_in_place_modification_of_a_saved_tensor_raises_at_backward():
    x = leaf([1.0, 2.0])
    w = kiln.tensor([3.0, 4.0], dtype=kiln.float64)
    y = x * w  # saves w
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(kiln.ones(2, dtype=kiln.float64))


def test_in_place_on_a_leaf_that_requires_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with kiln.no_grad():
        x.add_(1)  # allowed: an optimizer step
    np.testing.assert_allclose(x.numpy(), [2.0, 3.0])


def test_in_place_on_a_non_leaf_rebases_its_history():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(x)  # y = 2x * x
    assert y.grad_fn.name() == "MulBackward0"
    y.backward(kiln.ones(2, dtype=kiln.float64))
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.array([1.0, 2.0]))
    assert y._version > 0


def test_no_grad_enable_grad_set_grad_enabled_inference_mode():
    x = leaf([1.0])
    with kiln.no_grad():
        assert not kiln.is_grad_enabled()
        assert not (x * 2).requires_grad
        with kiln.enable_grad():
            assert (x * 2).requires_grad
    assert kiln.is_grad_enabled()

    @kiln.no_grad()
    def f():
        return x * 2

    assert not f().requires_grad
    with kiln.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert kiln.is_grad_enabled()
    with kiln.inference_mode():
        assert kiln.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not kiln.is_inference_mode_enabled() and kiln.is_grad_enabled()
    assert kiln.autograd.no_grad is kiln.no_grad


def test_detach_shares_memory_and_version_but_not_history():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1)
    np.testing.assert_allclose(y.numpy(), [3.0, 5.0])
    assert d._version == y._version


def test_retain_grad_and_hooks():
    x = leaf([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    handle = x.register_hook(lambda g: g * 10)  # replaces the leaf's gradient
    (h * h).backward(kiln.ones(2, dtype=kiln.float64))
    np.testing.assert_allclose(h.grad.numpy(), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), 10 * 3 * np.array([6.0, 12.0]))
    x._remove_hook(handle)
    x.grad = None
    (x * 1).backward(kiln.ones(2, dtype=kiln.float64))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        kiln.tensor([1, 2]).requires_grad_()
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        kiln.tensor([1.0]).backward()


def test_an_op_without_a_derivative_raises_instead_of_dropping_the_gradient():
    # atan2 is differentiable in torch; kiln must never return a result that
    # silently lacks the gradient. Whichever ops still lack one raise.
    x = leaf([1.0, 2.0])
    try:
        y = kiln.atan2(x, kiln.tensor([1.0, 1.0], dtype=kiln.float64))
    except NotImplementedError as e:
        assert "derivative" in str(e)
    else:
        assert y.requires_grad


def test_comparisons_take_inputs_that_require_grad():
    x = leaf([1.0, -2.0])
    m = x > 0
    assert not m.requires_grad
    np.testing.assert_array_equal(m.numpy(), [True, False])


def test_out_argument_refused_while_recording():
    x = leaf([1.0])
    out = kiln.empty(1, dtype=kiln.float64)
    with pytest.raises(RuntimeError, match="out="):
        kiln.add(x, x, out=out)


def test_gradients_are_the_same_bits_whatever_the_thread_count():
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((64, 33)), rng.standard_normal(33)

    def run():
        a, b = leaf(a_np, kiln.float32), leaf(b_np, kiln.float32)
        y = a * b + a * a - b
        y.backward(kiln.ones(64, 33))
        return a.grad.numpy().copy(), b.grad.numpy().copy()

    prev = kiln.get_num_threads()
    try:
        kiln.set_num_threads(1)
        one = run()
        kiln.set_num_threads(max(2, prev))
        many = run()
    finally:
        kiln.set_num_threads(prev)
    for p, q in zip(one, many):
        assert p.tobytes() == q.tobytes()


def test_graph_is_freed_after_backward():
    import weakref

    x = leaf(np.ones(1000))
    y = x * x
    node = y.grad_fn
    ref = weakref.ref(node) if hasattr(node, "__weakref__") else None
    y.backward(kiln.ones(1000, dtype=kiln.float64))
    del y, node
    gc.collect()
    if ref is not None:
        assert ref() is None
