// `kiln bench linear|scaled_mm|moe`: decode-time linear layers (one token
// against weights rotated over >= 4x the LLC) as GB/s and fraction of the read
// roof measured beside them, prefill (M = 512) against OpenBLAS sgemm, FP8
// scaled_mm, and one MoE layer per config (bench_moe.cc). An optional PyTorch
// peer runs the same cases through a Python interpreter given with --peer-python.
#include "bench_matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bandwidth.h"
#include "bench/compute_roof.h"
#include "bench/harness.h"
#include "bench/options.h"
#include "bench/python_side.h"
#include "cli_io.h"
#include "commands.h"
#include "internal/bench_hooks.h"
#include "kiln/allocator.h"
#include "kiln/kiln.h"
#include "kiln/sysinfo.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli::matbench {

json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("[bench] cannot read case file " + path + " (pass --cases FILE)");
  return json::parse(f);
}

double mem_budget() {
  const int64_t avail = sys::system_info().mem_available_bytes;
  return avail > 0 ? double(avail) / 3 : 4e9;
}

WeightKind weight_kind(const std::string& s) {
  if (s == "f32") return {s, DType::Float32, 0};
  if (s == "bf16") return {s, DType::BFloat16, 0};
  // bf16 activations and output too: the call torch's F.linear makes with
  // bf16 tensors (x in bf16 is one part for the dot kernel, not two).
  if (s == "bf16-bf16x") return {s, DType::BFloat16, 0, DType::BFloat16};
  if (s == "f16") return {s, DType::Float16, 0};
  if (s == "fp8") return {s, DType::Float8_e4m3fn, 2};
  if (s == "fp8-tensor") return {s, DType::Float8_e4m3fn, 1};
  if (s == "fp8-block") return {s, DType::Float8_e4m3fn, 3};
  if (s == "fp8-e5m2") return {s, DType::Float8_e5m2, 2};
  throw std::runtime_error("[bench] unknown weight kind " + s +
                           " (f32, bf16, bf16-bf16x, f16, fp8, fp8-tensor, fp8-block, fp8-e5m2)");
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

void record(Ctx& c, bench::Result r) {
  c.results.push_back(r.to_json());
  kiln::empty_cache();
  if (!c.opt.json)
    std::fprintf(stderr, "  %s: %.3f ms, %.1f GB/s, roof %.2f\n", r.name.c_str(), r.median_s * 1e3, r.gbps,
                 r.roof_fraction);
}

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  size_t a = 0;
  while (a <= s.size()) {
    const size_t b = std::min(s.find(',', a), s.size());
    if (b > a) v.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return v;
}

// A weight [N, K] of kind wk and its scale.
std::pair<Tensor, Tensor> make_weight(const WeightKind& wk, int64_t N, int64_t K) {
  manual_seed(uint64_t(N * 131 + K));
  const Tensor w = mul(randn({N, K}), Scalar(0.05));
  if (!is_fp8(wk.dtype)) return {w.to(wk.dtype), Tensor()};
  const QuantGranularity g = wk.scale == 1   ? QuantGranularity::Tensor
                             : wk.scale == 3 ? QuantGranularity::Block
                                             : QuantGranularity::Row;
  return quantize_fp8(w, g, wk.dtype);
}

// ---- the PyTorch peer -------------------------------------------------------

const char* kTorchPeer = R"PY(
import json, sys, time, statistics
import torch
import torch.nn.functional as F
req = json.loads(sys.stdin.read())
torch.set_num_threads(req["threads"])
out = {"torch_version": torch.__version__, "results": []}
def timeit(fn, copies, repeat, warmup):
    for i in range(warmup): fn(i % copies)
    ts = []
    for r in range(repeat):
        t0 = time.perf_counter(); fn((warmup + r) % copies); ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
for c in req["cases"]:
    N, K, kind, copies = c["N"], c["K"], c["kind"], c["copies"]
    try:
        if kind in ("f32", "bf16"):
            dt = torch.float32 if kind == "f32" else torch.bfloat16
            ws = [torch.randn(N, K).to(dt)]
            ws += [ws[0].clone() for _ in range(copies - 1)]
            x = torch.randn(1, K).to(dt)
            with torch.inference_mode():
                t = timeit(lambda i: F.linear(x, ws[i]), copies, req["repeat"], req["warmup"])
        elif kind == "prefill-bf16":
            # F.linear on bf16 x and W (oneDNN's bf16 GEMM on CPUs with AVX512-BF16 or AMX).
            M = c["M"]
            w = torch.randn(N, K).to(torch.bfloat16)
            x = torch.randn(M, K).to(torch.bfloat16)
            with torch.inference_mode():
                t = timeit(lambda i: F.linear(x, w), 1, req["repeat"], req["warmup"])
        elif kind == "prefill-matmul-bf16":
            # x @ B for bf16 x and a row-major bf16 B [K, N].
            M = c["M"]
            b = torch.randn(K, N).to(torch.bfloat16)
            x = torch.randn(M, K).to(torch.bfloat16)
            with torch.inference_mode():
                t = timeit(lambda i: torch.matmul(x, b), 1, req["repeat"], req["warmup"])
        elif kind == "fp8":
            w8 = torch.randn(N, K).to(torch.float8_e4m3fn)
            ws = [w8] + [w8.clone() for _ in range(copies - 1)]
            a = torch.randn(1, K).to(torch.float8_e4m3fn)
            one = torch.ones((), dtype=torch.float32)
            with torch.inference_mode():
                t = timeit(lambda i: torch._scaled_mm(a, ws[i].t(), one, one, out_dtype=torch.bfloat16),
                           copies, req["repeat"], req["warmup"])
        else:
            continue
        out["results"].append({"name": c["name"], "median_s": t})
    except Exception as e:
        out.setdefault("missing", []).append({"name": c["name"], "why": type(e).__name__ + ": " + str(e)[:200]})
    ws = None
print(json.dumps(out))
)PY";

