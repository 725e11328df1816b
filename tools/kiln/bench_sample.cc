// `kiln bench sample`: one next-token draw from a 151936-entry float32 logits
// row (Qwen's vocabulary): argmax alone, top-p 0.9, top-k 50, plain
// temperature sampling; time per token, plus torch (argmax; softmax + sort +
// cumsum + multinomial for top-p) with --peer-python. Latency cases: the row is
// warm in cache, as it is right after the LM head wrote it.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bandwidth.h"
#include "bench/harness.h"
#include "bench/options.h"
#include "bench/report.h"
#include "commands.h"
#include "internal/bench_hooks.h"
#include "kiln/binary.h"
#include "kiln/random.h"
#include "kiln/sampling.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct SampleOptions : bench::CommonOptions {
  std::string peer_python;
  int threads = 0;
  int64_t vocab = 151936;
};

int run_sample(SampleOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  const int64_t V = opt.quick ? 1000 : opt.vocab;
  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  const sys::RoofStats first = roof.measure(opt.quick ? 0.0 : 0.5, 3, 20);
  bench::Runner runner(roof, opt.runner_options());
  kiln::manual_seed(3);
  const Tensor logits = mul(randn({V}), Scalar(3.0));
  std::vector<float> scratch(static_cast<size_t>(V));
  Generator gen(1);
  json results = json::array(), peer_cases = json::array(), missing = json::array();
  struct Mode {
    const char* name;
    SamplingParams p;
    const char* peer_mode;
  };
  std::vector<Mode> modes(4);
  modes[0] = {"argmax", {}, "argmax"};
  modes[0].p.temperature = 0;
  modes[1] = {"top_p 0.9", {}, "top_p"};
  modes[1].p.top_p = 0.9;
  modes[2] = {"top_k 50", {}, nullptr};
  modes[2].p.top_k = 50;
  modes[3] = {"temperature 0.8", {}, nullptr};
  modes[3].p.temperature = 0.8;
  const float* src = logits.data<float>();
  for (const Mode& m : modes) {
    const std::string nm = std::string("sample ") + m.name + " V=" + std::to_string(V);
    // The runtime entry: the row is copied into scratch (penalties write there).
    bench::Result r = runner.latency_case(nm, opt.quick ? 20 : 200, [&] {
      std::copy(src, src + V, scratch.begin());
      volatile int64_t t = sample_row_(scratch.data(), V, m.p, nullptr, 0, gen);
      (void)t;
    });
    r.extra["vocab"] = V;
    r.extra["note"] = "per token, including a copy of the row into scratch";
    results.push_back(r.to_json());
    if (m.peer_mode)
      peer_cases.push_back(
          {{"name", nm}, {"kind", "sample"}, {"V", V}, {"mode", m.peer_mode}, {"top_p", 0.9}});
  }
  const json peer_info = bench::add_torch_peer(opt.peer_python,
                                               {{"cases", peer_cases},
                                                {"repeat", opt.repeat},
                                                {"warmup", opt.warmup},
                                                {"threads", kiln::num_threads()},
                                                {"flush_mb", 1}},
                                               results, missing);
  const sys::RoofStats all = runner.roof_stats();
  json doc = {{"command", "bench sample"},
              {"kiln_version", kiln::kVersion},
              {"machine", bench::machine_json(all.passes > 0 ? all : first)},
              {"quick", opt.quick},
              {"repeat", opt.repeat},
              {"results", results}};
  if (!peer_info.is_null()) doc["peers"] = peer_info;
  if (!missing.empty()) doc["missing"] = missing;
  char header[128];
  std::snprintf(header, sizeof header, "kiln %s bench sample: V=%lld, %d threads", kiln::kVersion,
                static_cast<long long>(V), kiln::num_threads());
  bench::emit_report(doc, opt.out, opt.json, header);
  return 0;
}

}  // namespace

Command add_bench_sample(CLI::App& bench) {
  auto opt = std::make_shared<SampleOptions>();
  CLI::App* app =
      bench.add_subcommand("sample", "Next-token sampling from a 151936-entry logits row: top-p vs argmax.");
  bench::add_common_options(*app, *opt, {.repeat = 15, .timed = "batches", .untimed = "batches"});
  add_threads_option(*app, opt->threads);
  app->add_option("--vocab", opt->vocab, "Vocabulary size (default 151936)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 31));
  app->add_option("--peer-python", opt->peer_python, "A Python with torch, to time torch side by side");
  return {app, [opt] { return run_sample(*opt); }};
}

}  // namespace kiln::cli
