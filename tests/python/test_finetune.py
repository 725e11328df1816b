"""kiln.llm.load_trainable, kiln.nn.lora and kiln.finetune on the default model
(skipped when it is not cached: set KILN_DEFAULT_MODEL)."""

import json
import os

import numpy as np
import pytest

import kiln
from kiln import finetune_data as fd
from kiln.nn import lora

PROMPT = "The swallows came back to the barn in the middle of April, as they always do."
SENTENCE = "Every morning the heron stands in the shallow water below the old stone bridge."


def _model_path():
    p = os.environ.get("KILN_DEFAULT_MODEL")
    if not p:
        pytest.skip("KILN_DEFAULT_MODEL is not set (the default model is not cached)")
    if not os.path.exists(p):
        pytest.skip(f"KILN_DEFAULT_MODEL {p} does not exist")
    return p


def _needs_grad(fn):
    """Runs fn; a missing derivative (ops still without one) skips the test."""
    try:
        return fn()
    except NotImplementedError as e:
        if "derivative" in str(e):
            pytest.skip(f"a derivative the model needs is missing: {e}")
        raise


@pytest.fixture(scope="module")
def path():
    return _model_path()


@pytest.fixture(scope="module")
def ref_lm(path):
    # float32 weights and KV cache: the computation the trainable model does.
    return kiln.llm.load(path, dtype="f32", max_context=256, kv_dtype=kiln.float32)


@pytest.fixture(scope="module")
def ids(ref_lm):
    return ref_lm.tokenizer.encode(PROMPT)


@pytest.fixture
def model(path):
    return kiln.llm.load_trainable(path)


def _logits(m, ids):
    with kiln.no_grad():
        return m(kiln.tensor(ids)).numpy()


def _randomize_b(m, seed=0):
    # A nonzero adapter without training: lora_B drawn at random.
    rng = np.random.default_rng(seed)
    with kiln.no_grad():
        for _, layer in lora.lora_layers(m):
            b = layer.lora_B.weight
            b.copy_(kiln.tensor(rng.normal(0, 0.02, tuple(b.shape)).astype(np.float32)))


def test_frozen_parameters_with_hf_names(model, ref_lm):
    names = dict(model.named_parameters())
    assert "model.layers.0.self_attn.q_proj.weight" in names
    assert all(not p.requires_grad for p in names.values())
    # The same tensors kiln's LanguageModel holds as f32 (Q/K rows in HF order).
    held = dict(ref_lm.named_weights())
    for n in ("model.layers.3.self_attn.q_proj.weight", "model.layers.3.self_attn.k_proj.weight",
              "model.layers.3.mlp.down_proj.weight", "model.embed_tokens.weight"):
        np.testing.assert_array_equal(names[n].numpy(), held[n].float().numpy())


def test_logits_match_language_model(model, ref_lm, ids):
    ref = ref_lm.logits(ids).numpy()  # [n, V]
    got = _logits(model, ids)
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max()
    np.testing.assert_array_equal(got.argmax(-1), ref.argmax(-1))


def test_batched_forward_matches_rows(model, ids):
    one = _logits(model, ids)
    with kiln.no_grad():
        two = model(kiln.tensor([ids, ids])).numpy()
    np.testing.assert_allclose(two[1], one, rtol=0, atol=1e-3)


def test_lora_starts_as_identity(model, ids):
    before = _logits(model, ids)
    lora.apply(model, r=8, alpha=16, target=("q_proj", "v_proj"), seed=0)
    np.testing.assert_array_equal(_logits(model, ids), before)
    ps = dict(lora.named_parameters(model))
    assert len(ps) == 2 * 2 * model.config["num_hidden_layers"]
    assert all(p.requires_grad for p in ps.values())
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert sorted(trainable) == sorted(ps)
    a = ps["model.layers.0.self_attn.q_proj.lora_A.weight"].numpy()
    H = model.config["hidden_size"]
    assert a.shape == (8, H) and np.abs(a).max() <= 1 / np.sqrt(H) and np.abs(a).max() > 0
    assert not ps["model.layers.0.self_attn.q_proj.lora_B.weight"].numpy().any()


