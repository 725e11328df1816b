# A model with a tokenizer and a chat template small enough to write per test
# run: the tiny-llama fixture (random weights, vocab 256) with a byte-level BPE
# tokenizer whose 256 tokens are ASCII only (98 single characters: tab, "\n",
# "\r" and the printable ones, then 158 letter pairs), so whatever the random
# model generates is plain ASCII text, and a chat template of plain text.
import json
import shutil
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
TINY = DATA / "models" / "tiny-llama"

CHAT_TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<assistant> {% endif %}")


def byte_to_unicode():
    """GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest for 256 + n."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


def tokenizer_json():
    u = byte_to_unicode()
    singles = [9, 10, 13] + list(range(0x20, 0x7F))  # 98 tokens
    vocab = {u[b]: i for i, b in enumerate(singles)}
    letters = "etaoinshrdluc"
    pairs = [(a, b) for a in letters for b in letters][: 256 - len(singles)]
    merges = []
    for a, b in pairs:
        vocab[a + b] = len(vocab)
        merges.append(f"{a} {b}")
    assert len(vocab) == 256
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def make_tiny_chat_model(dest):
    """Writes the model into the directory `dest` (created) and returns its Path."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(TINY / f, dest / f)
    (dest / "tokenizer.json").write_text(json.dumps(tokenizer_json()))
    (dest / "tokenizer_config.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}))
    return dest
