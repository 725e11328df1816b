"""Training data for kiln.finetune: plain text chunked into token windows, or chat
JSONL ({"messages": [...]} per line, rendered with the model's chat template;
{"text": ...} lines are taken as plain text), turned into padded batches of
(input ids, next-token labels) with padding labelled IGNORE."""

import json
import os
import random

from . import _C

IGNORE = -100


def _read_files(path):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith((".txt", ".jsonl")))
        if not names:
            raise FileNotFoundError(f"[finetune] {path} holds no .txt or .jsonl file")
        return [os.path.join(path, n) for n in names]
    if not os.path.exists(path):
        raise FileNotFoundError(f"[finetune] no such file: '{path}'")
    return [path]


def text_windows(ids, seq_len):
    """Windows of seq_len + 1 tokens (inputs and their shifted labels), each
    starting where the previous one's inputs end; a shorter tail is kept."""
    out = []
    for s in range(0, max(len(ids) - 1, 0), seq_len):
        w = ids[s:s + seq_len + 1]
        if len(w) >= 2:
            out.append(w)
    return out


def load_examples(path, tokenizer, seq_len):
    """Token id lists of at most seq_len + 1 tokens from a text file, a chat JSONL
    file, or a directory of them (read in name order)."""
    examples = []
    for fn in _read_files(path):
        with open(fn, encoding="utf-8") as f:
            if fn.endswith(".jsonl"):
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    rec = json.loads(line)
                    if "messages" in rec:
                        ids = tokenizer.apply_chat_template(rec["messages"], tokenize=True)
                    elif "text" in rec:
                        ids = tokenizer.encode(rec["text"], add_special_tokens=True)
                    else:
                        raise ValueError(f"[finetune] {fn}:{n}: a line needs 'messages' or 'text'")
                    examples.extend(text_windows(list(ids), seq_len))
            else:
                # add_special_tokens: the tokenizer's own post-processor (BOS where the model wants one).
                ids = tokenizer.encode(f.read(), add_special_tokens=True)
                examples.extend(text_windows(list(ids), seq_len))
    if not examples:
        raise ValueError(f"[finetune] {path} gave no training example of 2 or more tokens")
    return examples


def split(examples, eval_fraction, seed):
    """(train, held_out): a seeded shuffle, the last eval_fraction held out (at least
    one example when eval_fraction > 0 and there are two or more)."""
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"[finetune] eval_fraction must be in [0, 1), got {eval_fraction}")
    ex = list(examples)
    random.Random(seed).shuffle(ex)
    n_eval = int(round(len(ex) * eval_fraction))
    if eval_fraction > 0 and n_eval == 0 and len(ex) > 1:
        n_eval = 1
    return (ex[:len(ex) - n_eval], ex[len(ex) - n_eval:]) if n_eval else (ex, [])


def batch_order(n_examples, batch, step, seed):
    """Example indices of the batch-th slice at global micro-step `step`: epochs of
    a seeded permutation, so a resumed run sees the same batches."""
    per_epoch = max(n_examples // batch, 1)
    epoch, k = divmod(step, per_epoch)
    perm = list(range(n_examples))
    random.Random(seed * 1000003 + epoch).shuffle(perm)
    return [perm[(k * batch + i) % n_examples] for i in range(batch)]


def collate(seqs, pad_id):
    """(inputs [B, T] int64, labels [B, T] int64) from token lists of up to T + 1:
    labels are the inputs shifted by one, IGNORE on padding."""
    T = max(len(s) for s in seqs) - 1
    inp, lab = [], []
    for s in seqs:
        n = len(s) - 1
        inp.append(list(s[:-1]) + [pad_id] * (T - n))
        lab.append(list(s[1:]) + [IGNORE] * (T - n))
    return _C.tensor(inp, dtype=_C.int64), _C.tensor(lab, dtype=_C.int64)