def test_peft_layout_and_round_trip(model, path, ids, tmp_path):
    safetensors = pytest.importorskip("safetensors.numpy")
    lora.apply(model, r=4, alpha=8, target=("q_proj", "v_proj"), seed=1)
    _randomize_b(model)
    want = _logits(model, ids)
    lora.save_pretrained(model, tmp_path)
    cfg = json.loads((tmp_path / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["task_type"] == "CAUSAL_LM"
    assert cfg["r"] == 4 and cfg["lora_alpha"] == 8 and sorted(cfg["target_modules"]) == ["q_proj", "v_proj"]
    assert cfg["base_model_name_or_path"] == path
    t = safetensors.load_file(str(tmp_path / "adapter_model.safetensors"))
    L = model.config["num_hidden_layers"]
    H = model.config["hidden_size"]
    kv = model.config["num_key_value_heads"] * (H // model.config["num_attention_heads"])
    assert len(t) == 4 * L
    assert t["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"].shape == (4, H)
    assert t["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"].shape == (H, 4)
    assert t[f"base_model.model.model.layers.{L - 1}.self_attn.v_proj.lora_B.weight"].shape == (kv, 4)
    other = kiln.llm.load_trainable(path)
    lora.load(other, tmp_path)
    np.testing.assert_array_equal(_logits(other, ids), want)
    assert not np.array_equal(want, _logits(kiln.llm.load_trainable(path), ids))


def test_adapter_directory_runs_in_the_runtime(model, path, ids, tmp_path):
    # kiln.llm.load(ADAPTER_DIR) loads the base model the adapter names with
    # the adapter merged (W + alpha / r * B @ A): the trained model's logits.
    lora.apply(model, r=4, alpha=8, target=("q_proj", "v_proj", "down_proj"), seed=4)
    _randomize_b(model, seed=5)
    want = _logits(model, ids)
    base = _logits(kiln.llm.load_trainable(path), ids)
    lora.save_pretrained(model, tmp_path)
    for lm in (kiln.llm.load(tmp_path, dtype="f32", max_context=256, kv_dtype=kiln.float32),
               kiln.llm.load(path, dtype="f32", max_context=256, kv_dtype=kiln.float32, adapter=tmp_path)):
        got = lm.logits(ids).numpy()
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
        assert np.abs(got - base).max() > 100 * np.abs(got - want).max()  # the adapter did change them
    with pytest.raises(ValueError, match="adapter"):
        kiln.llm.load(tmp_path, adapter=tmp_path)
    cfg = json.loads((tmp_path / "adapter_config.json").read_text())
    (tmp_path / "adapter_config.json").write_text(json.dumps({**cfg, "use_dora": True}))
    with pytest.raises(NotImplementedError, match="use_dora"):
        kiln.llm.load(tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({**cfg, "base_model_name_or_path": "org/none"}))
    with pytest.raises(ValueError, match="not a local path"):
        kiln.llm.load(tmp_path)


def test_cli_generate_on_adapter_directory(model, path, tmp_path):
    import shutil
    import subprocess

    if shutil.which("kiln") is None:
        pytest.skip("kiln CLI not on PATH")
    lora.apply(model, r=4, alpha=8, seed=6)
    _randomize_b(model, seed=7)
    lora.save_pretrained(model, tmp_path / "adapter")
    args = ["-n", "6", "--temperature", "0", "--dtype", "f32", "-q", "Hello"]
    on = subprocess.run(["kiln", "generate", str(tmp_path / "adapter"), *args], capture_output=True, text=True,
                        timeout=300)
    assert on.returncode == 0, on.stderr
    same = subprocess.run(["kiln", "generate", path, "--adapter", str(tmp_path / "adapter"), *args],
                          capture_output=True, text=True, timeout=300)
    assert same.returncode == 0 and same.stdout == on.stdout, same.stderr
    # kiln convert writes the merged model, which generates the same text.
    conv = subprocess.run(["kiln", "convert", str(tmp_path / "adapter"), str(tmp_path / "merged"), "--dtype", "f32"],
                          capture_output=True, text=True, timeout=300)
    assert conv.returncode == 0, conv.stderr
    merged = subprocess.run(["kiln", "generate", str(tmp_path / "merged"), *args], capture_output=True, text=True,
                            timeout=300)
    assert merged.returncode == 0 and merged.stdout == on.stdout, merged.stderr


def test_merge_matches_unmerged(model, ids):
    lora.apply(model, r=8, alpha=16, target=("q_proj", "v_proj", "o_proj"), seed=2)
    _randomize_b(model, seed=3)
    a = model.model.layers[5].self_attn.q_proj
    base = a.base_layer.weight.numpy().copy()
    delta = a.lora_B.weight.numpy() @ a.lora_A.weight.numpy() * 2.0  # alpha / r
    unmerged = _logits(model, ids)
    lora.merge(model)
    assert not lora.lora_layers(model)
    assert isinstance(model.model.layers[5].self_attn.q_proj, kiln.nn.Linear)
    np.testing.assert_allclose(model.model.layers[5].self_attn.q_proj.weight.numpy(), base + delta, rtol=0,
                               atol=1e-6)
    np.testing.assert_allclose(_logits(model, ids), unmerged, rtol=0, atol=2e-3 * np.abs(unmerged).max())


def test_windows_and_collate():
    assert fd.text_windows(list(range(10)), 4) == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9]]
    inp, lab = fd.collate([[1, 2, 3, 4], [5, 6]], pad_id=0)
    np.testing.assert_array_equal(inp.numpy(), [[1, 2, 3], [5, 0, 0]])
    np.testing.assert_array_equal(lab.numpy(), [[2, 3, 4], [6, -100, -100]])
    a = [fd.batch_order(10, 3, s, seed=7) for s in range(5)]
    assert a == [fd.batch_order(10, 3, s, seed=7) for s in range(5)]
    assert sorted(a[0] + a[1] + a[2]) == sorted(set(a[0] + a[1] + a[2]))  # one epoch: no repeats
    tr, ev = fd.split(list(range(20)), 0.1, seed=0)
    assert len(ev) == 2 and sorted(tr + ev) == list(range(20))


def test_training_reduces_loss(model):
    def run():
        return kiln.finetune.train(model, [SENTENCE * 4], steps=4, lr=1e-2, batch=1, seq_len=32, eval_fraction=0,
                                   seed=0, lora_rank=4, log=open(os.devnull, "w"))

    import kiln.finetune  # noqa: F401

    r = _needs_grad(run)
    ls = r["train_losses"]
    assert len(ls) == 4 and ls[-1] < ls[0] * 0.8, ls


def test_checkpoint_resume_matches_straight_run(path, tmp_path):
    import kiln.finetune  # noqa: F401

    texts = [SENTENCE + " " + PROMPT] * 3
    quiet = open(os.devnull, "w")

    def run(steps, out, resume, save_every):
        m = kiln.llm.load_trainable(path)
        kiln.finetune.train(m, texts, steps=steps, lr=5e-3, batch=1, seq_len=16, eval_fraction=0, seed=3,
                            out_dir=str(out), resume=resume, save_every=save_every, lora_rank=2, log=quiet)
        return dict(lora.named_parameters(m))

    straight = _needs_grad(lambda: run(3, tmp_path / "a", False, 0))
    run(2, tmp_path / "b", False, 0)
    assert os.path.exists(tmp_path / "b" / "checkpoint-2" / "optimizer.safetensors")
    resumed = run(3, tmp_path / "b", True, 0)
    for n, p in straight.items():
        np.testing.assert_allclose(resumed[n].numpy(), p.numpy(), rtol=1e-6, atol=1e-7)


def test_chat_jsonl_rendered_with_template(path, tmp_path):
    tok = kiln.Tokenizer.from_file(path)
    msgs = [{"role": "user", "content": "Where do swallows go?"}, {"role": "assistant", "content": "South."}]
    f = tmp_path / "chat.jsonl"
    f.write_text(json.dumps({"messages": msgs}) + "\n\n" + json.dumps({"text": SENTENCE}) + "\n")
    ex = fd.load_examples(str(f), tok, 256)
    assert len(ex) == 2
    text = tok.decode(ex[0])
    assert "<|im_start|>user\nWhere do swallows go?<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\nSouth.<|im_end|>\n")
    assert tok.decode(ex[1]) == SENTENCE
    long = fd.load_examples(str(f), tok, 8)
    assert all(len(w) <= 9 for w in long) and len(long) > 2


