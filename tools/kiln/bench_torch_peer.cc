// The PyTorch peer script and its runner (see bench_torch_peer.h).
#include "bench_torch_peer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace kiln::cli {
namespace {

constexpr const char* kScript = R"PY(
import json, sys, time
import torch
import torch.nn.functional as F

cfg = json.load(sys.stdin)
torch.set_num_threads(int(cfg["threads"]))
torch.manual_seed(0)
flush = torch.ones(int(cfg["flush_mb"]) * (1 << 20) // 4)
DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

def timed(fn, warm=False, prime=False):
    # fn(i): call i (i % copies picks the input copy, as kiln's rotation).
    # warm: one untimed call on the same input right before the timed one.
    # prime: one untimed call on the next copy right before the timed one (as
    # kiln's Runner::memory_case with 2+ copies).
    call = 0
    for _ in range(int(cfg["warmup"])):
        fn(call)
        call += 1
    ts = []
    for _ in range(int(cfg["repeat"])):
        flush.sum()
        if warm:
            fn(call)
        elif prime:
            fn(call)
            call += 1
        t0 = time.perf_counter()
        fn(call)
        ts.append(time.perf_counter() - t0)
        call += 1
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]

def top_p_sample(x, p):
    probs = torch.softmax(x, -1)
    sp, si = torch.sort(probs, descending=True)
    c = torch.cumsum(sp, -1)
    keep = (c - sp) < p
    sp = sp * keep
    return si[torch.multinomial(sp, 1)]

# Inputs of kind "op" (keep in step with make_input in bench_ops_hot.cc).
FILL = {
    "randn": lambda s: torch.randn(s),
    "near1": lambda s: 1 + torch.randn(s) / 100,
    "bool": lambda s: torch.randn(s) > 0,
    "sorted": lambda s: torch.randn(s).sort(-1).values,
    "nan": lambda s: torch.where(torch.rand(s) < 0.125, float("nan"), torch.randn(s)),
    "uniform": lambda s: torch.rand(s),
    "grid": lambda s: torch.rand(s) * 2.2 - 1.1,
}

out = []
for c in cfg["cases"]:
    k = c["kind"]
    if k == "softmax":
        x = torch.randn(c["shape"]) * 3
        xs = [x] + [x.clone() for _ in range(int(c.get("copies", 1)) - 1)]
        f = torch.log_softmax if c["log"] else torch.softmax
        fn = lambda i, xs=xs, f=f, d=c["dim"]: f(xs[i % len(xs)], d)
    elif k == "attention":
        dt = DT[c["dtype"]]
        q = torch.randn(1, c["hq"], 1, c["d"]).to(dt)
        kk = torch.randn(1, c["hkv"], c["L"], c["d"]).to(dt)
        v = torch.randn(1, c["hkv"], c["L"], c["d"]).to(dt)
        fn = lambda i, q=q, kk=kk, v=v: F.scaled_dot_product_attention(q, kk, v, enable_gqa=True)
    elif k == "sample":
        x = torch.randn(c["V"]) * 3
        if c["mode"] == "argmax":
            fn = lambda i, x=x: torch.argmax(x)
        else:
            fn = lambda i, x=x, p=c["top_p"]: top_p_sample(x, p)
    elif k == "op":
        # expr: a Python expression over x, the list of one copy's inputs.
        x = [FILL[a["fill"]](a["shape"]) for a in c["inputs"]]
        xs = [x] + [[t.clone() for t in x] for _ in range(int(c.get("copies", 1)) - 1)]
        f = eval("lambda x: " + c["expr"], {"torch": torch})
        fn = lambda i, xs=xs, f=f: f(xs[i % len(xs)])
    else:
        continue
    prime = k == "op" and int(c.get("copies", 1)) >= 2
    m, lo, hi = timed(fn, bool(c.get("warm", False)), prime)
    out.append({"name": c["name"], "median_s": m, "min_s": lo, "max_s": hi})
    x = xs = fn = None
print(json.dumps({"torch_version": torch.__version__, "threads": torch.get_num_threads(), "results": out}))
)PY";

}  // namespace

TorchPeer run_torch_peer(const std::string& python, const nlohmann::json& config) {
  if (python.empty()) return TorchPeer{false, "no --peer-python given", {}};
  return bench::run_python_script(python, kScript, config, "torch peer");
}

void merge_torch_peer(nlohmann::json& results, const TorchPeer& peer) {
  if (!peer.ok) return;
  for (const auto& pr : peer.doc["results"]) {
    for (auto& r : results) {
      if (r["name"] == pr["name"]) {
        const double pm = pr["median_s"].get<double>();
        r["peer_median_s"] = {{"torch", pm}};
        r["speedup_vs_torch"] = pm / r["median_s"].get<double>();
      }
    }
  }
}

}  // namespace kiln::cli