// Runs the peer script with the cases on stdin; returns name -> median_s.
std::map<std::string, double> run_torch_peer(const std::string& python, const json& req, json& info) {
  std::map<std::string, double> r;
  const bench::PythonRun run = bench::run_python_script(python, kTorchPeer, req, "torch peer");
  info = {{"executable", python}};
  if (!run.ok) {
    info["error"] = run.why;
    return r;
  }
  info["torch_version"] = run.doc.value("torch_version", "");
  if (run.doc.contains("missing")) info["missing"] = run.doc["missing"];
  for (const json& x : run.doc["results"]) r[x["name"].get<std::string>()] = x["median_s"].get<double>();
  return r;
}

// Runs the peer on `cases` (when --peer-python is given) and adds its time and
// the speedup to each result it timed; summary[speedup_key][group(result)] is
// the geomean speedup of each group, summary[info_key] the peer's details.
void merge_torch_peer(Ctx& c, const json& cases, const char* info_key, const char* speedup_key,
                      const std::function<std::string(const json&)>& group) {
  if (c.opt.peer_python.empty() || cases.empty()) return;
  json info;
  const json req = {
      {"threads", kiln::num_threads()}, {"repeat", c.opt.repeat}, {"warmup", c.opt.warmup}, {"cases", cases}};
  const auto peer = run_torch_peer(c.opt.peer_python, req, info);
  c.summary[info_key] = info;
  std::map<std::string, std::vector<double>> speedups;
  for (json& r : c.results) {
    auto it = peer.find(r["name"].get<std::string>());
    if (it == peer.end()) continue;
    r["peer_median_s"] = {{"torch", it->second}};
    r["speedup_vs_torch"] = it->second / r["median_s"].get<double>();
    speedups[group(r)].push_back(r["speedup_vs_torch"].get<double>());
  }
  for (auto& [g, v] : speedups) c.summary[speedup_key][g] = geomean(v);
}

