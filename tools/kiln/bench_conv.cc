// `kiln bench conv`: the convolution family per op, side by side with torch's
// CPU backend (--peer-python) in the same run. Cases are the layers of the
// SD-VAE decoder at a reduced latent size (conv2d 3x3 forward and backward in
// NCHW and channels-last, group_norm, nearest x2 upsampling, pad), a
// Wan-VAE-like conv3d, Whisper's two front conv1d layers, a Mamba depthwise
// causal conv1d and dropout on 64 MiB. The memory-bound ops are also reported
// as a fraction of the read roof measured beside them; each result states the
// target it is held to and whether this run meets it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bandwidth.h"
#include "bench/harness.h"
#include "bench/options.h"
#include "bench/report.h"
#include "bench_conv_peer.h"
#include "bench_torch_peer.h"
#include "cli_io.h"
#include "commands.h"
#include "kiln/allocator.h"
#include "kiln/autograd.h"
#include "kiln/binary.h"
#include "kiln/conv.h"
#include "kiln/dropout.h"
#include "kiln/group_norm.h"
#include "kiln/interpolate.h"
#include "kiln/memory_format.h"
#include "kiln/pad.h"
#include "kiln/random.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct ConvOptions : bench::CommonOptions {
  std::string cases, peer_python, filter;
  int threads = 0;
};

// One spec per layer; conv2d/conv3d specs expand to forward and backward in
// both memory formats. groups -1: depthwise (groups = channels).
const char* kDefaultCases = R"({"cases": [
 {"model": "SD-VAE decoder", "op": "conv2d", "input": [1, 512, 64, 64], "out_channels": 512, "kernel": 3, "padding": 1},
 {"model": "SD-VAE decoder", "op": "conv2d", "input": [1, 256, 128, 128], "out_channels": 256, "kernel": 3, "padding": 1},
 {"model": "SD-VAE decoder", "op": "conv2d", "input": [1, 128, 256, 256], "out_channels": 128, "kernel": 3, "padding": 1},
 {"model": "Wan-VAE-like", "op": "conv3d", "input": [1, 96, 5, 60, 104], "out_channels": 96, "kernel": 3, "padding": 1},
 {"model": "Whisper conv1", "op": "conv1d", "input": [1, 80, 3000], "out_channels": 384, "kernel": 3, "padding": 1},
 {"model": "Whisper conv2", "op": "conv1d", "input": [1, 384, 3000], "out_channels": 384, "kernel": 3, "stride": 2, "padding": 1},
 {"model": "Mamba causal depthwise", "op": "conv1d", "input": [1, 1536, 1024], "out_channels": 1536, "kernel": 4, "padding": 3, "groups": -1},
 {"model": "Mamba causal depthwise", "op": "conv1d", "input": [1, 2048, 2048], "out_channels": 2048, "kernel": 4, "padding": 3, "groups": -1},
 {"model": "SD-VAE decoder", "op": "group_norm", "input": [1, 512, 64, 64], "groups": 32},
 {"model": "SD-VAE decoder", "op": "group_norm", "input": [1, 256, 128, 128], "groups": 32},
 {"model": "SD-VAE decoder", "op": "group_norm", "input": [1, 128, 256, 256], "groups": 32},
 {"model": "SD-VAE decoder", "op": "interpolate", "input": [1, 512, 64, 64], "scale": 2, "mode": "nearest"},
 {"model": "SD-VAE decoder", "op": "pad", "input": [1, 128, 256, 256], "pad": [0, 1, 0, 1]},
 {"model": "training", "op": "dropout", "input": [16777216], "p": 0.1}]})";

json load_cases(const ConvOptions& opt, std::string* source) {
  if (opt.cases.empty()) {
    *source = "built-in";
    return json::parse(kDefaultCases);
  }
  std::ifstream f(opt.cases);
  if (!f) throw std::runtime_error("[bench conv] cannot read " + opt.cases);
  *source = opt.cases;
  return json::parse(f);
}

bool is_conv(const json& s) { return s["op"].get<std::string>().rfind("conv", 0) == 0; }

// --quick: the same ops and ranks at sizes that run in milliseconds.
json shrink(json s) {
  Shape in = s["input"].get<Shape>();
  if (in.size() == 1) {
    in[0] = std::min<int64_t>(in[0], 1 << 16);
  } else {
    in[1] = std::min<int64_t>(in[1], 64);  // group_norm's 32 groups still divide it
    for (size_t d = 2; d < in.size(); ++d) in[d] = std::min<int64_t>(in[d], in.size() == 3 ? 64 : 10);
  }
  s["input"] = in;
  if (s.contains("out_channels")) s["out_channels"] = std::min<int64_t>(s["out_channels"].get<int64_t>(), 32);
  return s;
}

