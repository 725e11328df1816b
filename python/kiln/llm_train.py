"""A trainable Llama-architecture language model (kiln.llm.load_trainable): the
default model family (SmolLM2: token embedding, RMSNorm, attention with RoPE and
grouped-query heads, SwiGLU MLP, lm_head tied to the embedding) as a kiln.nn.Module
whose parameters are a GGUF checkpoint's tensors under Hugging Face names.

The weights are read with kiln.io.GGUFFile.load_hf: block-quantized tensors are
dequantized bit for bit and llama.cpp's Q/K row permutation is undone, so the
model uses Hugging Face's rotate-half rope, as kiln's own LanguageModel does.
Base weights load frozen (requires_grad False); LoRA (kiln.nn.lora) adds the
trainable parameters.
"""

import os

from . import _C
from . import nn
from .nn import functional as F

_ARCHS = ("llama", "LlamaForCausalLM")


def _frozen_linear(weight):
    # A kiln.nn.Linear holding `weight` [out, in] without drawing an initial one.
    lin = nn.Linear.__new__(nn.Linear)
    nn.Module.__init__(lin)
    lin.out_features, lin.in_features = int(weight.shape[0]), int(weight.shape[1])
    lin.weight = nn.Parameter(weight, requires_grad=False)
    lin.register_parameter("bias", None)
    return lin


def _frozen_norm(weight, eps):
    norm = nn.RMSNorm.__new__(nn.RMSNorm)
    nn.Module.__init__(norm)
    norm.normalized_shape = (int(weight.shape[0]),)
    norm.eps = eps
    norm.elementwise_affine = True
    norm.weight = nn.Parameter(weight, requires_grad=False)
    return norm


class LlamaAttention(nn.Module):
    def __init__(self, q, k, v, o, n_heads, n_kv_heads):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = q, k, v, o
        self.num_heads = n_heads
        self.num_key_value_heads = n_kv_heads
        self.head_dim = q.out_features // n_heads

    def forward(self, x, cos, sin):
        # x [B, T, H] -> [B, T, H]
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim)  # [B, T, nh, d]
        k = self.k_proj(x).view(B, T, self.num_key_value_heads, self.head_dim)
        v = self.v_proj(x).view(B, T, self.num_key_value_heads, self.head_dim)
        q = F.apply_rotary_emb(q, cos, sin)
        k = F.apply_rotary_emb(k, cos, sin)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, heads, T, d]
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           enable_gqa=self.num_heads != self.num_key_value_heads)
        return self.o_proj(a.transpose(1, 2).reshape(B, T, self.num_heads * self.head_dim))


class LlamaMLP(nn.Module):
    def __init__(self, gate, up, down):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = gate, up, down

    def forward(self, x):
        return self.down_proj(F.swiglu(self.gate_proj(x), self.up_proj(x)))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, attn, mlp, in_norm, post_norm):
        super().__init__()
        self.self_attn, self.mlp = attn, mlp
        self.input_layernorm, self.post_attention_layernorm = in_norm, post_norm

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, embed, layers, norm):
        super().__init__()
        self.embed_tokens = embed
        self.layers = nn.ModuleList(layers)
        self.norm = norm


