// `kiln bench moe`: one MoE layer (router linear, softmax/top-k, SwiGLU experts,
// weighted sum) per config and token count, and, with --peer-python, the same
// layer in PyTorch two ways: torch._grouped_mm over the token rows grouped by
// expert (int32 offs, as PyTorch MoE code calls it) and a loop of F.linear over
// the experts the tokens chose (the Hugging Face eager layout).
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/python_side.h"
#include "bench_matmul.h"
#include "kiln/allocator.h"
#include "kiln/kiln.h"
#include "kiln/sysinfo.h"

namespace kiln::cli::matbench {
namespace {

// Token copies each case cycles through: every call routes fresh tokens, so
// the experts read move over all E (kiln and the peer alike).
constexpr int kTokenCopies = 16;
// Seconds of timed calls a slow peer case gets (fewer repeats, no warmup).
constexpr double kPeerBudgetS = 20;

// The peer: {"threads", "repeat", "warmup", "flush_bytes", "copies", "cases":
// [{"E", "top_k", "H", "I", "kind", "tokens": [{"T", "name"}]}]} on stdin;
// prints {"torch_version", "results": [{"name", "peers": {peer: {median_s,
// min_s, max_s}}, "missing": {peer: why}, ...}]}. A peer that raises is
// recorded as missing with the error text, never fatal.
constexpr const char* kMoePeer = R"PY(
import gc, json, sys, time
import torch
import torch.nn.functional as F

req = json.load(sys.stdin)
torch.set_num_threads(int(req["threads"]))
torch.manual_seed(0)
REPEAT, WARMUP, COPIES = int(req["repeat"]), int(req["warmup"]), int(req["copies"])
BUDGET_S = float(req["budget_s"])
flush = torch.ones(max(1, int(req["flush_bytes"]) // 4))
F8 = torch.float8_e4m3fn
F8_MAX = torch.finfo(F8).max

def why(e):
    s = str(e).strip().splitlines()
    return (type(e).__name__ + (": " + s[0] if s else ""))[:300]

def timed(fn, first_s):
    # first_s: the untimed check call. A slow peer (seconds per call) gets fewer
    # calls, about BUDGET_S in all but at least 1, and no further warmup.
    repeat, warmup = REPEAT, WARMUP
    if first_s * (REPEAT + WARMUP) > BUDGET_S:
        repeat, warmup = max(1, min(REPEAT, int(BUDGET_S / max(first_s, 1e-9)))), 0
    call = 1
    for _ in range(warmup):
        fn(call % COPIES)
        call += 1
    ts = []
    for _ in range(repeat):
        flush.sum()  # caches cold before every timed call, as kiln's roof pass leaves them
        if warmup > 0 and COPIES >= 2:
            # one untimed call on the next copy, as kiln's harness makes: the
            # timed call follows the kernel's own work, not the flush
            fn(call % COPIES)
            call += 1
        t0 = time.perf_counter()
        fn(call % COPIES)
        ts.append(time.perf_counter() - t0)
        call += 1
    ts.sort()
    return {"median_s": ts[len(ts) // 2], "min_s": ts[0], "max_s": ts[-1], "repeat": repeat}

def route(x, router, k):
    # router linear -> softmax in float32 -> top-k -> renormalize (norm_topk_prob)
    probs = torch.softmax(F.linear(x, router), dim=-1, dtype=torch.float32)
    w, ids = torch.topk(probs, k, dim=-1)
    return w / w.sum(-1, keepdim=True), ids

def group(ids, E):
    # flat slots t*k+j grouped by expert (stable), counts, int32 cumulative ends
    flat = ids.reshape(-1)
    perm = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=E)
    return perm, counts, torch.cumsum(counts, 0, dtype=torch.int32)

def quant_rows(x):
    # per-row e4m3 activations for _scaled_mm: (x_fp8, scale [rows, 1] float32)
    s = (x.abs().amax(-1, keepdim=True).float() / F8_MAX).clamp(min=1e-12)
    return (x.float() / s).to(F8), s

def moe_grouped(x, W):
    k, I = W["k"], W["I"]
    w, ids = route(x, W["router"], k)
    perm, counts, offs = group(ids, W["E"])
    tok = perm // k
    xs = x[tok]
    if W["kind"] == "bf16":
        h = torch._grouped_mm(xs, W["w13"].transpose(-2, -1), offs=offs)
    else:
        xq, sx = quant_rows(xs)
        h = torch._scaled_grouped_mm(xq, W["w13"].transpose(-2, -1), sx.reshape(-1), W["s13"], offs=offs,
                                     out_dtype=torch.bfloat16)
    a = F.silu(h[:, :I]) * h[:, I:]
    if W["kind"] == "bf16":
        y = torch._grouped_mm(a, W["w2"].transpose(-2, -1), offs=offs)
    else:
        aq, sa = quant_rows(a)
        y = torch._scaled_grouped_mm(aq, W["w2"].transpose(-2, -1), sa.reshape(-1), W["s2"], offs=offs,
                                     out_dtype=torch.bfloat16)
    y = y * w.reshape(-1)[perm].unsqueeze(-1).to(y.dtype)
    return torch.zeros_like(x).index_add_(0, tok, y)

def expert_linear(x, W, e, which):
    if W["kind"] == "bf16":
        return F.linear(x, W[which][e])
    xq, sx = quant_rows(x)
    return torch._scaled_mm(xq, W[which][e].t(), sx, W["s" + which[1:]][e].view(1, -1),
                            out_dtype=torch.bfloat16)

def moe_loop(x, W):
    k, I = W["k"], W["I"]
    w, ids = route(x, W["router"], k)
    perm, counts, offs = group(ids, W["E"])
    wf = w.reshape(-1)
    out = torch.zeros_like(x)
    start = 0
    for e, n in enumerate(counts.tolist()):
        if n == 0:
            continue
        slots = perm[start:start + n]
        start += n
        tok = slots // k
        h = expert_linear(x[tok], W, e, "w13")
        a = F.silu(h[:, :I]) * h[:, I:]
        y = expert_linear(a, W, e, "w2") * wf[slots].unsqueeze(-1).to(x.dtype)
        out.index_add_(0, tok, y)
    return out

def make_weights(c):
    E, H, I, kind = c["E"], c["H"], c["I"], c["kind"]
    W = {"E": E, "k": c["top_k"], "I": I, "kind": kind,
         "router": torch.randn(E, H, dtype=torch.bfloat16)}
    for name, shape in (("w13", (2 * I, H)), ("w2", (H, I))):
        # one expert at a time: no float32 copy of all the experts
        ws, ss = [], []
        for e in range(E):
            w = torch.randn(shape, dtype=torch.bfloat16) * 0.05
            if kind == "fp8":
                s = w.abs().amax(-1, keepdim=True).float().clamp(min=1e-12) / F8_MAX
                ws.append((w.float() / s).to(F8))
                ss.append(s.reshape(-1))
            else:
                ws.append(w)
        W[name] = torch.stack(ws)
        if ss:
            W["s" + name[1:]] = torch.stack(ss)
        del ws, ss
    return W

out = {"torch_version": torch.__version__, "threads": torch.get_num_threads(), "results": []}
with torch.inference_mode():
    for c in req["cases"]:
        W = make_weights(c)
        loop_key = "torch_linear_loop" if c["kind"] == "bf16" else "torch_scaled_mm_loop"
        peers = {"torch_grouped_mm": moe_grouped, loop_key: moe_loop}
        for tc in c["tokens"]:
            xs = [torch.randn(tc["T"], c["H"], dtype=torch.bfloat16) for _ in range(COPIES)]
            r = {"name": tc["name"], "peers": {}, "missing": {}}
            used = [int(torch.unique(route(x, W["router"], W["k"])[1]).numel()) for x in xs]
            r["experts_read_mean"] = sum(used) / len(used)
            ys = {}
            for key, fn in peers.items():
                try:
                    t0 = time.perf_counter()
                    ys[key] = fn(xs[0], W).float()
                    r["peers"][key] = timed(lambda i, fn=fn: fn(xs[i], W), time.perf_counter() - t0)
                except Exception as e:
                    r["missing"][key] = why(e)
            if len(ys) == 2:
                a, b = ys.values()
                r["peer_max_rel_diff"] = float((a - b).abs().max() / b.abs().max().clamp(min=1e-30))
            out["results"].append(r)
            xs = ys = None
        W = None
        gc.collect()
print(json.dumps(out))
)PY";

// Runs the peer over the cases and merges its times into the results.
void run_moe_peer(Ctx& c, const json& cases) {
  const json req = {{"threads", kiln::num_threads()},
                    {"repeat", c.opt.repeat},
                    {"warmup", c.opt.warmup},
                    {"copies", kTokenCopies},
                    {"budget_s", kPeerBudgetS},
                    {"flush_bytes", c.opt.quick ? double(8 << 20) : double(sys::default_roof_bytes())},
                    {"cases", cases}};
  json info = {
      {"executable", c.opt.peer_python},
      {"peers",
       {{"torch_grouped_mm",
         "bf16: torch._grouped_mm(x[perm // k], w.transpose(-2, -1), offs=int32 cumsum of the "
         "per-expert counts) for gate_up and down; fp8: torch._scaled_grouped_mm with per-row scales"},
        {"torch_linear_loop", "bf16: F.linear per expert the tokens chose, index_add_ back"},
        {"torch_scaled_mm_loop",
         "fp8: torch._scaled_mm per chosen expert, e4m3 weights with row scales, activations "
         "quantized per row in the call"}}},
      {"policy",
       "same as kiln: 16 token copies cycled (fresh routing every call, so the reads spread over "
       "all E experts of one weight set), warmup and repeat as kiln (a peer case slower than "
       "budget_s seconds in all gets fewer repeats, at least 1, see peer_repeat), a read of flush_bytes "
       "(kiln's roof buffer, >= 4x the LLC) before every timed call; the router, softmax/top-k, "
       "grouping and weighted sum are inside the timed call. Tokens are bf16 in torch (its "
       "kernels need the weights' dtype) and float32 in kiln; routing is random in both"},
      {"flush_bytes", req["flush_bytes"]},
      {"budget_s", kPeerBudgetS}};
  const bench::PythonRun run = bench::run_python_script(c.opt.peer_python, kMoePeer, req, "torch MoE peer");
  if (!run.ok) {
    info["error"] = run.why;
    c.summary["peer"] = info;
    return;
  }
  info["torch_version"] = run.doc.value("torch_version", "");
  info["threads"] = run.doc.value("threads", 0);
  json missing = json::array();
  std::map<std::string, std::map<std::string, std::vector<double>>> speedups;  // peer -> kind -> x
  for (const json& pr : run.doc["results"]) {
    for (json& r : c.results) {
      if (r["name"] != pr["name"]) continue;
      const double mine = r["median_s"].get<double>();
      for (auto& [key, t] : pr["peers"].items()) {
        const double pm = t["median_s"].get<double>();
        r["peer_median_s"][key] = pm;
        r["peer_min_s"][key] = t["min_s"];
        r["peer_max_s"][key] = t["max_s"];
        r["peer_repeat"][key] = t["repeat"];
        r["speedup_vs_" + key] = pm / mine;
        speedups[key][r.value("kind", "")].push_back(pm / mine);
      }
      for (auto& [key, w] : pr["missing"].items()) {
        r["peer_missing"][key] = w;
        missing.push_back({{"name", pr["name"]}, {"peer", key}, {"why", w}});
      }
      if (pr.contains("experts_read_mean")) r["peer_experts_read_mean"] = pr["experts_read_mean"];
      if (pr.contains("peer_max_rel_diff")) r["peer_max_rel_diff"] = pr["peer_max_rel_diff"];
    }
  }
  if (!missing.empty()) info["missing"] = missing;
  c.summary["peer"] = info;
  for (auto& [key, by_kind] : speedups)
    for (auto& [kind, v] : by_kind) c.summary["geomean_speedup_vs_" + key][kind] = geomean(v);
}

}  // namespace

// One MoE layer per config: 1 token (decode, roof fraction over the bytes
// the chosen experts and the router hold) and 16/64/512 tokens.
void moe_cases(Ctx& c) {
  const json doc = read_json(c.opt.cases);
  std::vector<json> cfgs(doc["configs"].begin(), doc["configs"].end());
  if (c.opt.quick) cfgs = {json{{"model", "quick"}, {"E", 8}, {"top_k", 2}, {"H", 64}, {"I", 32}}};
  json peer_cases = json::array();
  for (const json& cf : cfgs) {
    const int64_t E = cf["E"], k = cf["top_k"], H = cf["H"], I = cf["I"];
    for (const char* kn : {"bf16", "fp8"}) {
      const WeightKind wk = weight_kind(kn);
      manual_seed(uint64_t(E + H));
      const Tensor router = randn({E, H}).to(DType::BFloat16);
      Tensor w1f = mul(randn({E, 2 * I, H}), Scalar(0.05)), w2f = mul(randn({E, H, I}), Scalar(0.05));
      Tensor w1, w2, s1, s2;
      if (is_fp8(wk.dtype)) {
        std::tie(w1, s1) = quantize_fp8(w1f, QuantGranularity::Row);
        std::tie(w2, s2) = quantize_fp8(w2f, QuantGranularity::Row);
        s1 = s1.view({E, 2 * I});
        s2 = s2.view({E, H});
      } else {
        w1 = w1f.to(wk.dtype);
        w2 = w2f.to(wk.dtype);
      }
      w1f = Tensor();
      w2f = Tensor();
      // Scanned once, as a model's experts are at load (kiln/quantize.h).
      const Fp8Codes codes =
          fp8_has_nan_code(w1) || fp8_has_nan_code(w2) ? Fp8Codes::Unchecked : Fp8Codes::NoNan;
      const bool e4m3 = wk.dtype == DType::Float8_e4m3fn;
      const Fp8Subnormals subs1 = e4m3 ? fp8_find_subnormals(w1) : Fp8Subnormals{},
                          subs2 = e4m3 ? fp8_find_subnormals(w2) : Fp8Subnormals{};
      kiln::empty_cache();
      const double per_expert =
          double(3 * I * H) * double(itemsize(wk.dtype)) + (s1.defined() ? 4.0 * (2 * I + H) : 0);
      const double all_experts = per_expert * double(E);
      json peer_case = {{"E", E}, {"top_k", k}, {"H", H}, {"I", I}, {"kind", kn}, {"tokens", json::array()}};
      for (int64_t T : c.opt.quick ? std::vector<int64_t>{1, 16} : std::vector<int64_t>{1, 16, 64, 512}) {
        std::vector<Tensor> xs;
        for (int i = 0; i < kTokenCopies; ++i) xs.push_back(randn({T, H}));
        // Bytes actually read: distinct experts chosen (mean over the copies) + router.
        double experts_read = 0;
        for (const Tensor& x : xs) {
          auto [wts, ids] = moe_route(linear(x, router), k, true);
          std::vector<bool> used(size_t(E), false);
          const int32_t* p = ids.data<int32_t>();
          for (int64_t i = 0; i < ids.numel(); ++i) used[size_t(p[i])] = true;
          experts_read += double(std::count(used.begin(), used.end(), true));
        }
        experts_read /= kTokenCopies;
        const double bytes = experts_read * per_expert + 2.0 * E * H;
        bench::Rotation rot;
        rot.copies = kTokenCopies;
        rot.working_set_bytes = all_experts;
        rot.llc_bytes = sys::system_info().llc_bytes();
        const std::string name = "moe " + std::string(kn) + " " + cf.value("model", "") +
                                 " E=" + std::to_string(E) + " k=" + std::to_string(k) +
                                 " T=" + std::to_string(T);
        bench::Result r = c.runner.memory_case(name, bytes, rot, [&](int i) {
          Tensor y = moe_ffn(xs[size_t(i % kTokenCopies)], router, w1, w2, k, true, s1, s2, codes,
                             e4m3 ? &subs1 : nullptr, e4m3 ? &subs2 : nullptr);
        });
        r.extra["kind"] = kn;
        r.extra["tokens"] = T;
        r.extra["experts_read_mean"] = experts_read;
        r.extra["tokens_per_s"] = double(T) / r.median_s;
        if (T == 1) c.summary["moe_decode_roof_fraction"][name] = r.roof_fraction;
        record(c, r);
        peer_case["tokens"].push_back({{"T", T}, {"name", name}});
      }
      peer_cases.push_back(peer_case);
    }
  }
  if (!c.opt.peer_python.empty()) run_moe_peer(c, peer_cases);
}

}  // namespace kiln::cli::matbench