// conv specs get "groups" resolved, "variant" and "layout"; others pass as they are.
std::vector<json> expand(json s) {
  if (!is_conv(s)) return {s};
  const int64_t c = s["input"][1].get<int64_t>();
  if (s.value("groups", int64_t(1)) == -1) {
    s["groups"] = c;
    s["out_channels"] = c;
  }
  std::vector<json> v;
  const bool nd1 = s["op"] == "conv1d";
  for (const char* variant : {"fwd", "bwd"})
    for (const char* layout : {"nchw", "channels_last"}) {
      if (nd1 && (std::string(variant) == "bwd" || std::string(layout) != "nchw")) continue;
      json e = s;
      e["variant"] = variant;
      e["layout"] = layout;
      v.push_back(e);
    }
  return v;
}

std::string case_name(const json& s) {
  const std::string op = s["op"];
  std::string nm = op + " " + shape_to_string(s["input"].get<Shape>());
  if (is_conv(s)) {
    nm += " ->" + std::to_string(s["out_channels"].get<int64_t>()) + " k" +
          std::to_string(s["kernel"].get<int64_t>());
    if (s.value("stride", 1) != 1) nm += " s" + std::to_string(s["stride"].get<int>());
    if (s.value("groups", int64_t(1)) != 1) nm += " dw";
    nm += std::string(" ") + s["variant"].get<std::string>();
    if (s["layout"] == "channels_last") nm += " CL";
  } else if (op == "group_norm") {
    nm += " g" + std::to_string(s["groups"].get<int>());
  } else if (op == "interpolate") {
    nm += " " + s.value("mode", std::string("nearest")) + " x" + std::to_string(s["scale"].get<int>());
  } else if (op == "pad") {
    nm += " " + s["pad"].dump();
  } else if (op == "dropout") {
    char p[32];
    std::snprintf(p, sizeof p, " p=%g", s["p"].get<double>());
    nm += p;
  }
  return nm;
}

// What the issue holds each op to: {speedup_vs_torch, roof_fraction (0: none)}.
json target_of(const json& s) {
  const std::string op = s["op"];
  if (op == "conv1d") return {{"speedup_vs_torch", 1.5}};
  if (is_conv(s)) return {{"speedup_vs_torch", 0.8}};
  return {{"speedup_vs_torch", 1.5}, {"roof_fraction", 0.7}};
}

// Times one conv spec; bytes 0 (compute-bound): the result carries GFLOP/s.
bench::Result conv_result(bench::Runner& runner, const std::string& nm, const json& s) {
  const Shape in = s["input"].get<Shape>();
  const int nd = int(in.size()) - 2;
  const int64_t cout = s["out_channels"], k = s["kernel"], groups = s.value("groups", int64_t(1));
  const std::vector<int64_t> stride{s.value("stride", int64_t(1))}, padding{s.value("padding", int64_t(0))};
  Shape ws{cout, in[1] / groups};
  for (int d = 0; d < nd; ++d) ws.push_back(k);
  kiln::manual_seed(3);
  Tensor x = randn(in), w = mul(randn(ws), Scalar(0.05)), b = randn({cout});
  if (s["layout"] == "channels_last") {
    const MemoryFormat mf = nd == 2 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
    x = contiguous(x, mf);
    w = contiguous(w, mf);
  }
  const bench::Rotation rot = bench::plan_rotation(0, 0, 1);
  bench::Result r;
  Tensor y;
  if (s["variant"] == "fwd") {
    r = runner.memory_case(nm, 0, rot, [&](int) { y = conv_nd(nd, x, w, b, stride, padding, {1}, groups); });
  } else {
    x.requires_grad_(true);
    w.requires_grad_(true);
    y = conv_nd(nd, x, w, b, stride, padding, {1}, groups);
    const Tensor gy = randn(y.sizes());
    const std::vector<Tensor> outs{y}, ins{x, w}, gys{gy};
    r = runner.memory_case(nm, 0, rot, [&](int) { auto g = autograd::grad(outs, ins, gys, true); });
  }
  // Multiply-adds of the forward: out elements * C_in/groups * k^nd (x2 flops; backward x2 more).
  double macs = double(y.numel()) * double(in[1] / groups);
  for (int d = 0; d < nd; ++d) macs *= double(k);
  const double flops = 2 * macs * (s["variant"] == "fwd" ? 1 : 2);
  r.extra["gflops"] = flops / r.median_s / 1e9;
  r.extra["output_shape"] = y.sizes();
  return r;
}