def test_cli_help():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "kiln.finetune", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--lora-rank" in r.stdout and '"default"' in r.stdout, r.stderr
    r = subprocess.run([sys.executable, "-m", "kiln.finetune", "a", "b", "c", "--out", "x"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "[MODEL] DATA" in r.stderr
    import shutil

    if shutil.which("kiln") is None:
        pytest.skip("kiln CLI not on PATH")
    r = subprocess.run(["kiln", "finetune", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--lora-rank" in r.stdout, r.stderr
    assert "finetune" in subprocess.run(["kiln", "--help"], capture_output=True, text=True, timeout=120).stdout


def test_peft_loads_kiln_adapter(model, path, ids, tmp_path):
    # PEFT's own loader on kiln's adapter, over the base model as transformers
    # reads it (kiln convert's directory): the same logits as kiln's.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    import shutil
    import subprocess

    if shutil.which("kiln") is None:
        pytest.skip("kiln CLI not on PATH")
    r = subprocess.run(["kiln", "convert", path, str(tmp_path / "hf"), "--dtype", "f32", "-q"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lora.apply(model, r=4, alpha=8, target=("q_proj", "v_proj", "down_proj"), seed=8)
    _randomize_b(model, seed=9)
    want = _logits(model, ids)
    lora.save_pretrained(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"), torch_dtype=torch.float32)
    pm = peft.PeftModel.from_pretrained(base, str(tmp_path / "adapter"))
    with torch.no_grad():
        got = pm(torch.tensor([ids])).logits[0].numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def _loss_case(n=24, v=50, seed=0):
    rng = np.random.RandomState(seed)
    logits = rng.randn(2, n // 2, v).astype(np.float32) * 3
    labels = rng.randint(0, v, (2, n // 2)).astype(np.int64)
    labels[0, -3:] = fd.IGNORE  # padding
    labels[1, 0] = fd.IGNORE
    return logits, labels


def test_loss_fn_matches_a_float64_reference():
    from kiln import finetune

    logits, labels = _loss_case()
    x = kiln.tensor(logits).requires_grad_()
    loss = finetune.loss_fn(lambda inp: x, None, kiln.tensor(labels))
    loss.backward()
    # float64 reference: mean over kept rows of logsumexp(z) - z[label]; d/dz = (softmax(z) - onehot) / kept
    z = logits.reshape(-1, logits.shape[-1]).astype(np.float64)
    lab = labels.reshape(-1)
    kept = lab != fd.IGNORE
    m = z.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(-1, keepdims=True)))[:, 0]
    nll = lse - z[np.arange(len(lab)), np.where(kept, lab, 0)]
    assert loss.item() == pytest.approx(nll[kept].mean(), rel=1e-6)
    g = np.exp(z - lse[:, None])
    g[np.arange(len(lab)), np.where(kept, lab, 0)] -= 1
    g = g * kept[:, None] / kept.sum()
    np.testing.assert_allclose(x.grad.numpy().reshape(g.shape), g, atol=1e-7)


def test_loss_fn_peak_memory_is_a_few_logits():
    # The loss and its backward over logits [N, V] hold at most 3 more arrays of that
    # size at once (the gradient, softmax, one temporary); a one-hot target and a
    # saved log_softmax on top of those made it 6.
    from kiln import finetune

    n, v = 256, 4096
    logits, labels = _loss_case(n, v)
    x = kiln.tensor(logits).requires_grad_()
    lab = kiln.tensor(labels)
    kiln._C.reset_peak_memory_stats()
    before = kiln._C.memory_stats()["current_bytes"]
    finetune.loss_fn(lambda inp: x, None, lab).backward()
    extra = kiln._C.memory_stats()["peak_bytes"] - before
    assert extra <= 3.5 * n * v * 4, f"loss + backward peaked at {extra / (n * v * 4):.1f}x the logits"
