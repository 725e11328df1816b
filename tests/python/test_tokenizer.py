"""kiln.Tokenizer against the Qwen3 golden ids and against Hugging Face `tokenizers`
(the canonical implementation) over generated text, for the real Qwen3 tokenizer and
for small GPT-2-, Llama-3- and SmolLM2-style tokenizers trained here."""

import json
import pathlib
import random
import shutil
import subprocess
import sys
import tarfile
import unicodedata
from pathlib import Path

import pytest

import kiln

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "tokenizers" / "qwen3"

try:
    import tokenizers as hf
except ImportError:  # the comparisons skip; golden ids still run
    hf = None

needs_hf = pytest.mark.skipif(hf is None, reason="Hugging Face tokenizers is not installed")


@pytest.fixture(scope="session")
def qwen3_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("qwen3")
    with tarfile.open(DATA / "tokenizer.json.tar.xz") as tar:
        tar.extract("tokenizer.json", d, filter="data")
    shutil.copy(DATA / "tokenizer_config.json", d / "tokenizer_config.json")
    return d


@pytest.fixture(scope="session")
def qwen3(qwen3_dir):
    return kiln.Tokenizer.from_file(str(qwen3_dir / "tokenizer.json"))


PIECES = ["Hello", " world", "The", " quick", "日本語", "のテキスト", "中文", "한국어", "Привет", "мир", "مرحبا",
          "עברית", "हिन्दी", "ไทย", "Ελληνικά", "Ærø", "naïve", "e\u0301", "ǅ", "ß", "İ", "ﬁ",
          " ", "  ", "   ", "      ", "\t", "\n", "\r\n", "\r", "\n\n\n", " \n ", "\u00a0", "\u2003", "\u3000",
          "\u0085", "\u180e", "\u200b", "\u2028", "\x0b", "\x0c",
          "0", "12", "345", "6789", "2024-11-30", "3.14", "1,000", "٣٤", "²", "½", "Ⅻ",
          "😀", "👍🏽", "👨‍👩‍👧", "🇯🇵", "❤️", "🧪",
          "'s", "'T", "'RE", "’s", "'ll", "don't", "I'M",
          "$", "!!", "...", "—", "«»", "<", ">", "|", "_", "x_y", "#", "@user", "http://x.y/z?q=1", "{}", "();",
          "\x00", "\x7f", "\u00ad", "\ufeff", "\ue000", "𝔘𝔫𝔦",
          # NFC at work: jamo that compose, a composition exclusion, singletons, reordered marks
          "\u1100\u1161\u11a8", "\u1161", "\u0958", "\u212b", "\u2126", "\u0bc6\u0bbe", "a\u0323\u0302",
          "\u0301", "A\u030a", "\u0915\u093c", "\u3046\u3099", "\uf900"]
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"]


def corpus(n, seed, specials=()):
    rng = random.Random(seed)
    pool = PIECES + list(specials)
    out = ["", " ", "a", "\n\n", " " * 40, "9" * 30, "😀" * 5]
    for _ in range(n):
        out.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 14))))
    return out


# ---- Qwen3 ----------------------------------------------------------------------

def test_qwen3_golden_ids(qwen3):
    cases = json.loads((DATA / "golden.json").read_text())
    assert len(cases) > 50
    for c in cases:
        assert qwen3.encode(c["text"]) == c["ids"], c["text"]


def test_qwen3_round_trip_is_nfc(qwen3):
    for s in corpus(400, 1, SPECIALS):
        assert qwen3.decode(qwen3.encode(s)) == unicodedata.normalize("NFC", s)


def test_qwen3_vocab_and_config(qwen3):
    assert qwen3.vocab_size == 151669
    assert qwen3.token_to_id("<|im_end|>") == 151645
    assert qwen3.id_to_token(9707) == "Hello"
    assert qwen3.token_to_id("nope nope") is None and qwen3.id_to_token(10**7) is None
    assert qwen3.eos_token_id == 151645 and qwen3.eos_token == "<|im_end|>"
    assert qwen3.pad_token_id == 151643 and qwen3.bos_token_id is None
    assert "<|im_start|>" in qwen3.chat_template
    assert qwen3.decode(qwen3.encode("<|im_start|>hi<|im_end|>"), skip_special_tokens=True) == "hi"
    assert qwen3.encode_batch(["a", "b c"]) == [qwen3.encode("a"), qwen3.encode("b c")]


@needs_hf
def test_qwen3_matches_hf(qwen3, qwen3_dir):
    ref = hf.Tokenizer.from_file(str(qwen3_dir / "tokenizer.json"))
    texts = corpus(3000, 2, SPECIALS)
    for s in texts:
        ids = qwen3.encode(s)
        assert ids == ref.encode(s, add_special_tokens=False).ids, repr(s)
        assert qwen3.decode(ids) == ref.decode(ids, skip_special_tokens=False)
        assert qwen3.decode(ids, skip_special_tokens=True) == ref.decode(ids, skip_special_tokens=True)
    rng = random.Random(3)
    for _ in range(300):  # arbitrary id sequences: partial UTF-8 and all
        ids = [rng.randrange(151669) for _ in range(rng.randint(1, 8))]
        assert qwen3.decode(ids) == ref.decode(ids, skip_special_tokens=False)


