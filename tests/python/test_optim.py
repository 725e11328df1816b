"""kiln.optim against a NumPy re-statement of torch.optim's update equations over
several steps (gradients set by hand), the schedulers against their closed forms,
optimizer state_dict round trips, gradient clipping, and an end-to-end fit."""

import math

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.optim as optim
from kiln.optim import lr_scheduler

RNG = np.random.default_rng(0)


def params(*shapes):
    return [nn.Parameter(kiln.tensor(RNG.standard_normal(s).astype(np.float32))) for s in shapes]


def grads_for(step, shapes):
    r = np.random.default_rng(100 + step)
    return [r.standard_normal(s).astype(np.float32) / (step + 1) for s in shapes]


def sgd_ref(p, g, buf, lr, momentum, dampening, wd, nesterov, maximize):
    d = -g if maximize else g
    d = d + wd * p
    if momentum:
        buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
        d = d + momentum * buf if nesterov else buf
    return p - lr * d, buf


def adam_ref(p, g, st, lr, b1, b2, eps, wd, amsgrad, maximize, decoupled):
    g = -g if maximize else g
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    st["step"] += 1
    t = st["step"]
    st["m"] = b1 * st["m"] + (1 - b1) * g
    st["v"] = b2 * st["v"] + (1 - b2) * g * g
    st["vmax"] = np.maximum(st["vmax"], st["v"])
    v = st["vmax"] if amsgrad else st["v"]
    denom = np.sqrt(v) / math.sqrt(1 - b2**t) + eps
    return p - lr / (1 - b1**t) * st["m"] / denom


SHAPES = [(3, 4), (5,)]


@pytest.mark.parametrize("momentum,dampening,wd,nesterov,maximize", [
    (0, 0, 0, False, False), (0.9, 0, 0.01, True, False), (0.8, 0.25, 0.1, False, True), (0, 0, 0.1, False, True)])
