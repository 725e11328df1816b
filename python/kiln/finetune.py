"""kiln.finetune: LoRA fine-tuning of a language model (python -m kiln.finetune,
kiln-finetune, kiln finetune).

    python -m kiln.finetune default data/finetune/train.txt --lora-rank 8 --steps 200 \\
        --lr 2e-4 --seq-len 128 --out runs/diary

trains LoRA adapters (AdamW over the adapter parameters only) with the next-token
cross-entropy, prints the held-out loss/perplexity before and after, a progress
line on stderr, and writes checkpoints (adapter + optimizer state + step) that
--resume continues from. The final adapter is a PEFT directory in --out.
"""

import argparse
import json
import math
import os
import sys
import time

from . import _C
from . import finetune_data as data
from ._grad_mode import no_grad
from .nn import lora
from .optim import AdamW


def loss_fn(model, inputs, labels):
    """Mean next-token cross-entropy over the labelled positions (a scalar tensor).

    Written as logsumexp(logits) - logits[label] rather than F.cross_entropy, whose
    one-hot target and log_softmax are each as large as the logits ([B*T, V]: 96 MiB
    at 512 tokens of a 49152-token vocabulary): this form keeps about half the
    memory at the step's peak, with the same value and gradient."""
    logits = model(inputs)  # [B, T, V]
    V = logits.shape[-1]
    logits = logits.reshape(-1, V).float()  # [N, V]
    lab = labels.reshape(-1)  # [N]
    kept = lab != data.IGNORE  # [N]
    target = _C.where(kept, lab, 0).unsqueeze(-1)  # [N, 1]
    nll = logits.logsumexp(-1) - logits.gather(-1, target).squeeze(-1)  # [N]
    keptf = kept.to(nll.dtype)
    return (nll * keptf).sum() / keptf.sum()


def evaluate(model, examples, batch, pad_id):
    """(mean token loss, perplexity) of examples, without gradients."""
    if not examples:
        return float("nan"), float("nan")
    was = model.training
    model.eval()
    total, count = 0.0, 0
    with no_grad():
        for i in range(0, len(examples), batch):
            inp, lab = data.collate(examples[i:i + batch], pad_id)
            n = int((lab != data.IGNORE).sum().item())
            total += loss_fn(model, inp, lab).item() * n
            count += n
    model.train(was)
    mean = total / max(count, 1)
    return mean, math.exp(min(mean, 700.0))


def _save_optimizer(opt, path):
    sd = opt.state_dict()
    tensors = {f"state.{i}.{k}": v for i, s in sd["state"].items() for k, v in s.items()}
    _C.io_save_file(tensors, path + ".safetensors")
    with open(path + ".json", "w") as f:
        json.dump({"param_groups": sd["param_groups"]}, f)


def _load_optimizer(opt, path):
    with open(path + ".json") as f:
        groups = json.load(f)["param_groups"]
    for g in groups:
        g["betas"] = tuple(g["betas"])
    state = {}
    for key, t in _C.io_load_file(path + ".safetensors").items():
        _, i, k = key.split(".", 2)
        state.setdefault(int(i), {})[k] = t
    opt.load_state_dict({"state": state, "param_groups": groups})


def save_checkpoint(model, opt, step, out_dir, extra=None):
    """out_dir/checkpoint-<step>/: the adapter (PEFT files), optimizer.{safetensors,json}
    and trainer_state.json {step, ...}."""
    d = os.path.join(out_dir, f"checkpoint-{step}")
    lora.save_pretrained(model, d)
    _save_optimizer(opt, os.path.join(d, "optimizer"))
    with open(os.path.join(d, "trainer_state.json"), "w") as f:
        json.dump(dict(extra or {}, step=step), f, indent=2)
    return d


def latest_checkpoint(out_dir):
    if not out_dir or not os.path.isdir(out_dir):
        return None
    steps = [int(n.split("-", 1)[1]) for n in os.listdir(out_dir)
             if n.startswith("checkpoint-") and n.split("-", 1)[1].isdigit()
             and os.path.exists(os.path.join(out_dir, n, "trainer_state.json"))]
    return os.path.join(out_dir, f"checkpoint-{max(steps)}") if steps else None