// ---- cases ------------------------------------------------------------------

// Whether one-token linear layers of this kind may take the dot kernel.
bool uses_dot(const WeightKind& wk) {
  return cpu::bf16_dot_covers(wk.dtype, wk.scale == 3 ? cpu::ScaleKind::Block : cpu::ScaleKind::Row);
}

// One-token linear (or scaled_mm) over the decode shapes.
void decode_cases(Ctx& c, bool scaled) {
  const json doc = read_json(c.opt.cases);
  std::vector<json> shapes(doc["shapes"].begin(), doc["shapes"].end());
  if (c.opt.quick) shapes = {json{{"model", "quick"}, {"layer", "tiny"}, {"N", 256}, {"K", 512}}};
  if (c.opt.limit > 0 && int(shapes.size()) > c.opt.limit) shapes.resize(size_t(c.opt.limit));
  const std::vector<std::string> kinds =
      scaled ? std::vector<std::string>{"fp8-tensor", "fp8"} : split(c.opt.dtypes);
  std::map<std::string, std::vector<double>> fractions, times, dot_speedups;
  json peer_cases = json::array();
  for (const std::string& kn : kinds) {
    const WeightKind wk = weight_kind(kn);
    for (const json& s : shapes) {
      const int64_t N = s["N"], K = s["K"];
      const double wbytes = double(N * K) * double(itemsize(wk.dtype));
      const double sbytes = wk.scale == 2   ? 4.0 * N
                            : wk.scale == 3 ? 4.0 * ((N + 127) / 128) * ((K + 127) / 128)
                                            : 0;
      const double per_copy = wbytes + sbytes;
      // As many copies as 4x the LLC takes (thousands for the smallest
      // layers: a 300 MiB L3 would otherwise hold a 512-copy rotation).
      const int maxc = c.opt.quick ? 1 : std::max(1, std::min(1 << 16, int(mem_budget() / per_copy)));
      const bench::Rotation rot = bench::plan_rotation(per_copy, 0, maxc);
      auto [w0, s0] = make_weight(wk, N, K);
      // Scanned once, as a model's weights are at load (kiln/quantize.h).
      const Fp8Codes codes = fp8_has_nan_code(w0) ? Fp8Codes::Unchecked : Fp8Codes::NoNan;
      const bool e4m3 = wk.dtype == DType::Float8_e4m3fn;
      const Fp8Subnormals subs = e4m3 ? fp8_find_subnormals(w0) : Fp8Subnormals{};
      std::vector<Tensor> ws{w0}, ss{s0};
      for (int i = 1; i < rot.copies; ++i)
        ws.push_back(w0.clone()), ss.push_back(s0.defined() ? s0.clone() : s0);
      const std::string name = std::string(scaled ? "scaled_mm " : "linear ") + kn + " " +
                               s.value("model", "") + " " + s.value("layer", "") + " " + std::to_string(N) +
                               "x" + std::to_string(K);
      // Layers under 16 MiB are timed as a run of consecutive calls on
      // successive (cold) copies, as a model's layers follow one another.
      const int calls = std::max(1, std::min(rot.copies / 2, int(std::ceil(double(16 << 20) / per_copy))));
      const auto time_case = [&](const std::string& case_name, const std::string& kind) {
        bench::Result r;
        if (!scaled) {
          const Tensor x = randn({1, K}).to(wk.act);
          Tensor out = empty({1, N}, wk.act);
          const double act_bytes = double(itemsize(wk.act)) * double(K + N);
          r = c.runner.memory_case(
              case_name, per_copy + act_bytes, rot,
              [&](int i) {
                linear_out(x, ws[size_t(i % rot.copies)], Tensor(), ss[size_t(i % rot.copies)], out, codes,
                           e4m3 ? &subs : nullptr);
              },
              calls);
        } else {
          const Tensor a = randn({1, K}).to(DType::Float8_e4m3fn);
          const Tensor sa = wk.scale == 1 ? ones({}) : ones({1, 1});
          std::vector<Tensor> sbs;
          for (const Tensor& sc : ss) sbs.push_back(wk.scale == 1 ? sc : sc.view({1, N}));
          r = c.runner.memory_case(
              case_name, per_copy + 1.0 * K + 2.0 * N, rot,
              [&](int i) {
                Tensor y = scaled_mm(a, ws[size_t(i % rot.copies)].t(), sa, sbs[size_t(i % rot.copies)],
                                     Tensor(), Tensor(), DType::BFloat16);
              },
              calls);
        }
        r.extra["kind"] = kind;
        r.extra["N"] = N;
        r.extra["K"] = K;
        fractions[kind].push_back(r.roof_fraction);
        times[kind].push_back(r.median_s);
        record(c, r);
        return r.median_s;
      };
      const double t_main = time_case(name, kn);
      // --exact-too: the same case right after with the dot kernel off (what
      // its rounding of x buys on this machine, measured minutes apart at most).
      if (c.opt.exact_too && !scaled && uses_dot(wk)) {
        const bool saved = cpu::bf16_dot();
        cpu::set_bf16_dot(false);
        const double t_exact = time_case(name + " exact", kn + "-exact");
        cpu::set_bf16_dot(saved);
        dot_speedups[kn].push_back(t_exact / t_main);
      }
      peer_cases.push_back(
          {{"name", name},
           {"N", N},
           {"K", K},
           {"kind", scaled                        ? "fp8"
                    : wk.dtype == DType::BFloat16 ? "bf16"
                                                  : kn},
           {"copies", std::max(1, std::min(rot.copies, int(mem_budget() / (4.0 * N * K))))}});
    }
  }
  for (auto& [kn, f] : fractions) c.summary["geomean_roof_fraction"][kn] = geomean(f);
  for (auto& [kn, v] : dot_speedups) c.summary["geomean_speedup_dot_over_exact"][kn] = geomean(v);
  if (times.count("fp8") && times.count("bf16") && times["fp8"].size() == times["bf16"].size()) {
    std::vector<double> ratio;
    for (size_t i = 0; i < times["fp8"].size(); ++i) ratio.push_back(times["fp8"][i] / times["bf16"][i]);
    c.summary["geomean_time_ratio_fp8_over_bf16"] = geomean(ratio);
  }
  merge_torch_peer(c, peer_cases, "peer", "geomean_speedup_vs_torch",
                   [](const json& r) { return r.value("kind", ""); });
}

