"""Objects shared between Python threads: a LanguageModel serialises its callers
(the bindings release the GIL, so the threads really overlap), a generation
that another call interleaved with stops with a clear error instead of
continuing from the other call's tokens, and a Tokenizer encodes from several
threads at once. Every result is compared with the single-threaded one."""

import json
import pathlib
import shutil
import tarfile
import threading

import numpy as np
import pytest

import kiln
import kiln.llm

MODELS = pathlib.Path(__file__).resolve().parents[1] / "data" / "models"
TOKENIZERS = pathlib.Path(__file__).resolve().parents[1] / "data" / "tokenizers" / "qwen3"
TEXT = pathlib.Path(__file__).resolve().parents[1] / "data" / "text" / "mill_on_the_river.txt"

PROMPTS = [[3, 4, 5, 6, 7, 8, 9, 10], [200, 17, 99, 42, 5, 1, 250, 77, 31, 64, 12]]
INTERLEAVED = "used by another call"  # the error of a generation another call moved the cache under


def run_threads(n, fn):
    """Runs fn(i) on n threads started together; returns their results, re-raising the first error."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, [None] * n

    def body(i):
        barrier.wait()
        try:
            results[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            errors[i] = e

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


@pytest.fixture(scope="module")
def model():
    return kiln.llm.load(str(MODELS / "tiny-llama"), dtype="f32", kv_dtype=kiln.float32)


def test_logits_from_two_threads_on_one_model(model):
    want = [model.logits(p).numpy() for p in PROMPTS]

    def work(i):
        out = []
        for _ in range(40):
            out.append(model.logits(PROMPTS[i % 2]).numpy())
        return out

    results, errors = run_threads(4, work)
    assert errors == [None] * 4
    for i, rows in enumerate(results):
        for got in rows:
            np.testing.assert_array_equal(got, want[i % 2])


def test_perplexity_and_forward_from_two_threads_on_one_model(model):
    ids = PROMPTS[1] * 3
    want = model.perplexity(ids)

    def work(i):
        if i % 2 == 0:
            return [model.perplexity(ids) for _ in range(10)]
        for _ in range(30):  # forward appends to the shared cache: only the shape is defined
            model.reset()
            assert model.forward(PROMPTS[0]).shape == (1, 256)
        return None

    results, errors = run_threads(2, work)
    assert errors == [None, None]
    assert results[0] == [want] * 10


def greedy(m, prompt, n=8):
    g = m.generate(prompt, max_tokens=n, temperature=0, stop_at_eos=False)
    list(g)
    return g.tokens


def test_generate_from_two_threads_is_right_or_refused(model):
    # Generations on one model share its KV cache: when another call runs
    # between two steps of a generation, that generation stops with an error;
    # it never continues from the other call's tokens.
    want = [greedy(model, p) for p in PROMPTS]

    def work(i):
        out = []
        for _ in range(15):
            try:
                out.append(greedy(model, PROMPTS[i % 2]))
            except RuntimeError as e:
                assert INTERLEAVED in str(e)
        return out

    results, errors = run_threads(2, work)
    assert errors == [None, None]
    for i, runs in enumerate(results):
        for toks in runs:
            assert toks == want[i % 2]


def test_generate_is_refused_after_a_call_between_start_and_first_step(model):
    want = greedy(model, PROMPTS[0])
    g = model.generate(PROMPTS[0], max_tokens=8, temperature=0, stop_at_eos=False)
    model.logits(PROMPTS[1])  # moves the cache before the generation's prefill
    with pytest.raises(RuntimeError, match=INTERLEAVED):
        next(g)
    assert greedy(model, PROMPTS[0]) == want


def test_generate_on_two_models_in_parallel():
    models = [kiln.llm.load(str(MODELS / "tiny-llama"), dtype="f32") for _ in range(2)]
    want = [greedy(models[0], p, 16) for p in PROMPTS]
    results, errors = run_threads(2, lambda i: [greedy(models[i], PROMPTS[i], 16) for _ in range(5)])
    assert errors == [None, None]
    for i, runs in enumerate(results):
        assert runs == [want[i]] * 5


def byte_level_tokenizer_json():
    # GPT-2's byte -> printable character map; one token per byte, no merges.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    extra = [b for b in range(256) if b not in keep]
    char = {b: chr(b) for b in keep} | {b: chr(256 + i) for i, b in enumerate(extra)}
    return json.dumps({
        "model": {"type": "BPE", "vocab": {char[b]: b for b in range(256)}, "merges": []},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
    })


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    """tiny-llama with a byte-level tokenizer of its 256 ids: its generations yield text."""
    d = tmp_path_factory.mktemp("tiny-llama-text")
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(MODELS / "tiny-llama" / f, d / f)
    (d / "tokenizer.json").write_text(byte_level_tokenizer_json())
    return kiln.llm.load(str(d), dtype="f32")


def test_two_threads_stepping_one_generation(text_model):
    def pieces_and_tokens():
        g = text_model.generate(PROMPTS[0], max_tokens=24, temperature=0, stop_at_eos=False)
        return list(g), g.tokens

    want_pieces, want_tokens = pieces_and_tokens()
    assert len(want_pieces) > 4
    for _ in range(5):
        g = text_model.generate(PROMPTS[0], max_tokens=24, temperature=0, stop_at_eos=False)

        def step(i):
            got, seen = [], []
            for piece in g:  # the threads take turns: each piece goes to one of them
                got.append(piece)
                seen.append(g.tokens)
            return got, seen

        results, errors = run_threads(2, step)
        assert errors == [None, None]
        assert g.tokens == want_tokens
        assert sorted(results[0][0] + results[1][0]) == sorted(want_pieces)
        for _, seen in results:  # every look at the tokens saw a prefix of the final ones
            assert all(t == want_tokens[: len(t)] for t in seen)


def test_properties_while_another_thread_runs_the_model(model):
    model.reset()
    stop = threading.Event()

    def reader(i):
        seen = set()
        while not stop.is_set():
            seen.add(model.position)
            assert model.bytes_read_last_forward >= 0
        return seen

    def writer(i):
        try:
            for _ in range(30):
                model.logits(PROMPTS[1])
        finally:
            stop.set()

    results, errors = run_threads(2, lambda i: writer(i) if i == 0 else reader(i))
    assert errors == [None, None]
    # position is read between calls only: 0 after a reset, or the whole prompt.
    assert results[1] <= {0, len(PROMPTS[1])}


@pytest.fixture(scope="module")
def qwen3_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("qwen3")
    with tarfile.open(TOKENIZERS / "tokenizer.json.tar.xz") as tar:
        tar.extract("tokenizer.json", d, filter="data")
    shutil.copy(TOKENIZERS / "tokenizer_config.json", d / "tokenizer_config.json")
    return str(d / "tokenizer.json")


def test_tokenizer_encode_decode_from_four_threads(qwen3_path):
    words = TEXT.read_text(encoding="utf-8").split(" ")
    texts = [" ".join(words[k : k + 7]) for k in range(0, len(words), 7)]
    texts += ["<|im_start|>user\nnaïve 日本語 👍🏽 don't<|im_end|>", " ".join(words)]
    # One thread, and a tokenizer of its own (its word cache starts empty).
    single = kiln.Tokenizer.from_file(qwen3_path)
    want = [single.encode(t) for t in texts]
    # Four threads on one fresh tokenizer, each starting at a different text:
    # its word cache is filled and read by all of them at once.
    tok = kiln.Tokenizer.from_file(qwen3_path)
    n = len(texts)
    order = [list(range(i * n // 4, n)) + list(range(i * n // 4)) for i in range(4)]
    results, errors = run_threads(4, lambda i: [(j, tok.encode(texts[j])) for j in order[i]])
    assert errors == [None] * 4
    for rows in results:
        for j, ids in rows:
            assert ids == want[j], j
    results, errors = run_threads(4, lambda i: [tok.encode_batch(texts[i::4])])
    assert errors == [None] * 4
    for i, (batch,) in enumerate(results):
        assert batch == want[i::4]
    decoded, errors = run_threads(4, lambda i: [tok.decode(want[j]) for j in order[i]])
    assert errors == [None] * 4
    for i, rows in enumerate(decoded):
        assert rows == [single.decode(want[j]) for j in order[i]]
