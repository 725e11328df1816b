// The torch script of `kiln bench conv` (see bench_conv_peer.h).
#include "bench_conv_peer.h"

namespace kiln::cli {
namespace {

// Case specs (bench_conv.cc): {"op", "input", ...}; "variant" is "fwd" or
// "bwd" (the input and weight gradients through autograd, forward done once),
// "layout" "nchw" or "channels_last".
constexpr const char* kScript = R"PY(
import json, sys, time
import torch
import torch.nn.functional as F

cfg = json.load(sys.stdin)
torch.set_num_threads(int(cfg["threads"]))
torch.manual_seed(0)
flush = torch.ones(int(cfg["flush_mb"]) * (1 << 20) // 4)

def timed(fn):
    call = 0
    for _ in range(int(cfg["warmup"])):
        fn(call)
        call += 1
    ts = []
    for _ in range(int(cfg["repeat"])):
        flush.sum()
        t0 = time.perf_counter()
        fn(call)
        ts.append(time.perf_counter() - t0)
        call += 1
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]

def conv_case(s):
    nd = len(s["input"]) - 2
    conv = [None, F.conv1d, F.conv2d, F.conv3d][nd]
    cin = s["input"][1]
    g = s.get("groups", 1)
    w = torch.randn([s["out_channels"], cin // g] + [s["kernel"]] * nd) * 0.05
    x = torch.randn(s["input"])
    b = torch.randn(s["out_channels"]) if s.get("bias", True) else None
    if s.get("layout") == "channels_last":
        mf = torch.channels_last if nd == 2 else torch.channels_last_3d
        x = x.contiguous(memory_format=mf)
        w = w.contiguous(memory_format=mf)
    kw = dict(stride=s.get("stride", 1), padding=s.get("padding", 0), groups=g)
    if s.get("variant", "fwd") == "fwd":
        return lambda i: conv(x, w, b, **kw)
    x.requires_grad_(True)
    w.requires_grad_(True)
    y = conv(x, w, b, **kw)
    gy = torch.randn_like(y)
    return lambda i: torch.autograd.grad(y, (x, w), gy, retain_graph=True)

def memory_case(s, copies):
    x = torch.randn(s["input"])
    xs = [x] + [x.clone() for _ in range(copies - 1)]
    op = s["op"]
    if op == "group_norm":
        c = s["input"][1]
        w, b = torch.randn(c), torch.randn(c)
        f = lambda t: F.group_norm(t, s["groups"], w, b)
    elif op == "interpolate":
        f = lambda t: F.interpolate(t, scale_factor=s["scale"], mode=s.get("mode", "nearest"))
    elif op == "pad":
        f = lambda t: F.pad(t, s["pad"])
    elif op == "dropout":
        f = lambda t: F.dropout(t, s["p"], training=True)
    else:
        return None
    return lambda i: f(xs[i % len(xs)])

out = []
for c in cfg["cases"]:
    s = c["spec"]
    fn = conv_case(s) if s["op"].startswith("conv") else memory_case(s, int(c.get("copies", 1)))
    if fn is None:
        continue
    m, lo, hi = timed(fn)
    out.append({"name": c["name"], "median_s": m, "min_s": lo, "max_s": hi})
    fn = None
print(json.dumps({"torch_version": torch.__version__, "threads": torch.get_num_threads(), "results": out}))
)PY";

}  // namespace

bench::PythonRun run_conv_torch_peer(const std::string& python, const nlohmann::json& config) {
  if (python.empty()) return bench::PythonRun{false, "pass --peer-python PATH (a Python with torch)", {}};
  return bench::run_python_script(python, kScript, config, "torch peer");
}

}  // namespace kiln::cli