// Times one memory-bound spec over rotated input copies.
bench::Result memory_result(bench::Runner& runner, const ConvOptions& opt, const std::string& nm,
                            const json& s, int* copies) {
  const Shape in = s["input"].get<Shape>();
  const std::string op = s["op"];
  const double n = double(shape_numel(in, "bench conv"));
  double out = n;  // output elements
  if (op == "interpolate") out = n * std::pow(s["scale"].get<double>(), double(in.size()) - 2);
  if (op == "pad") {
    const std::vector<int64_t> p = s["pad"].get<std::vector<int64_t>>();
    out = 1;
    for (size_t d = 0; d < in.size(); ++d) {
      const size_t j = 2 * (in.size() - 1 - d);  // torch's order: last dim first
      out *= double(in[d] + (j + 1 < p.size() ? p[j] + p[j + 1] : 0));
    }
  }
  const bench::Rotation rot = bench::plan_rotation(4 * n, 4 * out, opt.quick ? 1 : 64);
  *copies = rot.copies;
  kiln::manual_seed(4);
  std::vector<Tensor> xs{randn(in)};
  for (int i = 1; i < rot.copies; ++i) xs.push_back(xs.front().clone());
  const int64_t c = in.size() > 1 ? in[1] : 1;
  const Tensor gw = randn({c}), gb = randn({c});
  std::function<Tensor(const Tensor&)> f;
  if (op == "group_norm") {
    f = [&, g = s["groups"].get<int64_t>()](const Tensor& t) { return group_norm(t, g, gw, gb); };
  } else if (op == "interpolate") {
    const std::vector<double> sc(in.size() - 2, s["scale"].get<double>());
    f = [sc, mode = s.value("mode", std::string("nearest"))](const Tensor& t) {
      return interpolate(t, {}, sc, mode);
    };
  } else if (op == "pad") {
    f = [p = s["pad"].get<std::vector<int64_t>>()](const Tensor& t) { return pad(t, p); };
  } else if (op == "dropout") {
    f = [p = s["p"].get<double>()](const Tensor& t) { return dropout(t, p, true); };
  } else {
    throw std::runtime_error("[bench conv] unknown op " + op);
  }
  bench::Result r =
      runner.memory_case(nm, 4 * (n + out), rot, [&](int i) { Tensor y = f(xs[size_t(i % rot.copies)]); });
  r.extra["bytes_note"] = "1 read of the input + 1 write of the output, float32";
  return r;
}

void judge(json& r) {
  const json& t = r["target"];
  bool met = false, known = false;
  if (r.contains("speedup_vs_torch")) {
    known = true;
    met = r["speedup_vs_torch"].get<double>() >= t["speedup_vs_torch"].get<double>();
  }
  if (t.contains("roof_fraction") && r["roof_fraction"].is_number()) {
    known = true;
    met = met || r["roof_fraction"].get<double>() >= t["roof_fraction"].get<double>();
  }
  if (known) r["meets_target"] = met;
}

std::string table(const json& doc) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%-52s %10s %10s %8s %8s %7s %7s %s\n", "case", "kiln", "torch", "speedup",
                "GFLOP/s", "GB/s", "roof", "target");
  out += line;
  for (const json& r : doc["results"]) {
    char torch[16] = "-", sp[16] = "-", gf[16] = "-", gb[16] = "-", rf[16] = "-";
    if (r.contains("gflops")) std::snprintf(gf, sizeof gf, "%.1f", r["gflops"].get<double>());
    if (r.contains("speedup_vs_torch")) {
      std::snprintf(torch, sizeof torch, "%.2f ms", r["peer_median_s"]["torch"].get<double>() * 1e3);
      std::snprintf(sp, sizeof sp, "%.2fx", r["speedup_vs_torch"].get<double>());
    }
    if (r["gbps"].is_number()) std::snprintf(gb, sizeof gb, "%.1f", r["gbps"].get<double>());
    if (r["roof_fraction"].is_number())
      std::snprintf(rf, sizeof rf, "%.2f", r["roof_fraction"].get<double>());
    const json& t = r["target"];
    std::string tg = ">=" + std::to_string(t["speedup_vs_torch"].get<double>()).substr(0, 3) + "x";
    if (t.contains("roof_fraction"))
      tg += " or >=" + std::to_string(t["roof_fraction"].get<double>()).substr(0, 3) + " roof";
    if (r.contains("meets_target")) tg += r["meets_target"].get<bool>() ? "  met" : "  MISSED";
    std::snprintf(line, sizeof line, "%-52s %7.2f ms %10s %8s %8s %7s %7s %s\n",
                  r["name"].get<std::string>().c_str(), r["median_s"].get<double>() * 1e3, torch, sp, gf, gb,
                  rf, tg.c_str());
    out += line;
  }
  return out;
}