class LlamaForCausalLM(nn.Module):
    """forward(input_ids [B, T] or [T]) -> float logits [B, T, V] (or [T, V])."""

    def __init__(self, config, model, lm_head=None, path=None):
        super().__init__()
        self.config = dict(config)
        self.model = model
        if lm_head is not None:
            self.lm_head = lm_head
        self.name_or_path = path
        self.tokenizer = None
        d = model.layers[0].self_attn.head_dim
        rs = config.get("rope_scaling") or {}
        kind = rs.get("rope_type", rs.get("type", "default")) if rs else "default"
        kw = {}
        if kind in ("linear", "llama3"):
            kw = dict(rope_type=kind, factor=float(rs.get("factor", 1.0)))
            if kind == "llama3":
                kw.update(low_freq_factor=float(rs.get("low_freq_factor", 1.0)),
                          high_freq_factor=float(rs.get("high_freq_factor", 4.0)),
                          original_max_position_embeddings=int(rs.get("original_max_position_embeddings", 8192)))
        self._inv_freq = F.rope_inv_freq(d, float(config.get("rope_theta", 10000.0)), **kw)

    def forward(self, input_ids):
        ids = input_ids if isinstance(input_ids, _C.Tensor) else _C.tensor(input_ids)
        squeeze = ids.dim() == 1
        if squeeze:
            ids = ids.unsqueeze(0)
        B, T = ids.shape
        cos, sin = F.rope_cos_sin(_C.arange(T), self._inv_freq)  # [T, d/2] float32
        emb = self.model.embed_tokens.weight
        cos, sin = cos.to(emb.dtype), sin.to(emb.dtype)
        x = F.embedding(ids, emb)  # [B, T, H]
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        x = self.model.norm(x)
        head = self.lm_head.weight if "lm_head" in self._modules else emb
        logits = F.linear(x, head)  # [B, T, V]
        return logits[0] if squeeze else logits


def load_trainable(path_or_default=None, dtype=_C.float32, trainable=True):
    """The GGUF model at path_or_default (None / "default": the default model,
    SmolLM2-135M-Instruct, fetched on first use) as a LlamaForCausalLM whose
    parameters are the checkpoint's tensors, dequantized to dtype and frozen;
    .tokenizer is the GGUF's tokenizer. Only the Llama architecture is built."""
    path = path_or_default
    if path is None or path == "default":
        path = _C.llm_default_model_path()
        if not os.path.exists(path):
            _C.llm_load(None, dtype="f32", max_context=16)  # fetches it into the cache
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"[load_trainable] no such file: '{path}'")
    cfg = _C.io_load_config(path)
    arch = cfg.get("architecture") or (cfg.get("architectures") or [""])[0]
    plain = not cfg.get("num_experts") and not cfg.get("qk_norm") and not cfg.get("attention_bias")
    if arch not in _ARCHS or not plain:
        raise NotImplementedError(f"[load_trainable] builds the Llama architecture (no MoE, QK-norm or attention "
                                  f"bias); '{path}' is {arch or 'unknown'}")
    g = _C.io_GGUFFile(path)
    by_hf = {g.hf_name(n): n for n in g.tensor_names if g.hf_name(n) is not None}

    def w(name):
        if name not in by_hf:
            raise ValueError(f"[load_trainable] '{path}' has no tensor for {name}")
        return g.load_hf(by_hf[name], dtype)

    eps = float(cfg.get("rms_norm_eps", 1e-6))
    nh = int(cfg["num_attention_heads"])
    nkv = int(cfg.get("num_key_value_heads") or nh)
    layers = []
    for i in range(int(cfg["num_hidden_layers"])):
        p = f"model.layers.{i}."
        lin = {n: _frozen_linear(w(p + n + ".weight")) for n in (
            "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}
        attn = LlamaAttention(lin["self_attn.q_proj"], lin["self_attn.k_proj"], lin["self_attn.v_proj"],
                              lin["self_attn.o_proj"], nh, nkv)
        mlp = LlamaMLP(lin["mlp.gate_proj"], lin["mlp.up_proj"], lin["mlp.down_proj"])
        layers.append(LlamaDecoderLayer(attn, mlp, _frozen_norm(w(p + "input_layernorm.weight"), eps),
                                        _frozen_norm(w(p + "post_attention_layernorm.weight"), eps)))
    embed_w = w("model.embed_tokens.weight")
    embed = nn.Embedding(int(embed_w.shape[0]), int(embed_w.shape[1]),
                         _weight=embed_w)
    embed.weight.requires_grad_(False)
    model = LlamaModel(embed, layers, _frozen_norm(w("model.norm.weight"), eps))
    lm_head = None
    if "lm_head.weight" in by_hf and not cfg.get("tie_word_embeddings", False):
        lm_head = _frozen_linear(w("lm_head.weight"))
    m = LlamaForCausalLM(cfg, model, lm_head, path)
    m.tokenizer = _C.Tokenizer.from_file(path)
    if not trainable:
        m.eval()
    return m