def test_streaming_matches_decode(qwen3):
    for s in corpus(200, 4, SPECIALS):
        ids = qwen3.encode(s)
        dec = qwen3.stream_decoder()
        assert "".join(dec.push(i) for i in ids) + dec.flush() == qwen3.decode(ids)


def test_bad_input(qwen3, tmp_path):
    with pytest.raises(FileNotFoundError):
        kiln.Tokenizer.from_file(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError):
        kiln.Tokenizer.from_str("{not json")
    with pytest.raises(ValueError):
        kiln.Tokenizer.from_str('{"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}}')
    with pytest.raises(NotImplementedError):
        kiln.Tokenizer.from_str('{"model": {"type": "WordPiece", "vocab": {}}}')
    assert qwen3.decode([-1, 10**9]) == ""


# ---- small tokenizers trained with HF, in each family's configuration ------------------

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")


def train(style, merges_as_strings):
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers, Regex
    tok = hf.Tokenizer(models.BPE(ignore_merges=(style == "llama3")))
    if style == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif style == "gpt2_prefix":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    elif style == "smollm2":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    elif style == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(2000, 5), trainer=trainer)
    if style == "llama3":
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    j = json.loads(tok.to_str())
    if merges_as_strings:  # the older "a b" form GPT-2 and SmolLM2 files use
        j["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    text = json.dumps(j)
    return hf.Tokenizer.from_str(text), kiln.Tokenizer.from_str(text)


@needs_hf
@pytest.mark.parametrize("style,merges_as_strings", [("gpt2", True), ("gpt2", False), ("gpt2_prefix", True),
                                                     ("smollm2", True), ("llama3", False)])
def test_small_tokenizers_match_hf(style, merges_as_strings):
    ref, tok = train(style, merges_as_strings)
    for s in corpus(800, 6, ["<|eot_id|>", "<|begin_of_text|>"]):
        for special in (False, True):
            ids = tok.encode(s, add_special_tokens=special)
            assert ids == ref.encode(s, add_special_tokens=special).ids, (style, repr(s))
        assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False)


@needs_hf
def test_stream_decoder_over_byte_split_emoji():
    ref, tok = train("gpt2", True)
    s = "🧪👨‍👩‍👧 ok 𝔘"
    ids = tok.encode(s)
    assert len(ids) > 6  # the small vocabulary splits these characters into byte tokens
    dec = kiln.StreamDecoder(tok)
    pieces = [dec.push(i) for i in ids]
    assert "" in pieces  # held back while a character was incomplete
    assert "".join(pieces) + dec.flush() == s
    dec = tok.stream_decoder()
    b = "🧪".encode()
    assert b[0] == 0xF0 and dec.push(tok.token_to_id("ð")) == ""  # "ð" is the byte 0xF0
    assert dec.pending_bytes == 1
    assert dec.flush() == "\ufffd"


# ---- GGUF-embedded tokenizer ----------------------------------------------------

def write_gguf_tokenizer(path, tokenizer_json, chat_template):
    """The Qwen3 tokenizer as llama.cpp's converter stores it, written with the gguf package."""
    gguf = pytest.importorskip("gguf")
    tj = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    vocab = dict(tj["model"]["vocab"])
    types = {}
    for t in tj["added_tokens"]:
        vocab[t["content"]] = t["id"]
        types[t["id"]] = gguf.TokenType.CONTROL if t["special"] else gguf.TokenType.USER_DEFINED
    tokens = [""] * (max(vocab.values()) + 1)
    for tok, i in vocab.items():
        tokens[i] = tok
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    w = gguf.GGUFWriter(str(path), "qwen3")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([int(types.get(i, gguf.TokenType.NORMAL)) for i in range(len(tokens))])
    w.add_token_merges(merges)
    w.add_eos_token_id(vocab["<|im_end|>"])
    w.add_pad_token_id(vocab["<|endoftext|>"])
    w.add_bos_token_id(vocab["<|endoftext|>"])
    w.add_add_bos_token(False)
    w.add_chat_template(chat_template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_embedded_tokenizer_equals_tokenizer_json(qwen3, qwen3_dir, tmp_path):
    path = tmp_path / "qwen3-tokenizer.gguf"
    write_gguf_tokenizer(path, qwen3_dir / "tokenizer.json", qwen3.chat_template)
    g = kiln.Tokenizer.from_file(str(path))  # the GGUF magic picks the GGUF reader
    assert g.vocab_size == qwen3.vocab_size
    assert g.eos_token_id == qwen3.token_to_id("<|im_end|>")
    assert g.chat_template == qwen3.chat_template
    golden = json.loads((DATA / "golden.json").read_text(encoding="utf-8"))
    for text in [c["text"] for c in golden] + corpus(300, seed=7, specials=SPECIALS):
        ids = g.encode(text)
        assert ids == qwen3.encode(text), text
        assert g.decode(ids) == qwen3.decode(ids)
    # The installed CLI takes the GGUF file too.
    out = subprocess.run([str(Path(sys.executable).parent / "kiln"), "tokenize", "--tokenizer", str(path),
                          "--ids-only", "Hello, world"], capture_output=True, text=True, check=True)
    assert [int(x) for x in out.stdout.split()] == qwen3.encode("Hello, world")


def test_gguf_without_tokenizer_is_refused(tmp_path):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "bare.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ValueError, match="no tokenizer"):
        kiln.Tokenizer.from_file(str(path))
