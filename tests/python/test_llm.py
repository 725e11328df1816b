"""kiln.llm: loading, logits against transformers' reference logits (committed
fixtures), generation as an iterator, perplexity and errors."""

import math
import os
import pathlib

import numpy as np
import pytest

import kiln
import kiln.llm

MODELS = pathlib.Path(__file__).resolve().parents[1] / "data" / "models"
FIXTURES = sorted(p.name for p in MODELS.iterdir() if (p / "reference.safetensors").exists())


def load_reference(name):
    # The fixture file with the standard safetensors layout, read with NumPy only.
    import json
    import struct

    raw = (MODELS / name / "reference.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    out = {}
    for key, e in header.items():
        if key == "__metadata__":
            continue
        dt = {"I64": np.int64, "F32": np.float32}[e["dtype"]]
        b, end = e["data_offsets"]
        out[key] = np.frombuffer(raw[8 + n + b : 8 + n + end], dtype=dt).reshape(e["shape"]).copy()
    return out["input_ids"].reshape(-1), out["logits"][0]


def rel_err(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("name", FIXTURES)
def test_f32_logits_match_transformers(name):
    ids, ref = load_reference(name)
    m = kiln.llm.load(str(MODELS / name), dtype="f32", kv_dtype=kiln.float32)
    assert m.config["vocab_size"] == ref.shape[-1]
    got = m.logits(ids).numpy()
    assert got.shape == ref.shape
    assert rel_err(got, ref) < 1e-4
    # A list of ints works the same; decode steps agree with the prefill.
    m.reset()
    rows = [m.forward([int(i)]).numpy()[0] for i in ids]
    assert rel_err(np.stack(rows), got) < 1e-5
    assert m.position == len(ids)


@pytest.mark.parametrize("dtype,tol", [("bf16", 3e-2), ("fp8", 0.2)])
def test_low_precision_close(dtype, tol):
    ids, ref = load_reference("tiny-qwen3")
    m = kiln.llm.load(str(MODELS / "tiny-qwen3"), dtype=dtype)
    assert m.dtype == dtype
    assert rel_err(m.logits(ids).numpy(), ref) < tol


def test_generate_iterates_and_is_greedy():
    m = kiln.llm.load(str(MODELS / "tiny-llama"), dtype="f32")
    prompt = [3, 4, 5]
    g = m.generate(prompt, max_tokens=6, temperature=0, stop_at_eos=False)
    pieces = list(g)  # no tokenizer: the pieces are empty, the ids are there
    assert pieces == []
    toks = g.tokens
    assert len(toks) == 6 and g.stats["stop_reason"] == "length"
    lg = m.logits(prompt + toks[:-1]).numpy()
    assert [int(np.argmax(r)) for r in lg[len(prompt) - 1 :]] == toks
    # Seeded sampling repeats.
    a = m.generate(prompt, max_tokens=8, temperature=1.0, seed=5, stop_at_eos=False)
    list(a)
    b = m.generate(prompt, max_tokens=8, temperature=1.0, seed=5, stop_at_eos=False)
    list(b)
    assert a.tokens == b.tokens


def test_generate_defaults_are_the_cli_defaults():
    # Python's generate() samples as `kiln generate` does when given no options:
    # 128 tokens, temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, seed 0.
    m = kiln.llm.load(str(MODELS / "tiny-llama"), dtype="f32")
    prompt = [3, 4, 5]
    by_default = m.generate(prompt, stop_at_eos=False)
    list(by_default)
    explicit = m.generate(prompt, max_tokens=128, temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=0,
                          stop_at_eos=False)
    list(explicit)
    assert len(by_default.tokens) == 128 and by_default.tokens == explicit.tokens
    plain = m.generate(prompt, max_tokens=128, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=0,
                       stop_at_eos=False)
    list(plain)
    assert plain.tokens != by_default.tokens


def test_perplexity_matches_logits():
    ids, _ = load_reference("tiny-qwen2")
    m = kiln.llm.load(str(MODELS / "tiny-qwen2"), dtype="f32")
    lg = m.logits(ids).numpy().astype(np.float64)
    mx = lg.max(axis=1, keepdims=True)
    logp = lg - mx - np.log(np.exp(lg - mx).sum(axis=1, keepdims=True))
    want = math.exp(-np.mean([logp[i, ids[i + 1]] for i in range(len(ids) - 1)]))
    assert m.perplexity(ids) == pytest.approx(want, rel=1e-4)


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"^\[llm\]"):
        kiln.llm.load(str(tmp_path / "missing.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00garbage")
    with pytest.raises(ValueError, match=r"^\[llm\]"):
        kiln.llm.load(str(bad))
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text('{"model_type": "gpt2", "vocab_size": 8}')
    with pytest.raises((ValueError, NotImplementedError), match=r"^\[llm\]"):
        kiln.llm.load(str(tmp_path / "gpt2"))
    with pytest.raises(ValueError, match=r"^\[llm\] unknown weight dtype"):
        kiln.llm.load(str(MODELS / "tiny-llama"), dtype="int4")
    m = kiln.llm.load(str(MODELS / "tiny-llama"), dtype="f32", max_context=16)
    with pytest.raises(ValueError, match=r"^\[llm\] token id 256"):
        m.logits([1, 256])
    with pytest.raises(ValueError, match=r"^\[llm\].*context"):
        m.logits(list(range(17)))
    with pytest.raises(TypeError, match=r"^\[llm\] token ids must be integers"):
        m.logits([1.5, 2.0])
    with pytest.raises(TypeError, match=r"^\[llm\] token ids must be integers"):
        m.forward(np.array([True]))
    with pytest.raises(ValueError, match=r"^\[llm\].*tokenizer"):
        m.tokenizer


def _default_model():
    env = os.environ.get("KILN_DEFAULT_MODEL", "")
    if env and os.path.exists(env):
        return env
    cached = kiln.llm.default_model_path()
    return cached if os.path.exists(cached) else ""


DEFAULT = _default_model()


@pytest.mark.skipif(not os.path.exists(DEFAULT), reason="default model GGUF not found (set KILN_DEFAULT_MODEL or run kiln generate once)")
def test_default_model_generates_text():
    # The cached copy loads through "default" (found in the cache, nothing fetched).
    cached = DEFAULT == kiln.llm.default_model_path()
    m = kiln.llm.load("default" if cached else DEFAULT, dtype="fp8", max_context=128)
    assert isinstance(m.tokenizer, kiln.Tokenizer)
    text = "".join(m.generate("The capital of France is", max_tokens=8, temperature=0))
    assert "Paris" in text


def test_max_tokens_is_a_bound_not_a_size():
    # 2**62 raised "vector::reserve" (a reservation of that many tokens); a bound past
    # int64 is the same bound. Generation runs to the end of the context.
    m = kiln.llm.load(str(MODELS / "tiny-llama"), dtype="f32", max_context=32)
    for n in (2**62, 2**63 - 1, 2**70):
        g = m.generate([3, 4, 5], max_tokens=n, temperature=0, stop_at_eos=False)
        list(g)
        assert len(g.tokens) == 32 - 3 + 1 and g.stats["stop_reason"] == "context", n
    with pytest.raises(ValueError, match=r"^\[llm\] max_tokens must be >= 0"):
        m.generate([3, 4, 5], max_tokens=-1)


def test_load_context_that_cannot_fit():
    # tiny-llama's KV cache is 512 bytes per token (bf16): 2**50 tokens need 512 PiB.
    path = str(MODELS / "tiny-llama")
    with pytest.raises(ValueError, match=r"^\[llm\] a context of 1125899906842624 tokens needs 512\.0 PiB for the "
                                         r"KV cache \(512 bytes per token\); this machine has .* available"):
        kiln.llm.load(path, max_context=2**50)
    with pytest.raises(ValueError, match=r"^\[llm\] a context of 9223372036854775807 tokens needs"):
        kiln.llm.load(path, max_context=2**63 - 1)
    with pytest.raises(OverflowError, match=r"^\[llm\] max_context"):
        kiln.llm.load(path, max_context=2**63)
    with pytest.raises(ValueError, match=r"^\[llm\] max_context must be >= 0"):
        kiln.llm.load(path, max_context=-1)
    # The default is the trained length (config.json: 256).
    assert kiln.llm.load(path).max_context == 256


def test_perplexity_window_is_a_bound():
    ids, _ = load_reference("tiny-qwen2")
    m = kiln.llm.load(str(MODELS / "tiny-qwen2"), dtype="f32")
    assert m.perplexity(ids, window=2**70) == m.perplexity(ids)
    with pytest.raises(ValueError, match=r"^\[llm\] perplexity window must be >= 0"):
        m.perplexity(ids, window=-1)