def test_sgd_matches_numpy(momentum, dampening, wd, nesterov, maximize):
    ps = params(*SHAPES)
    ref = [p.detach().numpy().astype(np.float64) for p in ps]
    bufs = [None] * len(ps)
    opt = optim.SGD(ps, lr=0.1, momentum=momentum, dampening=dampening, weight_decay=wd, nesterov=nesterov,
                    maximize=maximize)
    for step in range(5):
        gs = grads_for(step, SHAPES)
        for p, g in zip(ps, gs):
            p.grad = kiln.tensor(g)
        opt.step()
        for i, g in enumerate(gs):
            ref[i], bufs[i] = sgd_ref(ref[i], g.astype(np.float64), bufs[i], 0.1, momentum, dampening, wd,
                                      nesterov, maximize)
            np.testing.assert_allclose(ps[i].detach().numpy(), ref[i], rtol=1e-5, atol=1e-6)
    if momentum:
        np.testing.assert_allclose(opt.state[ps[0]]["momentum_buffer"].numpy(), bufs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("maximize", [False, True])
def test_adam_adamw_match_numpy(cls, amsgrad, maximize):
    ps = params(*SHAPES)
    ref = [p.detach().numpy().astype(np.float64) for p in ps]
    sts = [dict(step=0, m=np.zeros(s), v=np.zeros(s), vmax=np.zeros(s)) for s in SHAPES]
    opt = cls(ps, lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=amsgrad, maximize=maximize)
    for step in range(6):
        gs = grads_for(step, SHAPES)
        for p, g in zip(ps, gs):
            p.grad = kiln.tensor(g)
        opt.step()
        for i, g in enumerate(gs):
            ref[i] = adam_ref(ref[i], g.astype(np.float64), sts[i], 0.01, 0.8, 0.95, 1e-6, 0.1, amsgrad, maximize,
                              cls is optim.AdamW)
            np.testing.assert_allclose(ps[i].detach().numpy(), ref[i], rtol=1e-5, atol=1e-6)
    st = opt.state[ps[1]]
    assert st["step"].item() == 6
    np.testing.assert_allclose(st["exp_avg"].numpy(), sts[1]["m"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(st["exp_avg_sq"].numpy(), sts[1]["v"], rtol=1e-5, atol=1e-8)
    assert ("max_exp_avg_sq" in st) == amsgrad


def test_defaults_param_groups_and_skipped_params():
    a, b, c = params((2,), (2,), (2,))
    opt = optim.AdamW([{"params": [a]}, {"params": [b, c], "lr": 0.5}])
    assert opt.param_groups[0]["lr"] == 1e-3 and opt.param_groups[0]["weight_decay"] == 1e-2
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    before = c.detach().numpy().copy()
    a.grad = kiln.ones(2)
    b.grad = kiln.ones(2)
    opt.step()
    np.testing.assert_array_equal(c.detach().numpy(), before)  # no grad: untouched, no state
    assert c not in opt.state and a in opt.state
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    a.grad = kiln.ones(2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0])
    with pytest.raises(ValueError):
        optim.SGD([a], lr=-1)
    with pytest.raises(ValueError):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.Adam([a], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)


def test_optimizer_state_dict_round_trip_continues_identically():
    shapes = [(4,)]
    p1, = params(*shapes)
    p2 = nn.Parameter(p1.detach().clone())
    o1 = optim.Adam([p1], lr=0.05, amsgrad=True)
    for step in range(3):
        p1.grad = kiln.tensor(grads_for(step, shapes)[0])
        o1.step()
    sd = o1.state_dict()
    assert list(sd["state"]) == [0] and sd["param_groups"][0]["params"] == [0]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    with kiln.no_grad():
        p2.copy_(p1)
    o2 = optim.Adam([p2], lr=0.9)
    o2.load_state_dict(sd)
    assert o2.param_groups[0]["lr"] == 0.05
    for step in range(3, 5):
        g = kiln.tensor(grads_for(step, shapes)[0])
        p1.grad, p2.grad = g, g.clone()
        o1.step()
        o2.step()
    np.testing.assert_array_equal(p1.detach().numpy(), p2.detach().numpy())


def test_bfloat16_params_with_float32_state():
    p = nn.Parameter(kiln.tensor([1.0, -2.0, 0.5]).to(kiln.bfloat16))
    opt = optim.SGD([p], lr=0.5, momentum=0.9)
    p.grad = kiln.tensor([1.0, 1.0, 1.0]).to(kiln.bfloat16)
    opt.step()
    assert p.dtype == kiln.bfloat16 and opt.state[p]["momentum_buffer"].dtype == kiln.float32
    np.testing.assert_array_equal(p.detach().to(kiln.float32).numpy(), [0.5, -2.5, 0.0])


def closed(kind, base, e, **kw):
    if kind == "step":
        return base * kw["gamma"] ** (e // kw["step_size"])
    if kind == "cos":
        return kw["eta_min"] + (base - kw["eta_min"]) * (1 + math.cos(math.pi * e / kw["T_max"])) / 2
    if kind == "linear":
        return base * (kw["start"] + (kw["end"] - kw["start"]) * min(e, kw["total"]) / kw["total"])
    raise AssertionError(kind)


def make_opt(lr=0.1):
    return optim.SGD(params((2,)), lr=lr)


def test_schedulers_follow_closed_forms():
    o = make_opt()
    s = lr_scheduler.StepLR(o, step_size=3, gamma=0.5)
    for e in range(10):
        assert o.param_groups[0]["lr"] == pytest.approx(closed("step", 0.1, e, gamma=0.5, step_size=3))
        assert s.get_last_lr() == [o.param_groups[0]["lr"]]
        s.step()
    o = make_opt()
    s = lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.01)
    for e in range(15):
        assert o.param_groups[0]["lr"] == pytest.approx(closed("cos", 0.1, e, T_max=7, eta_min=0.01))
        s.step()
    o = make_opt()
    s = lr_scheduler.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4)
    for e in range(8):
        assert o.param_groups[0]["lr"] == pytest.approx(closed("linear", 0.1, e, start=0.25, end=1.0, total=4))
        s.step()
    o = make_opt()
    s = lr_scheduler.LambdaLR(o, lambda e: 0.9**e)
    for e in range(5):
        assert o.param_groups[0]["lr"] == pytest.approx(0.1 * 0.9**e)
        s.step()


def test_sequential_lr_warmup_then_cosine():
    o = make_opt(1.0)
    warm = lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3)
    cos = lr_scheduler.CosineAnnealingLR(o, T_max=5)
    s = lr_scheduler.SequentialLR(o, [warm, cos], milestones=[3])
    got = []
    for _ in range(9):
        got.append(o.param_groups[0]["lr"])
        s.step()
    want = [closed("linear", 1.0, e, start=0.1, end=1.0, total=3) for e in range(3)]
    want += [closed("cos", 1.0, e, T_max=5, eta_min=0.0) for e in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError):
        lr_scheduler.SequentialLR(o, [warm, cos], milestones=[])