// Prefill at M = 512, 4096 x 4096: linear for f32/bf16/fp8 weights against
// OpenBLAS's sgemm, interleaved.
void prefill_vs_openblas(Ctx& c) {
  const int64_t M = c.opt.quick ? 32 : 512, N = c.opt.quick ? 256 : 4096, K = c.opt.quick ? 256 : 4096;
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const Tensor x = randn({M, K});
  const std::string dims = " M=" + std::to_string(M) + " " + std::to_string(N) + "x" + std::to_string(K);
  std::map<std::string, double> t;
  std::vector<bench::Runner::Latency> cases;
  const Tensor w32 = make_weight(weight_kind("f32"), N, K).first;
  const std::pair<Tensor, Tensor> wb = make_weight(weight_kind("bf16"), N, K);
  const std::pair<Tensor, Tensor> w8 = make_weight(weight_kind("fp8"), N, K);
  Tensor y = empty({M, N});
  // The peer: OpenBLAS's sgemm as a program calls it, on its own threads
  // (kiln's linear f32 calls it single-threaded on kiln's, cpu::sgemm).
  cases = {{"openblas sgemm f32",
            [&] {
              const cpu::BlasThreads all(kiln::num_threads());
              cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(M), blasint(N), blasint(K), 1.0f,
                          x.data<float>(), blasint(K), w32.data<float>(), blasint(K), 0.0f, y.data<float>(),
                          blasint(N));
            },
            0.25},
           {"linear f32", [&] { linear_out(x, w32, Tensor(), Tensor(), y); }},
           {"linear bf16", [&] { linear_out(x, wb.first, Tensor(), wb.second, y); }},
           {"linear fp8", [&] { linear_out(x, w8.first, Tensor(), w8.second, y); }}};
  std::vector<std::string> labels;
  for (auto& cs : cases) labels.push_back(cs.name), cs.name = "prefill " + cs.name + dims;
  std::vector<bench::Result> rs = c.runner.latency_cases(cases, 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    rs[i].extra["gflops"] = flops / rs[i].median_s / 1e9;
    t[labels[i]] = rs[i].median_s;
    record(c, rs[i]);
  }
  c.summary["prefill_ratio_f32_over_openblas"] = t["linear f32"] / t["openblas sgemm f32"];
  c.summary["prefill_ratio_bf16_over_f32"] = t["linear bf16"] / t["linear f32"];
  c.summary["prefill_ratio_fp8_over_f32"] = t["linear fp8"] / t["linear f32"];
}

