// `kiln bench serve`: serving figures, measured by the Python module
// kiln.bench_serve (concurrent streaming clients against `kiln serve` and,
// with --peer-python, llama.cpp's server on the same file), with this
// machine's description added. Loopback only; bounded in requests and time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/options.h"
#include "bench/python_side.h"
#include "bench/report.h"
#include "commands.h"
#include "kiln/llm/model.h"
#include "kiln/sysinfo.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct ServeBenchOptions : bench::CommonOptions {
  std::string model, python, peer_python, clients = "1,4,16,64", dtypes = "fp8";
  int requests = 2, max_tokens = 64, context = 2048, threads = 0;
  double soak = 0;
};

// The engine's bound without HTTP: one batched decode step of B sequences
// (Model::forward_batch, B rows, each sequence 64 tokens in), median of 9, for
// each client count B. Total tokens/s = B / step time.
json decode_steps(const std::string& path, const std::string& dtype, const std::vector<int>& counts,
                  int context) {
  llm::LoadOptions lo;
  lo.weights = llm::weight_format_from_name(dtype);
  lo.max_context = context;
  auto m = llm::Model::load(path, lo);
  const int64_t V = m->config().vocab_size;
  json out = json::array();
  for (int B : counts) {
    std::vector<llm::Model::SequenceId> ids;
    std::vector<std::vector<int32_t>> toks(static_cast<size_t>(B));
    for (int i = 0; i < B; ++i) {
      ids.push_back(m->open_sequence());
      for (int t = 0; t < 64 + 16; ++t) toks[size_t(i)].push_back(int32_t((1009 * i + 7 * t + 11) % V));
    }
    std::vector<llm::Model::BatchItem> items;
    for (int i = 0; i < B; ++i) {  // prefill 64 tokens each, a few sequences a call
      items.push_back({ids[size_t(i)], std::span<const int32_t>(toks[size_t(i)].data(), 64)});
      if (int64_t(items.size()) * 64 + 64 > m->max_batch_tokens() || i == B - 1) {
        m->forward_batch(items);
        items.clear();
      }
    }
    std::vector<double> t;
    for (int s = 0; s < 9; ++s) {
      items.clear();
      for (int i = 0; i < B; ++i)
        items.push_back({ids[size_t(i)], std::span<const int32_t>(toks[size_t(i)].data() + 64 + s, 1)});
      const auto t0 = std::chrono::steady_clock::now();
      m->forward_batch(items);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    for (auto id : ids) m->close_sequence(id);
    std::sort(t.begin(), t.end());
    const double med = t[t.size() / 2];
    out.push_back({{"name", "decode step " + std::to_string(B) + " rows"},
                   {"rows", B},
                   {"dtype", dtype},
                   {"median_s", med},
                   {"min_s", t.front()},
                   {"max_s", t.back()},
                   {"tokens_per_s", B / med}});
  }
  return out;
}

int run_bench_serve(ServeBenchOptions& opt) {
  const std::string py = bench::find_python(opt.python);
  if (py.empty()) {
    std::fprintf(stderr, "kiln bench serve: no python next to the kiln binary; pass --python PATH\n");
    return 1;
  }
  const std::string model = resolve_model_path(opt.model, opt.json);
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (opt.quick) {
    opt.clients = "1,2";
    opt.requests = 1;
    opt.max_tokens = 8;
  }
  std::string args = "--kiln " + bench::shell_quoted(self) + " --model " + bench::shell_quoted(model) +
                     " --clients " + bench::shell_quoted(opt.clients) + " --requests " +
                     std::to_string(opt.requests) + " --max-tokens " + std::to_string(opt.max_tokens) +
                     " --context " + std::to_string(opt.context) + " --threads " +
                     std::to_string(opt.threads);
  args += " --dtypes " + bench::shell_quoted(opt.dtypes);
  if (opt.soak > 0) args += " --soak " + std::to_string(opt.soak);
  if (!opt.peer_python.empty()) args += " --peer-python " + bench::shell_quoted(opt.peer_python);
  if (!opt.json) std::fprintf(stderr, "kiln bench serve: running %s -m kiln.bench_serve ...\n", py.c_str());
  const bench::PythonRun pr = bench::run_python_module(py, "kiln.bench_serve", args);
  if (!pr.ok) {
    std::fprintf(stderr, "kiln bench serve: %s\n", pr.why.c_str());
    return 1;
  }
  std::vector<int> counts;
  for (size_t at = 0; at <= opt.clients.size();) {
    const size_t comma = std::min(opt.clients.find(',', at), opt.clients.size());
    counts.push_back(std::stoi(opt.clients.substr(at, comma - at)));
    at = comma + 1;
  }
  const std::string first_dtype = opt.dtypes.substr(0, opt.dtypes.find(','));
  json steps = decode_steps(model, first_dtype, counts, opt.context);
  json machine = bench::machine_json(sys::RoofStats{});
  machine.erase("roof");
  machine.erase("roof_gbps");
  json doc = pr.doc;
  doc["command"] = "bench serve";
  doc["kiln_version"] = kiln::kVersion;
  doc["machine"] = machine;
  doc["decode_steps"] = steps;
  std::string table = doc.value("table", std::string());
  table += "engine alone (Model::forward_batch, " + first_dtype + "):";
  for (const json& r : steps) {
    char b[96];
    std::snprintf(b, sizeof b, " %d rows %.2f ms (%.0f tok/s);", r["rows"].get<int>(),
                  r["median_s"].get<double>() * 1e3, r["tokens_per_s"].get<double>());
    table += b;
  }
  table += "\n";
  if (!opt.out.empty()) {
    std::ofstream f(opt.out);
    f << doc.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "kiln bench serve: cannot write %s\n", opt.out.c_str());
      return 1;
    }
  }
  if (opt.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  std::printf("kiln %s bench serve: %s, %s%s\n%s", kiln::kVersion, sys::system_info().cpu_model.c_str(),
              model.c_str(), opt.quick ? "; --quick: a smoke run, not a measurement" : "", table.c_str());
  for (const json& mi : doc.value("missing", json::array()))
    std::printf("  not measured: %s (%s)\n", mi.value("name", "").c_str(), mi.value("why", "").c_str());
  return 0;
}

}  // namespace

