"""kiln.nn.lora: low-rank adapters (LoRA) on a model's Linear layers, in PEFT's
layout so adapters move between kiln and Hugging Face PEFT.

    lora.apply(model, r=8, alpha=16, target=("q_proj", "v_proj"))
    ... train the parameters that require grad ...
    lora.save_pretrained(model, "out")   # adapter_config.json + adapter_model.safetensors
    lora.load(model2, "out")             # wraps model2 as the config says and loads the weights
    lora.merge(model)                    # W += B @ A * alpha / r, the wrappers removed

A wrapped layer computes base(x) + lora_B(lora_A(dropout(x))) * alpha / r with
lora_A [r, in] drawn as PEFT draws it (kaiming_uniform_(a=sqrt(5))) and lora_B
[out, r] zero, so a freshly applied adapter leaves the model's output unchanged.
"""

import json
import math
import os

from .. import _C
from .._grad_mode import no_grad
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter

CONFIG_NAME = "adapter_config.json"
WEIGHTS_NAME = "adapter_model.safetensors"
_PEFT_PREFIX = "base_model.model."


class LoRALinear(Module):
    """A Linear layer with a trainable low-rank update; the base layer stays frozen."""

    def __init__(self, base_layer, r=8, alpha=16, dropout=0.0, generator=None):
        super().__init__()
        if not isinstance(base_layer, Linear):
            raise TypeError(f"[lora] can only wrap kiln.nn.Linear, got {type(base_layer).__name__}")
        if r <= 0:
            raise ValueError(f"[lora] r must be positive, got {r}")
        self.base_layer = base_layer
        base_layer.requires_grad_(False)
        self.r, self.lora_alpha, self.lora_dropout = int(r), float(alpha), float(dropout)
        self.scaling = self.lora_alpha / self.r
        dt = base_layer.weight.dtype
        self.lora_A = Linear(base_layer.in_features, self.r, bias=False, dtype=dt)
        self.lora_B = Linear(self.r, base_layer.out_features, bias=False, dtype=dt)
        init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5), generator=generator)
        init.zeros_(self.lora_B.weight)

    @property
    def in_features(self):
        return self.base_layer.in_features

    @property
    def out_features(self):
        return self.base_layer.out_features

    @property
    def weight(self):
        return self.base_layer.weight

    def forward(self, x):
        h = F.dropout(x, self.lora_dropout, self.training) if self.lora_dropout > 0 else x
        return self.base_layer(x) + self.lora_B(self.lora_A(h)) * self.scaling

    def delta_weight(self):
        """B @ A * scaling [out, in]: what merge adds to the base weight."""
        return _C.matmul(self.lora_B.weight, self.lora_A.weight) * self.scaling

    def extra_repr(self):
        return f"r={self.r}, lora_alpha={self.lora_alpha:g}, lora_dropout={self.lora_dropout:g}"


def _targets(model, target):
    names = (target,) if isinstance(target, str) else tuple(target)
    found = []
    for name, mod in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if name and leaf in names and isinstance(mod, Linear):
            found.append(name)
    return found


def _set_submodule(model, name, new):
    parent_name, _, leaf = name.rpartition(".")
    parent = model
    for part in parent_name.split(".") if parent_name else ():
        parent = getattr(parent, part)
    setattr(parent, leaf, new)