// bf16-matmul, a kind --prefill-dtypes may add: matmul of bf16 x and a
// row-major bf16 B = W^T [K, N] (the layout of x @ W and of a backward pass's
// input gradient), beside torch's bf16 matmul.
constexpr const char* kMatmulKind = "bf16-matmul";

// Prefill rows (--prefill-rows, default 64, 512, 2048) over the decode shapes
// (lm_head and products past 2^37 flops left out: seconds a call), for bf16
// weights with bf16 x and y (the call torch's bf16 F.linear makes, its peer),
// bf16 weights with float32 x, FP8 (e4m3, row scales) with float32 x, and
// the kinds --prefill-dtypes adds (f16, fp8-block, ...: float32 x),
// interleaved per shape. Each is reported in GFLOP/s and as a fraction of the
// compute roof of the unit it runs on (AMX tiles, the AVX512-BF16 dot
// product or the FMA peak), measured at the start of the run.
void prefill_rows_cases(Ctx& c) {
  json peer_cases = json::array(), mm_peer_cases = json::array();
  const bench::ComputeRoof roof = bench::measure_compute_roof();
  c.summary["compute_roof_gflops"] = {{"fma_f32", roof.fma_f32_gflops},
                                      {"bf16_dot", roof.bf16_dot_gflops},
                                      {"amx_bf16", roof.amx_bf16_gflops},
                                      {"threads", roof.threads}};
  const bool bf16_unit = cpu::bf16_gemm_active(), amx = bf16_unit && cpu::amx_tiles_active();
  c.summary["bf16_gemm"] = amx         ? "AMX-BF16 tiles (x rounded to bf16)"
                           : bf16_unit ? "AVX512-BF16 (x rounded to bf16)"
                                       : "off: FMA on widened weights";
  const json doc = read_json(c.opt.cases);
  std::vector<json> shapes;
  for (const json& sh : doc["shapes"])
    if (sh.value("layer", "") != "lm_head") shapes.push_back(sh);
  if (c.opt.quick) shapes = {json{{"model", "quick"}, {"layer", "tiny"}, {"N", 256}, {"K", 512}}};
  if (c.opt.limit > 0 && int(shapes.size()) > c.opt.limit) shapes.resize(size_t(c.opt.limit));
  std::vector<int64_t> rows;
  for (const std::string& r : split(c.opt.prefill_rows)) rows.push_back(std::stoll(r));
  if (c.opt.quick) rows = {32};
  std::vector<std::string> kinds = {"bf16-bf16x", "bf16", "fp8"};
  for (const std::string& k : split(c.opt.prefill_dtypes))
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  // Each kind's time over bf16's (float32 x), per M.
  std::map<std::string, std::map<int64_t, std::vector<double>>> over_bf16;
  for (const int64_t M : rows)
    for (const json& sh : shapes) {
      const int64_t N = sh["N"], K = sh["K"];
      const double flops = 2.0 * double(M) * double(N) * double(K);
      if (flops > 0x1p37) continue;
      const std::string dims = " " + sh.value("model", "") + " " + sh.value("layer", "") +
                               " M=" + std::to_string(M) + " " + std::to_string(N) + "x" + std::to_string(K);
      const Tensor x = randn({M, K}), xb = x.to(DType::BFloat16);
      Tensor y = empty({M, N}), yb = empty({M, N}, DType::BFloat16);
      std::vector<std::pair<Tensor, Tensor>> ws;
      for (const std::string& k : kinds) {
        if (k != kMatmulKind) {
          ws.push_back(make_weight(weight_kind(k), N, K));
          continue;
        }
        ws.push_back({make_weight(weight_kind("bf16"), N, K).first.t().contiguous(), Tensor()});
      }
      std::vector<bench::Runner::Latency> cases;
      for (size_t i = 0; i < kinds.size(); ++i) {
        if (kinds[i] == kMatmulKind) {
          const Tensor& bi = ws[i].first;
          cases.push_back({"prefill matmul " + kinds[i] + dims, [&xb, &bi, &yb] { yb = matmul(xb, bi); }});
          continue;
        }
        const bool narrow = weight_kind(kinds[i]).act == DType::BFloat16;
        const Tensor &xi = narrow ? xb : x, &wi = ws[i].first, &si = ws[i].second;
        Tensor& yi = narrow ? yb : y;
        cases.push_back({"prefill linear " + kinds[i] + dims,
                         [&xi, &wi, &si, &yi] { linear_out(xi, wi, Tensor(), si, yi); }});
      }
      std::vector<bench::Result> rs = c.runner.latency_cases(cases, 1);
      for (size_t i = 0; i < rs.size(); ++i) {
        const double g = flops / rs[i].median_s / 1e9;
        const double peak = amx         ? roof.amx_bf16_gflops
                            : bf16_unit ? roof.bf16_dot_gflops
                                        : roof.fma_f32_gflops;
        rs[i].extra["kind"] = std::string("prefill-") + kinds[i];
        rs[i].extra["M"] = M;
        rs[i].extra["N"] = N;
        rs[i].extra["K"] = K;
        rs[i].extra["gflops"] = g;
        if (peak > 0) rs[i].extra["compute_roof_fraction"] = g / peak;
        record(c, rs[i]);
      }
      for (size_t i = 2; i < rs.size(); ++i)
        over_bf16[kinds[i]][M].push_back(rs[i].median_s / rs[1].median_s);
      peer_cases.push_back(
          {{"name", rs[0].name}, {"N", N}, {"K", K}, {"M", M}, {"kind", "prefill-bf16"}, {"copies", 1}});
      for (size_t i = 0; i < rs.size(); ++i)
        if (kinds[i] == kMatmulKind)
          mm_peer_cases.push_back({{"name", rs[i].name},
                                   {"N", N},
                                   {"K", K},
                                   {"M", M},
                                   {"kind", "prefill-matmul-bf16"},
                                   {"copies", 1}});
    }
  for (auto& [kind, per_m] : over_bf16)
    for (auto& [M, v] : per_m)
      c.summary["prefill_geomean_time_ratio_" + kind + "_over_bf16"][std::to_string(M)] = geomean(v);
  merge_torch_peer(c, peer_cases, "prefill_peer", "prefill_geomean_speedup_bf16_vs_torch",
                   [](const json& r) { return std::to_string(r["M"].get<int64_t>()); });
  merge_torch_peer(c, mm_peer_cases, "prefill_matmul_peer", "prefill_geomean_speedup_bf16_matmul_vs_torch",
                   [](const json& r) { return std::to_string(r["M"].get<int64_t>()); });
}