def test_clip_grad_norm_and_value():
    ps = params((3,), (2, 2))
    gs = [np.array([3.0, 0.0, 4.0], np.float32), np.array([[1.0, -2.0], [0.0, 2.0]], np.float32)]
    for p, g in zip(ps, gs):
        p.grad = kiln.tensor(g)
    total = math.sqrt(25 + 9)
    got = nn.utils.clip_grad_norm_(ps, max_norm=1.0)
    assert got.item() == pytest.approx(total, rel=1e-6)
    coef = 1.0 / (total + 1e-6)
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-6)
    for p, g in zip(ps, gs):
        p.grad = kiln.tensor(g)
    nn.utils.clip_grad_norm_(ps, max_norm=100.0)  # below the limit: unchanged
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-6)
    assert nn.utils.clip_grad_norm_(ps, 1.0, norm_type=math.inf).item() == pytest.approx(4.0)
    for p, g in zip(ps, gs):
        p.grad = kiln.tensor(g)
    nn.utils.clip_grad_value_(ps, 1.5)
    for p, g in zip(ps, gs):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -1.5, 1.5))
    ps[0].grad = kiln.tensor([math.nan, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)


class Regression(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(kiln.zeros(n))
        self.b = nn.Parameter(kiln.zeros(1))

    def forward(self, x):
        return (x * self.w).sum(-1) + self.b


def test_end_to_end_linear_regression_trains():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    w_true, b_true = np.array([1.5, -2.0, 0.5], np.float32), 0.75
    y = x @ w_true + b_true
    model = Regression(3)
    opt = optim.Adam(model.parameters(), lr=0.1)
    xt, yt = kiln.tensor(x), kiln.tensor(y)
    for _ in range(300):
        opt.zero_grad()
        try:  # the forward raises when an op that needs recording has no derivative yet
            err = model(xt) - yt
            loss = (err * err).sum() / 64.0
            loss.backward()
        except NotImplementedError as e:
            if "derivative" in str(e):
                pytest.skip(f"an op of this model has no derivative in kiln yet: {e}")
            raise
        opt.step()
    np.testing.assert_allclose(model.w.detach().numpy(), w_true, atol=1e-2)
    assert model.b.item() == pytest.approx(b_true, abs=1e-2)


class ColumnRegression(Regression):
    # The same model written with views, mul and add only (ops that record today).
    def forward(self, x):
        return x[:, 0] * self.w[0] + x[:, 1] * self.w[1] + x[:, 2] * self.w[2] + self.b


def test_end_to_end_fit_with_views_mul_add():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    w_true, b_true = np.array([1.5, -2.0, 0.5], np.float32), 0.75
    y = x @ w_true + b_true
    model = ColumnRegression(3)
    opt = optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.0)
    sched = lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)
    xt, yt = kiln.tensor(x), kiln.tensor(y)
    for _ in range(300):
        opt.zero_grad()
        err = model(xt) - yt
        # d(mean(err**2))/d(err**2) = 1/64, fed to backward instead of a recorded mean.
        (err * err).backward(kiln.full((64,), 1.0 / 64))
        nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        sched.step()
    np.testing.assert_allclose(model.w.detach().numpy(), w_true, atol=1e-3)
    assert model.b.item() == pytest.approx(b_true, abs=1e-3)