def lora_layers(model):
    """(name, LoRALinear) for each adapted layer, in module order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def apply(model, r=8, alpha=16, target=("q_proj", "v_proj"), dropout=0.0, seed=None):
    """Wraps every Linear whose attribute name is in target with a LoRALinear and
    freezes every other parameter; returns model. seed draws lora_A reproducibly."""
    if lora_layers(model):
        raise ValueError("[lora.apply] the model already has LoRA layers")
    names = _targets(model, target)
    if not names:
        raise ValueError(f"[lora.apply] no Linear layer named {tuple(target)} in the model")
    model.requires_grad_(False)
    gen = _C.Generator().manual_seed(int(seed)) if seed is not None else None
    for name in names:
        base = _get(model, name)
        _set_submodule(model, name, LoRALinear(base, r, alpha, dropout, generator=gen))
    model._lora_config = dict(r=int(r), lora_alpha=alpha, lora_dropout=float(dropout),
                              target_modules=sorted({n.rsplit(".", 1)[-1] for n in names}))
    return model


def _get(model, name):
    m = model
    for part in name.split("."):
        m = getattr(m, part)
    return m


def parameters(model):
    """The LoRA parameters (lora_A / lora_B weights), the ones an optimizer trains."""
    return [p for _, p in named_parameters(model)]


def named_parameters(model):
    return [(n, p) for n, p in model.named_parameters() if ".lora_A." in n or ".lora_B." in n]


def state_dict(model):
    """The adapter's tensors under PEFT's names
    (base_model.model.<module>.lora_A.weight, ...)."""
    return {_PEFT_PREFIX + n: p.detach().contiguous() for n, p in named_parameters(model)}


def adapter_config(model, base_model_name_or_path=None):
    c = getattr(model, "_lora_config", None)
    if c is None:
        raise ValueError("[lora] the model has no LoRA layers (call kiln.nn.lora.apply first)")
    if base_model_name_or_path is None:
        base_model_name_or_path = getattr(model, "name_or_path", None)
    return {
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": base_model_name_or_path,
        "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
        "layers_pattern": None, "layers_to_transform": None, "lora_alpha": c["lora_alpha"],
        "lora_dropout": c["lora_dropout"], "modules_to_save": None, "peft_type": "LORA", "r": c["r"],
        "rank_pattern": {}, "revision": None, "target_modules": list(c["target_modules"]),
        "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": False,
    }


def save_pretrained(model, save_directory, base_model_name_or_path=None):
    """Writes adapter_config.json and adapter_model.safetensors (PEFT's files)."""
    os.makedirs(save_directory, exist_ok=True)
    cfg = adapter_config(model, base_model_name_or_path)
    with open(os.path.join(save_directory, CONFIG_NAME), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    _C.io_save_file(state_dict(model), os.path.join(save_directory, WEIGHTS_NAME),
                    {"format": "pt"})


def load(model, directory):
    """Loads a PEFT LoRA adapter directory into model (applying LoRA as its config
    says when the model has none yet); returns model."""
    with open(os.path.join(directory, CONFIG_NAME)) as f:
        cfg = json.load(f)
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ValueError(f"[lora.load] {directory} holds a {cfg.get('peft_type')} adapter, not LORA")
    if cfg.get("use_dora") or cfg.get("use_rslora") or cfg.get("rank_pattern") or cfg.get("alpha_pattern"):
        raise NotImplementedError("[lora.load] DoRA, rsLoRA and per-layer rank/alpha patterns are not "
                                  "implemented in kiln yet")
    if not lora_layers(model):
        tm = cfg["target_modules"]
        apply(model, r=cfg["r"], alpha=cfg["lora_alpha"], target=(tm,) if isinstance(tm, str) else tm,
              dropout=cfg.get("lora_dropout", 0.0))
    tensors = _C.io_load_file(os.path.join(directory, WEIGHTS_NAME))
    mine = dict(named_parameters(model))
    for key, t in tensors.items():
        name = key[len(_PEFT_PREFIX):] if key.startswith(_PEFT_PREFIX) else key
        name = name.replace(".lora_A.default.", ".lora_A.").replace(".lora_B.default.", ".lora_B.")
        if name not in mine:
            raise ValueError(f"[lora.load] {key} matches no LoRA parameter of the model")
        p = mine.pop(name)
        if tuple(t.shape) != tuple(p.shape):
            raise ValueError(f"[lora.load] {key} has shape {tuple(t.shape)}, the model's is {tuple(p.shape)}")
        with no_grad():
            p.copy_(t.to(p.dtype))
    if mine:
        raise ValueError(f"[lora.load] {directory} lacks {sorted(mine)[:3]}... ({len(mine)} tensors)")
    return model


def merge(model):
    """Folds each adapter into its base weight (W += B @ A * scaling) and puts the
    base Linear back in the wrapper's place; returns model."""
    for name, m in lora_layers(model):
        with no_grad():
            m.base_layer.weight.add_(m.delta_weight().to(m.base_layer.weight.dtype))
        _set_submodule(model, name, m.base_layer)
    model.__dict__.pop("_lora_config", None)
    return model
