// The generate peers' script and its runner (see bench_generate_peers.h).
#include "bench_generate_peers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "bench/python_side.h"

namespace kiln::cli {
namespace {

// Greedy decoding by hand in both peers (argmax of the last logits, fed back
// one token at a time), so no sampler or generation-loop overhead is timed that
// kiln's side does not have either.
constexpr const char* kScript = R"PY(
import json, os, sys, time

cfg = json.load(sys.stdin)
kind, path = cfg["kind"], cfg["path"]
prompt = [int(t) for t in cfg["prompt_ids"]]
N, R, threads = int(cfg["tokens"]), int(cfg["repeat"]), int(cfg["threads"])

def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0

def med(v):
    v = sorted(v)
    return v[len(v) // 2]

rss0 = status_kb("VmRSS")
t_load = time.perf_counter()
prefill, per_tok, gen_ids = [], [], []

if kind == "llama_cpp":
    import numpy as np
    import llama_cpp
    import llama_cpp.llama_cpp as lc
    from llama_cpp import Llama
    if cfg.get("no_extra_bufts", True):
        # ggml's AMX buffer type faults (SIGILL, tilezero) in VMs that do not
        # grant AMX state; extra buffer types are off so plain CPU kernels run.
        _defaults = lc.llama_model_default_params
        def _params():
            p = _defaults()
            p.use_extra_bufts = False
            return p
        lc.llama_model_default_params = _params
    n_ctx = (len(prompt) + N + 16 + 255) // 256 * 256
    llm = Llama(model_path=path, n_ctx=n_ctx, n_batch=max(len(prompt), 32), n_threads=threads,
                n_threads_batch=threads, logits_all=False, verbose=False)
    load_s = time.perf_counter() - t_load
    rss_loaded, hwm_load = status_kb("VmRSS"), status_kb("VmHWM")
    V = llm.n_vocab()
    def last_argmax():
        return int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(V,))))
    for r in range(R + 1):  # the first run (a few tokens) warms up
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        t1 = time.perf_counter()
        tok, ids, steps = last_argmax(), [], []
        for i in range(N if r > 0 else min(N, 4)):
            ids.append(tok)
            s0 = time.perf_counter()
            llm.eval([tok])
            steps.append(time.perf_counter() - s0)
            tok = last_argmax()
        if r > 0:
            prefill.append(t1 - t0)
            per_tok.append(sum(steps) / N)
            gen_ids = ids
    version = llama_cpp.__version__ + (" (no extra buffer types)" if cfg.get("no_extra_bufts", True) else "")
elif kind == "transformers":
    import torch, transformers
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(threads)
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[cfg["dtype"]]
    if path.endswith(".gguf"):
        d, f = os.path.split(path)
        model = AutoModelForCausalLM.from_pretrained(d or ".", gguf_file=f, dtype=dt)
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dt)
    model.eval()
    load_s = time.perf_counter() - t_load
    rss_loaded, hwm_load = status_kb("VmRSS"), status_kb("VmHWM")
    with torch.inference_mode():
        for r in range(R + 1):
            x = torch.tensor([prompt])
            t0 = time.perf_counter()
            out = model(x, use_cache=True)
            t1 = time.perf_counter()
            past = out.past_key_values
            tok, ids, steps = int(out.logits[0, -1].argmax()), [], []
            for i in range(N if r > 0 else min(N, 2)):
                ids.append(tok)
                s0 = time.perf_counter()
                out = model(torch.tensor([[tok]]), past_key_values=past, use_cache=True)
                steps.append(time.perf_counter() - s0)
                past = out.past_key_values
                tok = int(out.logits[0, -1].argmax())
            if r > 0:
                prefill.append(t1 - t0)
                per_tok.append(sum(steps) / N)
                gen_ids = ids
    version = "transformers %s, torch %s" % (transformers.__version__, torch.__version__)
else:
    sys.exit("unknown peer kind " + kind)

print(json.dumps({
    "peer": kind, "version": version, "threads": threads, "dtype": cfg.get("dtype"),
    "load_s": load_s,
    "prefill_s": med(prefill), "prefill_tok_s": len(prompt) / med(prefill),
    "decode_s_per_token": {"median": med(per_tok), "min": min(per_tok), "max": max(per_tok)},
    "decode_tok_s": 1.0 / med(per_tok),
    "memory": {"rss_before_load": rss0, "rss_loaded": rss_loaded, "peak_load": hwm_load,
               "rss_end": status_kb("VmRSS"), "peak": status_kb("VmHWM")},
    "greedy_ids": gen_ids[:8], "repeat": R, "decode_tokens": N,
}))
)PY";

}  // namespace

GeneratePeer run_generate_peer(const std::string& python, const nlohmann::json& config) {
  if (python.empty()) return GeneratePeer{false, "no python given", {}};
  return bench::run_python_script(python, kScript, config, "peer");
}

}  // namespace kiln::cli