Command add_bench_serve(CLI::App& bench) {
  auto opt = std::make_shared<ServeBenchOptions>();
  CLI::App* app = bench.add_subcommand(
      "serve",
      "kiln serve under concurrent streaming clients: total and per-stream tokens/s, time to first token.");
  app->footer(
      "Starts `kiln serve MODEL` on a free loopback port (and llama.cpp's server on the same file with "
      "--peer-python, a Python with llama-cpp-python[server]); for each client count, that many clients each "
      "stream --requests chat requests of --max-tokens tokens. Reports total tokens/s, per-stream tokens/s "
      "and "
      "time to first token p50/p99 per server and count, kiln's 16-client over 1-client ratio and its ratio "
      "to "
      "llama.cpp at 16 clients, then sends malformed requests and checks the server still serves. --soak S "
      "keeps 16 clients busy for S seconds and samples kiln's resident memory.");
  bench::CommonDefaults d;
  d.repeat = 1;
  d.quick_repeat = 1;
  d.warmup = -1;
  d.timed = "(unused: --requests sets the count)";
  bench::add_common_options(*app, *opt, d);
  app->add_option("model", opt->model, "A .gguf file (default: the default model)");
  app->add_option("--clients", opt->clients, "Concurrent clients, comma-separated")->capture_default_str();
  app->add_option("--requests", opt->requests, "Requests per client, one after another (4 at 1 client)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app->add_option("--max-tokens", opt->max_tokens, "Tokens per request")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--context", opt->context, "Each server's context")
      ->check(CLI::Range(64, 1 << 20))
      ->capture_default_str();
  add_threads_option(*app, opt->threads);
  app->add_option("--dtypes", opt->dtypes,
                  "kiln's weight formats, comma-separated, each its own server (fp8, native: the file's own "
                  "blocks, the bytes per weight llama.cpp reads, bf16, f32)")
      ->capture_default_str();
  app->add_option("--soak", opt->soak, "Seconds of 16 busy clients on kiln, watching its memory (0: none)")
      ->check(CLI::Range(0.0, 86400.0));
  app->add_option("--python", opt->python, "Python with kiln installed (default: a python next to kiln)");
  app->add_option("--peer-python", opt->peer_python,
                  "A Python with llama-cpp-python[server], for llama.cpp's server");
  return {app, [opt] { return run_bench_serve(*opt); }};
}

}  // namespace kiln::cli