// FP8 scaled_mm at M = 512, 4096 x 4096, row-wise scales.
void prefill_scaled_mm(Ctx& c) {
  const int64_t M = c.opt.quick ? 32 : 512, N = c.opt.quick ? 256 : 4096, K = c.opt.quick ? 256 : 4096;
  const double flops = 2.0 * double(M) * double(N) * double(K);
  auto [w, s] = make_weight(weight_kind("fp8"), N, K);
  const Tensor a = randn({M, K}).to(DType::Float8_e4m3fn), sa = ones({M, 1}), sb = s.view({1, N});
  std::vector<bench::Result> rs = c.runner.latency_cases(
      {{"prefill scaled_mm fp8 row-wise M=" + std::to_string(M) + " " + std::to_string(N) + "x" +
            std::to_string(K),
        [&] { Tensor y = scaled_mm(a, w.t(), sa, sb, Tensor(), Tensor(), DType::BFloat16); }}},
      1);
  rs[0].extra["gflops"] = flops / rs[0].median_s / 1e9;
  record(c, rs[0]);
}

int run_matmul(MatOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  if (opt.cases.empty())
    opt.cases = opt.what == "moe" ? "bench/cases/moe_configs.json" : "bench/cases/decode_linear_shapes.json";
  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  const sys::RoofStats first = roof.measure(opt.quick ? 0.0 : 0.5, 3, 20);
  bench::Runner runner(roof, opt.runner_options());
  if (!opt.json)
    std::fprintf(stderr, "kiln bench %s: %d threads, roof %.1f GB/s at start ...\n", opt.what.c_str(),
                 kiln::num_threads(), first.max_gbps);
  json results = json::array(), summary = json::object();
  // OpenBLAS picks its kernels from cpuid; under some VMs it falls back to a
  // generic core (e.g. "Prescott") and runs ~7x slower: OPENBLAS_CORETYPE fixes it.
  summary["openblas_core"] = openblas_get_corename();
  Ctx c{opt, runner, results, summary};
  if (opt.what == "linear" || opt.what == "scaled_mm") {
    decode_cases(c, opt.what == "scaled_mm");
    if (!opt.gguf_types.empty()) gguf_decode_cases(c);
    if (!opt.no_prefill) {
      if (opt.what == "scaled_mm") {
        prefill_scaled_mm(c);
      } else {
        // The rows cases first: OpenBLAS's threads spin on for a while after
        // its calls and took half the cores from the compute roof measured
        // after them (and from the first cases).
        prefill_rows_cases(c);
        prefill_vs_openblas(c);
      }
    }
  } else {
    moe_cases(c);
  }
  const sys::RoofStats all = runner.roof_stats();
  json doc = {{"command", "bench " + opt.what},
              {"kiln_version", kiln::kVersion},
              {"machine", bench::machine_json(all.passes > 0 ? all : first)},
              {"quick", opt.quick},
              {"cases_file", opt.cases},
              {"repeat", opt.repeat},
              {"warmup", opt.warmup},
              {"rotation_rule",
               "weights cycle through copies so the working set is >= 4x the LLC where memory "
               "allows (see each result's rotation); moe rotates tokens, so routing spreads "
               "reads over every expert; not in --quick. A decode repetition times "
               "calls_per_sample consecutive calls (on successive copies, enough for 16 MiB of "
               "weights) and reports the time per call"},
              {"roof_rule",
               "one roof pass (full-width SIMD loads, all threads, each reading its share as 8 "
               "far-apart streams, or on every other pass 12 that also prefetch in software; "
               "buffer >= 4x the LLC) right before every timed "
               "repetition; roof_fraction = median GB/s of the case / best pass beside it"},
              {"summary", summary},
              {"results", results}};
  if (!opt.out.empty()) write_file(opt.out, doc.dump(2) + "\n");
  if (!opt.plot.empty()) {
    const std::string why = bench::plot_with_python(bench::find_python(""), doc, opt.plot);
    if (!why.empty()) throw std::runtime_error("--plot " + opt.plot + ": " + why);
    std::fprintf(stderr, "kiln bench %s: wrote %s\n", opt.what.c_str(), opt.plot.c_str());
  }
  if (opt.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  std::printf("kiln %s bench %s: %s, %d threads, %s; roof %.1f GB/s\n\n", kiln::kVersion, opt.what.c_str(),
              sys::system_info().cpu_model.c_str(), kiln::num_threads(),
              doc["machine"]["simd_target"].get<std::string>().c_str(),
              doc["machine"]["roof"]["max_gbps"].get<double>());
  std::fputs(bench::format_table(doc["results"]).c_str(), stdout);
  std::printf("\nsummary: %s\n", summary.dump(2).c_str());
  return 0;
}

Command add_one(CLI::App& bench, const std::string& what, const std::string& help) {
  auto opt = std::make_shared<MatOptions>();
  opt->what = what;
  CLI::App* app = bench.add_subcommand(what, help);
  bench::add_common_options(*app, *opt);
  app->add_option("--cases", opt->cases,
                  what == "moe" ? "Case file (default bench/cases/moe_configs.json)"
                                : "Case file (default bench/cases/decode_linear_shapes.json)");
  add_threads_option(*app, opt->threads);
  app->add_option("--plot", opt->plot,
                  "Also draw the roof fraction per case and weight kind into this PNG (matplotlib)");
  app->add_option("--peer-python", opt->peer_python,
                  "A python with torch, to run PyTorch's CPU backend side by side");
  if (what != "moe") {
    app->add_option("--limit", opt->limit, "Only the first N shapes of the case file");
    app->add_flag("--no-prefill", opt->no_prefill, "Skip the prefill (many-row) cases");
    if (what == "linear")
      app->add_option("--prefill-rows", opt->prefill_rows,
                      "Rows (tokens) of the prefill cases over the decode shapes, comma-separated "
                      "(bf16 x/y beside torch's bf16 F.linear, bf16 and FP8 weights with float32 x)");
    if (what == "linear")
      app->add_option("--prefill-dtypes", opt->prefill_dtypes,
                      "More weight kinds for the prefill cases, beside bf16-bf16x, bf16 and fp8 "
                      "(e.g. f16,fp8-block): float32 x, each kind's time over bf16's in the summary; "
                      "bf16-matmul: bf16 x @ a row-major bf16 [K, N], beside torch's matmul");
  }
  if (what == "linear")
    app->add_option("--dtypes", opt->dtypes,
                    "Weight kinds: f32,bf16,f16,fp8 (e4m3 row scales),fp8-tensor,fp8-block,fp8-e5m2, "
                    "and bf16-bf16x (bf16 weights, x and y: the call torch's F.linear makes with bf16 "
                    "tensors)");
  if (what == "linear")
    app->add_option(
        "--gguf-types", opt->gguf_types,
        "Also decode cases with weights held as ggml blocks (block_linear), comma-separated: "
        "Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q2_K,Q3_K,Q4_K,Q5_K,Q6_K,Q8_K,IQ4_NL,IQ4_XS (GB/s of block bytes)");
  if (what == "linear")
    app->add_flag(
        "--exact-too", opt->exact_too,
        "Time each bf16/FP8 decode case again right after with the AVX512-BF16 dot kernel off "
        "(KILN_BF16_DOT=off), as kind <kind>-exact, and report the dot kernel's speedup. Only cases "
        "the dot kernel runs are timed twice: on Intel, where it is off by default, run with "
        "KILN_BF16_DOT=on");
  return {app, [opt] { return run_matmul(*opt); }};
}

}  // namespace
}  // namespace kiln::cli::matbench

namespace kiln::cli {

std::vector<Command> add_bench_matmul(CLI::App& bench) {
  using matbench::add_one;
  return {add_one(bench, "linear",
                  "Decode linear layers (GEMV) vs the read roof, and M=512 prefill vs OpenBLAS."),
          add_one(bench, "scaled_mm", "FP8 scaled_mm: decode shapes vs the read roof, and M=512 prefill."),
          add_one(bench, "moe", "One MoE layer (router + top-k SwiGLU experts) per config, 1..512 tokens.")};
}

}  // namespace kiln::cli