int run_conv(ConvOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  std::string source;
  const json doc_cases = load_cases(opt, &source);
  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  const sys::RoofStats first = roof.measure(opt.quick ? 0.0 : 0.5, 3, 20);
  bench::Runner runner(roof, opt.runner_options());

  json results = json::array(), peer_cases = json::array(), missing = json::array();
  std::set<std::string> seen;
  for (const json& spec : doc_cases["cases"]) {
    for (const json& s : expand(opt.quick ? shrink(spec) : spec)) {
      // --quick shrinks some distinct layers to one size: keep names unique.
      std::string nm = case_name(s);
      for (int k = 2; seen.count(nm); ++k) nm = case_name(s) + " #" + std::to_string(k);
      seen.insert(nm);
      if (!opt.filter.empty() && nm.find(opt.filter) == std::string::npos) continue;
      int copies = 1;
      bench::Result r = is_conv(s) ? conv_result(runner, nm, s) : memory_result(runner, opt, nm, s, &copies);
      if (!opt.json) std::fprintf(stderr, "  %s: %.2f ms\n", nm.c_str(), r.median_s * 1e3);
      r.extra["op"] = s["op"];
      r.extra["model"] = s.value("model", std::string());
      r.extra["spec"] = s;
      r.extra["target"] = target_of(s);
      results.push_back(r.to_json());
      peer_cases.push_back({{"name", nm}, {"spec", s}, {"copies", copies}});
      kiln::empty_cache();
    }
  }
  json peer_info;
  if (opt.peer_python.empty()) {
    missing.push_back({{"name", "torch peer"}, {"why", "pass --peer-python PATH (a Python with torch)"}});
  } else {
    const bench::PythonRun peer =
        run_conv_torch_peer(opt.peer_python, {{"cases", peer_cases},
                                              {"repeat", opt.repeat},
                                              {"warmup", opt.warmup},
                                              {"threads", kiln::num_threads()},
                                              {"flush_mb", int64_t(roof_bytes >> 20)}});
    if (peer.ok) {
      merge_torch_peer(results, peer);
      peer_info = {{"torch", peer.doc["torch_version"]},
                   {"threads", peer.doc["threads"]},
                   {"python", opt.peer_python}};
    } else {
      missing.push_back({{"name", "torch peer"}, {"why", peer.why}});
    }
  }
  for (json& r : results) judge(r);
  const sys::RoofStats all = runner.roof_stats();
  json doc = {{"command", "bench conv"},
              {"kiln_version", kiln::kVersion},
              {"machine", bench::machine_json(all.passes > 0 ? all : first)},
              {"cases_file", source},
              {"quick", opt.quick},
              {"repeat", opt.repeat},
              {"warmup", opt.warmup},
              {"timing_rule",
               "each timed call follows one pass of the read roof; memory-bound ops rotate over input copies "
               "(working set >= 4x LLC, not in --quick); bwd times the input and weight gradients through "
               "autograd with the forward done once; the torch peer follows a read of the same size and the "
               "same rule; float32, batch 1"},
              {"results", results}};
  if (!peer_info.is_null()) doc["peers"] = peer_info;
  if (!missing.empty()) doc["missing"] = missing;
  if (!opt.out.empty()) write_file(opt.out, doc.dump(2) + "\n");
  if (opt.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  const json& m = doc["machine"];
  std::printf("kiln %s bench conv: %s, %d threads, %s, roof %.1f GB/s (best %.1f)%s\n\n", kiln::kVersion,
              m["cpu_model"].get<std::string>().c_str(), kiln::num_threads(),
              m["simd_target"].get<std::string>().c_str(), m["roof"]["median_gbps"].get<double>(),
              m["roof_gbps"].get<double>(), opt.quick ? "; --quick: not a speed figure" : "");
  std::fputs(table(doc).c_str(), stdout);
  if (!peer_info.is_null())
    std::printf("torch %s, %d threads\n", peer_info["torch"].get<std::string>().c_str(),
                peer_info["threads"].get<int>());
  for (const json& mi : missing)
    std::printf("  not measured: %s (%s)\n", mi["name"].get<std::string>().c_str(),
                mi["why"].get<std::string>().c_str());
  return 0;
}

}  // namespace

Command add_bench_conv(CLI::App& bench) {
  auto opt = std::make_shared<ConvOptions>();
  CLI::App* app = bench.add_subcommand(
      "conv", "Convolutions, group_norm, interpolate, pad and dropout on VAE and audio shapes, vs torch.");
  bench::add_common_options(*app, *opt, {.repeat = 5, .warmup = 1});
  app->add_option("--cases", opt->cases,
                  "Case file {\"cases\": [{\"op\", \"input\", ...}]} in the form of the built-in list "
                  "(default: built-in SD-VAE, Wan-VAE, Whisper and Mamba shapes)");
  add_threads_option(*app, opt->threads);
  app->add_option("--peer-python", opt->peer_python, "A Python with torch, to time torch side by side");
  app->add_option("--filter", opt->filter, "Run only the cases whose name contains this text");
  return {app, [opt] { return run_conv(*opt); }};
}

}  // namespace kiln::cli