def _fmt_time(s):
    s = int(max(s, 0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def train(model, data_or_examples, steps=100, lr=2e-4, batch=4, seq_len=128, grad_accum=1, eval_fraction=0.1,
          seed=0, out_dir=None, resume=False, eval_examples=None, weight_decay=0.0, save_every=0, log_every=1,
          lora_rank=8, lora_alpha=None, lora_target=("q_proj", "v_proj"), lora_dropout=0.0, log=sys.stderr):
    """Trains model's LoRA parameters (LoRA is applied with lora_* when the model has
    none) for `steps` optimizer steps of batch * grad_accum sequences; returns a dict
    with train_losses, the held-out loss/perplexity before and after, and the steps run.

    data_or_examples: a path (text, chat JSONL or a directory of them; tokenized with
    model.tokenizer into seq_len windows), a list of strings, or token-id lists."""
    if not lora.lora_layers(model):
        lora.apply(model, r=lora_rank, alpha=lora_alpha or 2 * lora_rank, target=lora_target,
                   dropout=lora_dropout, seed=seed)
    tok = model.tokenizer
    if isinstance(data_or_examples, (str, os.PathLike)):
        examples = data.load_examples(os.fspath(data_or_examples), tok, seq_len)
    else:
        examples = []
        for x in data_or_examples:
            examples.extend(data.text_windows(tok.encode(x, add_special_tokens=True) if isinstance(x, str) else list(x), seq_len))
    if eval_examples is None:
        train_ex, eval_ex = data.split(examples, eval_fraction, seed)
    else:
        train_ex, eval_ex = examples, eval_examples
    if not train_ex:
        raise ValueError("[finetune] no training example left after the held-out split")
    pad = tok.pad_token_id if tok.pad_token_id is not None and tok.pad_token_id >= 0 else tok.eos_token_id

    params = lora.parameters(model)
    opt = AdamW(params, lr=lr, weight_decay=weight_decay)
    start = 0
    ckpt = latest_checkpoint(out_dir) if resume else None
    if ckpt:
        lora.load(model, ckpt)
        _load_optimizer(opt, os.path.join(ckpt, "optimizer"))
        with open(os.path.join(ckpt, "trainer_state.json")) as f:
            start = int(json.load(f)["step"])
        print(f"[finetune] resumed from {ckpt} at step {start}", file=log)

    eval_before = evaluate(model, eval_ex, batch, pad)
    if eval_ex:
        print(f"[finetune] held-out before: loss {eval_before[0]:.4f} ppl {eval_before[1]:.3f} "
              f"({len(eval_ex)} sequences)", file=log)
    model.train()
    losses = []
    t0 = time.perf_counter()
    tokens = 0
    for step in range(start, steps):
        opt.zero_grad()
        step_loss = 0.0
        for micro in range(grad_accum):
            idx = data.batch_order(len(train_ex), batch, step * grad_accum + micro, seed)
            inp, lab = data.collate([train_ex[i] for i in idx], pad)
            loss = loss_fn(model, inp, lab)
            (loss / grad_accum).backward()
            step_loss += loss.item() / grad_accum
            tokens += int((lab != data.IGNORE).sum().item())
        opt.step()
        losses.append(step_loss)
        done = step + 1
        if log_every and (done % log_every == 0 or done == steps):
            el = time.perf_counter() - t0
            rate = tokens / el if el > 0 else 0.0
            eta = el / (done - start) * (steps - done)
            print(f"step {done}/{steps} loss {step_loss:.4f} tok/s {rate:.0f} eta {_fmt_time(eta)}", file=log,
                  flush=True)
        if out_dir and save_every and done % save_every == 0 and done < steps:
            save_checkpoint(model, opt, done, out_dir, {"seed": seed})
    eval_after = evaluate(model, eval_ex, batch, pad)
    if eval_ex:
        print(f"[finetune] held-out after: loss {eval_after[0]:.4f} ppl {eval_after[1]:.3f}", file=log)
    if out_dir:
        save_checkpoint(model, opt, steps, out_dir, {"seed": seed})
        lora.save_pretrained(model, out_dir)
    return {"train_losses": losses, "eval_before": eval_before, "eval_after": eval_after, "start_step": start,
            "steps": steps, "train_sequences": len(train_ex), "eval_sequences": len(eval_ex)}


def _parser():
    p = argparse.ArgumentParser(
        prog="kiln finetune",
        description="LoRA fine-tuning of a Llama-architecture GGUF model (the default: SmolLM2-135M-Instruct) on "
                    "plain text or chat JSONL ({\"messages\": [...]} per line). Writes a PEFT adapter "
                    "(adapter_config.json + adapter_model.safetensors) and resumable checkpoints to --out.")
    p.add_argument("paths", nargs="+", metavar="[MODEL] DATA",
                   help="MODEL: a .gguf file or \"default\" (the default model, also used when only DATA is "
                        "given); DATA: a .txt file, a .jsonl file, or a directory of them")
    p.add_argument("--eval-data", help="held-out text/JSONL (default: --eval-fraction of DATA)")
    p.add_argument("--eval-fraction", type=float, default=0.1, help="share of DATA held out (default 0.1)")
    p.add_argument("--lora-rank", type=int, default=8, help="LoRA rank r (default 8)")
    p.add_argument("--lora-alpha", type=float, default=None, help="LoRA alpha (default 2 * rank)")
    p.add_argument("--lora-dropout", type=float, default=0.0, help="dropout on the LoRA input (default 0)")
    p.add_argument("--target", default="q_proj,v_proj", help="comma-separated Linear names (default q_proj,v_proj)")
    p.add_argument("--steps", type=int, default=100, help="optimizer steps (default 100)")
    p.add_argument("--lr", type=float, default=2e-4, help="AdamW learning rate (default 2e-4)")
    p.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay (default 0)")
    p.add_argument("--batch", type=int, default=4, help="sequences per micro-batch (default 4)")
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches per step (default 1)")
    p.add_argument("--seq-len", type=int, default=128, help="tokens per sequence (default 128)")
    p.add_argument("--seed", type=int, default=0, help="data order, split and LoRA init (default 0)")
    p.add_argument("--out", required=True, help="output directory (adapter, checkpoints)")
    p.add_argument("--save-every", type=int, default=0, help="checkpoint every N steps (default: only at the end)")
    p.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    p.add_argument("--merge", metavar="FILE", help="also write the merged weights (safetensors) to FILE")
    return p


def main(argv=None):
    p = _parser()
    a = p.parse_args(argv)
    if len(a.paths) > 2:
        p.error("expected [MODEL] DATA")
    a.model, a.data = (a.paths if len(a.paths) == 2 else ["default", a.paths[0]])
    from .llm_train import load_trainable

    _C.manual_seed(a.seed)
    model = load_trainable(None if a.model == "default" else a.model, dtype=_C.float32)
    eval_ex = None
    if a.eval_data:
        eval_ex = data.load_examples(a.eval_data, model.tokenizer, a.seq_len)
    r = train(model, a.data, steps=a.steps, lr=a.lr, batch=a.batch, seq_len=a.seq_len, grad_accum=a.grad_accum,
              eval_fraction=a.eval_fraction, seed=a.seed, out_dir=a.out, resume=a.resume, eval_examples=eval_ex,
              weight_decay=a.weight_decay, save_every=a.save_every, lora_rank=a.lora_rank,
              lora_alpha=a.lora_alpha, lora_target=tuple(t for t in a.target.split(",") if t),
              lora_dropout=a.lora_dropout)
    if a.merge:
        lora.merge(model)
        _C.io_save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, a.merge)
    ls = r["train_losses"]
    summary = {"train_loss_first": ls[0] if ls else None, "train_loss_last": ls[-1] if ls else None,
               "eval_loss_before": r["eval_before"][0], "eval_ppl_before": r["eval_before"][1],
               "eval_loss_after": r["eval_after"][0], "eval_ppl_after": r["eval_after"][1]}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
