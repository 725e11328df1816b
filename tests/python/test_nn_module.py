"""kiln.nn's Module system: bookkeeping and state_dict key names against torch's
(hard-coded: the names torch.nn gives the same structures), layer forwards against
NumPy, init fan rules, requires_grad= on the factories, kiln.save / kiln.load."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(4)
        self.proj = nn.Linear(4, 3)
        self.act = nn.GELU()
        self.register_buffer("scale", kiln.ones(3))
        self.register_buffer("cache", kiln.zeros(2), persistent=False)

    def forward(self, x):
        return self.act(self.proj(self.norm(x))) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.layers = nn.ModuleList([Block(), Block()])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2, bias=False), "b": nn.Identity()})
        self.final = nn.Sequential(nn.RMSNorm(4), nn.Dropout(0.1), nn.Linear(4, 5))
        self.temperature = nn.Parameter(kiln.tensor(1.0))


# What torch.nn gives for the same structure.
TORCH_STATE_KEYS = [
    "temperature",
    "embed.weight",
    "layers.0.scale", "layers.0.norm.weight", "layers.0.norm.bias", "layers.0.proj.weight", "layers.0.proj.bias",
    "layers.1.scale", "layers.1.norm.weight", "layers.1.norm.bias", "layers.1.proj.weight", "layers.1.proj.bias",
    "heads.a.weight",
    "final.0.weight", "final.2.weight", "final.2.bias",
]
TORCH_PARAM_NAMES = [
    "temperature", "embed.weight",
    "layers.0.norm.weight", "layers.0.norm.bias", "layers.0.proj.weight", "layers.0.proj.bias",
    "layers.1.norm.weight", "layers.1.norm.bias", "layers.1.proj.weight", "layers.1.proj.bias",
    "heads.a.weight", "final.0.weight", "final.2.weight", "final.2.bias",
]


def test_state_dict_keys_match_torch():
    # torch orders each module's own params, then its buffers, then its children.
    net = Net()
    assert list(net.state_dict()) == [
        "temperature", "embed.weight",
        "layers.0.scale", "layers.0.norm.weight", "layers.0.norm.bias", "layers.0.proj.weight",
        "layers.0.proj.bias",
        "layers.1.scale", "layers.1.norm.weight", "layers.1.norm.bias", "layers.1.proj.weight",
        "layers.1.proj.bias",
        "heads.a.weight", "final.0.weight", "final.2.weight", "final.2.bias",
    ]
    assert sorted(net.state_dict()) == sorted(TORCH_STATE_KEYS)


def test_named_parameters_buffers_children_modules():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == TORCH_PARAM_NAMES
    assert all(isinstance(p, nn.Parameter) and isinstance(p, kiln.Tensor) for p in net.parameters())
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())
    assert [n for n, _ in net.named_buffers()] == ["layers.0.scale", "layers.0.cache", "layers.1.scale",
                                                   "layers.1.cache"]
    assert [n for n, _ in net.named_children()] == ["embed", "layers", "heads", "final"]
    assert [n for n, _ in net.named_modules()] == [
        "", "embed", "layers", "layers.0", "layers.0.norm", "layers.0.proj", "layers.0.act", "layers.1",
        "layers.1.norm", "layers.1.proj", "layers.1.act", "heads", "heads.a", "heads.b", "final", "final.0",
        "final.1", "final.2"]
    assert len(list(net.modules())) == 18
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["temperature"]


def test_shared_parameter_listed_once_and_setattr_bookkeeping():
    m = nn.Module()
    lin = nn.Linear(2, 2)
    m.a = lin
    m.b = lin
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias"]
    m.a = None
    assert m._modules["a"] is None and [n for n, _ in m.named_parameters()] == ["b.weight", "b.bias"]
    with pytest.raises(TypeError):
        m.b = 3  # a child module slot takes a Module or None
    m.w = nn.Parameter(kiln.zeros(3))
    assert "w" in m._parameters and m.w is m._parameters["w"]
    with pytest.raises(TypeError):
        m.w = kiln.zeros(3)  # torch: a plain tensor cannot replace a Parameter
    del m.w
    assert "w" not in m._parameters
    with pytest.raises(KeyError):
        m.register_buffer("x.y", kiln.zeros(1))
    with pytest.raises(AttributeError):
        m.missing


def test_train_eval_requires_grad_zero_grad_apply():
    net = Net()
    assert net.training and net.final[1].training
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    for p in net.parameters():
        p.grad = kiln.ones(*p.shape)
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Embedding"


def test_load_state_dict_strict_and_round_trip(tmp_path):
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
    sd = a.state_dict()
    sd.pop("embed.weight")
    sd["extra"] = kiln.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "embed.weight"'):
        b.load_state_dict(sd)
    missing, unexpected = b.load_state_dict(sd, strict=False)
    assert missing == ["embed.weight"] and unexpected == ["extra"]
    bad = a.state_dict()
    bad["final.2.bias"] = kiln.zeros(7)
    with pytest.raises(RuntimeError, match="size mismatch for final.2.bias"):
        b.load_state_dict(bad)
    # kiln.save / kiln.load: safetensors, same names and values.
    path = tmp_path / "net.safetensors"
    kiln.save(a.state_dict(), path)
    loaded = kiln.load(path)
    assert sorted(loaded) == sorted(a.state_dict())
    c = Net()
    c.load_state_dict(loaded)
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(c.state_dict()[k].numpy(), v.numpy())
    with pytest.raises(TypeError):
        kiln.save({"x": 1.0}, tmp_path / "bad.safetensors")


def test_module_to_dtype_keeps_names_and_requires_grad():
    net = Net()
    net.to(kiln.bfloat16)
    assert all(p.dtype == kiln.bfloat16 for p in net.parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert [n for n, _ in net.named_parameters()] == TORCH_PARAM_NAMES
    net.to(dtype=kiln.float32)
    assert net.layers[0].scale.dtype == kiln.float32


def test_repr_like_torch():
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.25))
    assert repr(m) == ("Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=True)\n  (1): ReLU()\n"
                       "  (2): Dropout(p=0.25, inplace=False)\n)")
    assert repr(nn.LayerNorm(8)) == "LayerNorm((8,), eps=1e-05, elementwise_affine=True)"
    assert repr(nn.Embedding(10, 3, padding_idx=1)) == "Embedding(10, 3, padding_idx=1)"


# linear / embedding / the norms have no derivative yet: the forwards run under no_grad.
@kiln.no_grad()
def test_layer_forwards_against_numpy():
    kiln.manual_seed(0)
    lin = nn.Linear(5, 3)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    want = x @ lin.weight.numpy().T + lin.bias.numpy()
    np.testing.assert_allclose(lin(kiln.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    emb = nn.Embedding(6, 4, padding_idx=2)
    np.testing.assert_array_equal(emb.weight.detach().numpy()[2], 0)
    idx = kiln.tensor([[0, 5], [2, 1]])
    np.testing.assert_array_equal(emb(idx).detach().numpy(), emb.weight.detach().numpy()[[[0, 5], [2, 1]]])
    ln = nn.LayerNorm(5)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(ln(kiln.tensor(x)).detach().numpy(), (x - mu) / np.sqrt(var + 1e-5), atol=1e-5)
    rms = nn.RMSNorm(5, eps=1e-6)
    np.testing.assert_allclose(rms(kiln.tensor(x)).detach().numpy(),
                               x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6), rtol=1e-5, atol=1e-6)
    xt = kiln.tensor(x)
    np.testing.assert_allclose(nn.ReLU()(xt).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Sigmoid()(xt).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-5)
    np.testing.assert_allclose(nn.Tanh()(xt).numpy(), np.tanh(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.SiLU()(xt).numpy(), x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    sm = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax(-1)(xt).numpy(), sm, rtol=1e-5)
    np.testing.assert_allclose(nn.LogSoftmax(-1)(xt).numpy(), np.log(sm), rtol=1e-5, atol=1e-6)


def test_losses_against_numpy():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((4, 6)).astype(np.float32)
    target = np.array([1, 5, -100, 0])
    lsm = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    nll = -lsm[np.arange(4), np.maximum(target, 0)]
    valid = target != -100
    got = nn.CrossEntropyLoss()(kiln.tensor(logits), kiln.tensor(target)).item()
    assert got == pytest.approx(nll[valid].mean(), rel=1e-5)
    got = nn.CrossEntropyLoss(reduction="sum")(kiln.tensor(logits), kiln.tensor(target)).item()
    assert got == pytest.approx(nll[valid].sum(), rel=1e-5)
    eps = 0.1
    smooth = (1 - eps) * nll - eps / 6 * lsm.sum(-1)
    got = nn.CrossEntropyLoss(label_smoothing=eps)(kiln.tensor(logits), kiln.tensor(target)).item()
    assert got == pytest.approx(smooth[valid].mean(), rel=1e-5)
    y = rng.standard_normal((4, 6)).astype(np.float32)
    assert nn.MSELoss()(kiln.tensor(logits), kiln.tensor(y)).item() == pytest.approx(((logits - y) ** 2).mean(),
                                                                                      rel=1e-5)


def test_dropout_train_and_eval():
    x = kiln.ones(1000)
    d = nn.Dropout(0.3)
    kiln.manual_seed(5)
    y = d(x).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert 0.6 < kept.mean() < 0.8
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_init_fans_and_bounds():
    kiln.manual_seed(1)
    w = kiln.empty(64, 32, 3)  # fan_in = 32 * 3, fan_out = 64 * 3
    nn.init.xavier_uniform_(w)
    a = math.sqrt(6 / (96 + 192))
    assert np.abs(w.numpy()).max() <= a and np.abs(w.numpy()).max() > 0.9 * a
    nn.init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    b = math.sqrt(2) * math.sqrt(3 / 192)
    assert np.abs(w.numpy()).max() <= b and np.abs(w.numpy()).max() > 0.9 * b
    big = kiln.empty(400, 500)
    nn.init.kaiming_normal_(big, nonlinearity="relu")
    assert np.std(big.numpy()) == pytest.approx(math.sqrt(2 / 500), rel=0.02)
    nn.init.xavier_normal_(big, gain=2.0)
    assert np.std(big.numpy()) == pytest.approx(2 * math.sqrt(2 / 900), rel=0.02)
    nn.init.normal_(big, 3.0, 0.5)
    assert np.mean(big.numpy()) == pytest.approx(3.0, abs=0.01)
    nn.init.constant_(big, 0.25)
    assert np.all(big.numpy() == 0.25)
    with pytest.raises(ValueError):
        nn.init.xavier_uniform_(kiln.empty(5))
    # Linear's default: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias; init runs under no_grad.
    lin = nn.Linear(100, 200)
    assert np.abs(lin.weight.detach().numpy()).max() <= 0.1 and np.abs(lin.weight.detach().numpy()).max() > 0.09
    assert np.abs(lin.bias.detach().numpy()).max() <= 0.1
    assert lin.weight.is_leaf and lin.weight.grad_fn is None
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))


def test_factories_take_requires_grad():
    made = [kiln.zeros(2, requires_grad=True), kiln.ones(2, requires_grad=True), kiln.empty(2, requires_grad=True),
            kiln.full((2,), 3.0, requires_grad=True), kiln.rand(2, requires_grad=True),
            kiln.randn(2, requires_grad=True), kiln.tensor([1.0, 2.0], requires_grad=True),
            kiln.arange(0.0, 3.0, requires_grad=True), kiln.linspace(0, 1, 3, requires_grad=True),
            kiln.eye(2, requires_grad=True), kiln.zeros_like(kiln.ones(2), requires_grad=True),
            kiln.ones_like(kiln.ones(2), requires_grad=True), kiln.full_like(kiln.ones(2), 2, requires_grad=True),
            kiln.rand_like(kiln.ones(2), requires_grad=True), kiln.randn_like(kiln.ones(2), requires_grad=True),
            kiln.empty_like(kiln.ones(2), requires_grad=True), kiln.logspace(0, 1, 3, requires_grad=True)]
    assert all(t.requires_grad and t.is_leaf for t in made)
    assert not kiln.zeros(2).requires_grad
    x = kiln.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(kiln.ones(2))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_parameter_is_a_new_leaf_sharing_memory():
    t = kiln.zeros(3)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, kiln.Tensor)
    assert p.requires_grad and not t.requires_grad
    t.fill_(2.0)
    np.testing.assert_array_equal(p.detach().numpy(), [2, 2, 2])
    assert not nn.Parameter(kiln.zeros(1), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\n")


def test_functional_namespace_keeps_bound_functions():
    assert F.linear is kiln._C.nn_functional_linear
    assert nn.functional.scaled_dot_product_attention is kiln._C.nn_functional_scaled_dot_product_attention
    assert callable(F.layer_norm) and callable(F.embedding)
    import sys

    assert sys.modules["kiln.nn.functional"] is F
    from kiln.nn.functional import rms_norm  # noqa: F401


def test_grad_can_be_set_to_none():
    # t.grad = None clears the gradient (zero_grad's default), on plain tensors too.
    t = kiln.zeros(2, requires_grad=True)
    t.grad = kiln.ones(2)
    t.grad = None
    assert t.grad is None


def test_detach_makes_a_tensor_without_history():
    # Parameter(t) and the optimizers rely on detach() dropping requires_grad.
    x = kiln.zeros(3, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    c = d.clone()
    assert not c.requires_grad and c.grad_fn is None


def test_flatten_like_torch():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    xt = kiln.tensor(x, requires_grad=True)
    y = nn.Flatten()(xt)
    assert tuple(y.shape) == (2, 60)
    np.testing.assert_array_equal(y.detach().numpy(), x.reshape(2, 60))
    np.testing.assert_array_equal(nn.Flatten(0, 2)(kiln.tensor(x)).numpy(), x.reshape(24, 5))
    np.testing.assert_array_equal(nn.Flatten(-2)(kiln.tensor(x)).numpy(), x.reshape(2, 3, 20))
    (y * kiln.tensor(np.arange(120, dtype=np.float32).reshape(2, 60))).sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), np.arange(120, dtype=np.float32).reshape(x.shape))
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    with pytest.raises(ValueError, match="flatten"):
        nn.Flatten(3, 1)(kiln.tensor(x))
