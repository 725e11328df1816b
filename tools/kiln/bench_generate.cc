// `kiln bench generate`: end-to-end decode and prefill speed of real models,
// judged against the memory bus and side by side with llama.cpp and
// transformers in one run (bench/README.md, "`kiln bench generate`: whole models").
//
// Each kiln case (model x weight dtype) runs in a child process (this binary,
// re-executed with --one), so its resident and peak memory are its own:
//   load -> peak RSS during load; greedy generation -> RSS while generating;
//   then R timed generations, each after one pass of the read roof.
// Decode bandwidth bound: bytes one token must read (the weights the forward
// read, Model::bytes_read_last_forward(), MoE: only the selected experts; plus
// the K/V cache read at that position) / the roof measured next to it.
#include "bench_generate.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/options.h"
#include "bench/python_side.h"
#include "bench_generate_peers.h"
#include "cli_io.h"
#include "commands.h"
#include "kiln/llm/default_model.h"
#include "kiln/llm/model.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"

namespace kiln::cli {
namespace {

using namespace genbench;

using bench::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------- the whole run

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::string quote(const std::string& s) {
  std::string r = "'";
  for (char ch : s) r += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return r + "'";
}

// Runs `kiln bench generate --one` for one model and dtype; the child's JSON.
json run_child(const GenOptions& opt, const std::string& name, const std::string& path,
               const std::string& dtype, std::string& why) {
  std::ostringstream cmd;
  cmd << quote(self_exe()) << " bench generate --one --one-path " << quote(path) << " --one-name "
      << quote(name) << " --dtypes " << dtype << " --tokens " << opt.tokens << " --prompt-tokens "
      << opt.prompt_tokens << " --repeat " << opt.repeat << (opt.quick ? " --quick" : "")
      << (opt.split ? " --split" : "") << " 2>&1";
  std::fflush(nullptr);
  std::string out;
  int code = -1;
  if (FILE* p = popen(cmd.str().c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    code = pclose(p);
  }
  const size_t brace = out.find('{');
  if (code == 0 && brace != std::string::npos) {
    try {
      return json::parse(out.substr(brace));
    } catch (const std::exception& e) {
      why = std::string("bad JSON from the kiln case: ") + e.what();
      return json();
    }
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const size_t nl = out.find_last_of('\n');
  why = "kiln case failed: " + (nl == std::string::npos ? out : out.substr(nl + 1));
  return json();
}

// What a model name stands for: kiln's source, llama.cpp's GGUF per kiln
// dtype (equal bytes per weight), transformers' source.
struct ModelSpec {
  std::string name, kiln_path, hf_path;
  std::vector<std::string> dtypes;
  std::vector<std::pair<std::string, std::string>> llama;  // kiln dtype -> GGUF
  std::vector<std::string> hf_dtypes;                      // torch dtypes to run
};

std::string bench_dir(const GenOptions& opt) {
  return opt.model_dir.empty() ? llm::cache_dir() + "/bench" : opt.model_dir;
}

ModelSpec resolve(const GenOptions& opt, const std::string& m) {
  ModelSpec s;
  const std::string dir = bench_dir(opt);
  auto have = [](const std::string& p) { return fs::exists(p); };
  if (m == "default") {
    s.name = "smollm2-135m";
    s.kiln_path = opt.default_model.empty() ? llm::ensure_default_model() : opt.default_model;
    s.hf_path = s.kiln_path;  // transformers dequantizes the same Q4_1 GGUF
    s.dtypes = {"fp8", "bf16", "f32"};
    // native runs the file's own Q4_1 blocks: llama.cpp runs the same file.
    s.llama = {{"fp8", dir + "/smollm2-135m-instruct.q8_0.gguf"},
               {"bf16", dir + "/smollm2-135m-instruct.bf16.gguf"},
               {"native", s.kiln_path}};
    s.hf_dtypes = {"bf16", "f32"};
  } else if (m == "moe") {
    const std::string base = dir + "/qwen3-30b-a3b-widths-L" + std::to_string(opt.moe_layers);
    s.name = "qwen3-30b-a3b-widths-L" + std::to_string(opt.moe_layers);
    s.kiln_path = base;
    if (!have(base + "/config.json"))
      throw ValueError("[bench generate] no synthetic MoE at " + base +
                       ": run `python scripts/make_bench_models.py --only moe` first");
    s.hf_path = base;
    s.dtypes = {"fp8", "bf16"};  // f32 would need ~4x the bf16 memory
    s.llama = {{"fp8", base + ".q8_0.gguf"}, {"bf16", base + ".bf16.gguf"}};
    s.hf_dtypes = {"bf16"};
  } else {
    s.name = model_name(m);  // "dir//" and "dir/." name "dir" too
    s.kiln_path = s.hf_path = m;
    s.dtypes = {"fp8", "bf16", "f32"};
    s.hf_dtypes = {"bf16", "f32"};
    if (m.size() > 5 && m.substr(m.size() - 5) == ".gguf") s.llama = {{"native", m}};  // the same file
  }
  if (!opt.dtypes.empty()) s.dtypes = opt.dtypes;
  for (auto it = s.llama.begin(); it != s.llama.end();) it = have(it->second) ? it + 1 : s.llama.erase(it);
  return s;
}

// The peer a kiln dtype is compared with: llama.cpp at equal bytes per weight;
// transformers at the same dtype (fp8: its bf16, the narrowest it runs on CPU).
std::string hf_dtype_for(const std::string& kiln_dtype) { return kiln_dtype == "f32" ? "f32" : "bf16"; }

void attach_peer(json& entry, const std::string& peer, const json& doc) {
  const double t = doc["decode_s_per_token"]["median"].get<double>();
  entry["peer_median_s"][peer] = t;
  entry["speedup_vs_" + peer] = t / entry["median_s"].get<double>();
  entry["peers"][peer] = doc;
}

int run_generate(GenOptions opt) {
  if (opt.quick) {
    opt.tokens = std::min(opt.tokens, 4);
    opt.prompt_tokens = std::min(opt.prompt_tokens, 8);
    opt.repeat = 1;
  }
  if (opt.one) {
    const json r = run_case(opt);
    std::printf("%s\n", r.dump().c_str());
    return 0;
  }
  if (opt.models.empty()) {
    if (opt.quick) throw ValueError("[bench generate] --quick needs --models PATH (e.g. a tiny test model)");
    opt.models = {"default", "moe"};
  }
  const bool peers = !opt.quick;
  json results = json::array(), missing = json::array(), roof_samples = json::array();
  for (const std::string& m : opt.models) {
    ModelSpec spec;
    try {
      spec = resolve(opt, m);
    } catch (const std::exception& e) {
      missing.push_back({{"name", m}, {"why", e.what()}});
      continue;
    }
    json hf_runs = json::object();
    for (const std::string& dt : spec.dtypes) {
      std::fprintf(stderr, "kiln bench generate: %s %s ...\n", spec.name.c_str(), dt.c_str());
      std::string why;
      json k = run_child(opt, spec.name, spec.kiln_path, dt, why);
      if (k.is_null()) {
        missing.push_back({{"name", spec.name + " " + dt}, {"why", why}});
        continue;
      }
      for (const auto& s : k["roof_samples"]) roof_samples.push_back(s);
      json e = {{"name", spec.name + " decode " + dt},
                {"unit", "GB/s"},
                {"median_s", k["decode_s_per_token"]["median"]},
                {"min_s", k["decode_s_per_token"]["min"]},
                {"max_s", k["decode_s_per_token"]["max"]},
                {"repeat", opt.repeat},
                {"bytes", k["bytes_per_token"]["total"]},
                {"gbps", k["gbps"]},
                {"roof_gbps", k["roof_gbps"]},
                {"roof_fraction", k["roof_fraction"]},
                {"decode_tok_s", k["decode_tok_s"]},
                {"prefill_tok_s", k["prefill_tok_s"]},
                {"kiln", k}};
      e["peer_median_s"] = json::object();
      if (peers) {
        const json base = {{"prompt_ids", k["prompt_ids"]},
                           {"tokens", opt.tokens},
                           {"repeat", opt.repeat},
                           {"threads", kiln::num_threads()}};
        for (const auto& [kdt, gguf] : spec.llama) {
          if (kdt != dt) continue;
          const std::string py = opt.llama_python;
          if (py.empty()) {
            missing.push_back(
                {{"name", "llama.cpp " + spec.name + " " + dt}, {"why", "pass --llama-python PATH"}});
            continue;
          }
          std::fprintf(stderr, "kiln bench generate: llama.cpp %s ...\n", fs::path(gguf).filename().c_str());
          json cfg = base;
          cfg["kind"] = "llama_cpp";
          cfg["path"] = gguf;
          const GeneratePeer p = run_generate_peer(py, cfg);
          if (p.ok) {
            attach_peer(e, "llama.cpp", p.doc);
            e["peers"]["llama.cpp"]["gguf"] = gguf;
          } else {
            missing.push_back({{"name", "llama.cpp " + spec.name + " " + dt}, {"why", p.why}});
          }
        }
        const std::string hdt = hf_dtype_for(dt);
        if (std::find(spec.hf_dtypes.begin(), spec.hf_dtypes.end(), hdt) != spec.hf_dtypes.end()) {
          if (opt.peer_python.empty()) {
            if (!hf_runs.contains("_noted"))
              missing.push_back({{"name", "transformers " + spec.name}, {"why", "pass --peer-python PATH"}});
            hf_runs["_noted"] = true;
          } else {
            if (!hf_runs.contains(hdt)) {
              std::fprintf(stderr, "kiln bench generate: transformers %s %s ...\n", spec.name.c_str(),
                           hdt.c_str());
              json cfg = base;
              cfg["kind"] = "transformers";
              cfg["tokens"] = std::min(opt.tokens, opt.hf_tokens);
              cfg["repeat"] = std::min(opt.repeat, opt.hf_repeat);
              cfg["path"] = spec.hf_path;
              cfg["dtype"] = hdt;
              const GeneratePeer p = run_generate_peer(opt.peer_python, cfg);
              hf_runs[hdt] = p.ok ? p.doc : json();
              if (!p.ok)
                missing.push_back({{"name", "transformers " + spec.name + " " + hdt}, {"why", p.why}});
            }
            if (!hf_runs[hdt].is_null()) attach_peer(e, "transformers", hf_runs[hdt]);
          }
        }
      }
      results.push_back(e);
    }
  }
  std::vector<double> rs;
  for (const auto& s : roof_samples) rs.push_back(s.get<double>());
  sys::RoofStats roof = sys::summarize_gbps(rs);
  roof.threads = kiln::num_threads();
  roof.bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  double load[3] = {0, 0, 0};
  const bool have_load = getloadavg(load, 3) == 3;
  json doc = {
      {"kiln_version", kiln::kVersion},
      {"command", "bench generate"},
      {"machine", bench::machine_json(roof)},
      {"load_average", have_load ? json({load[0], load[1], load[2]}) : json()},
      {"settings",
       {{"prompt_tokens", opt.prompt_tokens},
        {"decode_tokens", opt.tokens},
        {"repeat", opt.repeat},
        {"quick", opt.quick},
        {"decoding", "greedy (argmax), same prompt ids for every engine"},
        {"timing_rule", "each timed generation follows one pass of the read roof"},
        {"bound", "bytes per token = weights read (MoE: selected experts) + K/V read at that position"}}},
      {"results", results},
      {"missing", missing}};
  if (!opt.out.empty()) write_file(opt.out, doc.dump(2) + "\n");
  if (opt.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  std::printf(
      "kiln %s bench generate: %d prompt + %d decode tokens, greedy, %d threads, roof %.1f GB/s, load %.2f\n",
      kiln::kVersion, opt.prompt_tokens, opt.tokens, kiln::num_threads(), roof.median_gbps, load[0]);
  std::printf("%-34s %9s %9s %7s %9s %10s %10s %9s %9s\n", "case", "decode/s", "bound/s", "of roof",
              "prefill/s", "llama.cpp", "transf.", "RSS MB", "limit MB");
  for (const auto& e : results) {
    const json& k = e["kiln"];
    auto peer = [&](const char* p) {
      char b[32] = "-";
      if (e["peer_median_s"].contains(p))
        std::snprintf(b, sizeof b, "%.1f", 1.0 / e["peer_median_s"][p].get<double>());
      return std::string(b);
    };
    std::printf("%-34s %9.1f %9.1f %6.0f%% %9.1f %10s %10s %9.0f %9.0f\n",
                e["name"].get<std::string>().c_str(), k["decode_tok_s"].get<double>(),
                k["bound_tok_s"].get<double>(), k["roof_fraction"].get<double>() * 100,
                k["prefill_tok_s"].get<double>(), peer("llama.cpp").c_str(), peer("transformers").c_str(),
                k["memory"]["rss_generating"].get<double>() / 1e6, k["memory"]["limit"].get<double>() / 1e6);
    if (k.contains("split")) {  // --split: where a decode step's time goes
      const json& s = k["split"];
      std::printf("  %.2f ms per token:", s["decode_s_per_token"].get<double>() * 1e3);
      for (const auto& [group, sec] : s["linears_s"].items())
        std::printf(" %s %.2f ms,", group.c_str(), sec.get<double>() * 1e3);
      std::printf(" rest %.2f ms (linears alone read %.1f GB/s)\n", s["rest_s"].get<double>() * 1e3,
                  s["linears_gbps"].get<double>());
    }
  }
  for (const auto& mm : missing)
    std::printf("missing: %s: %s\n", mm["name"].get<std::string>().c_str(),
                mm["why"].get<std::string>().c_str());
  return 0;
}

}  // namespace

Command add_bench_generate(CLI::App& bench) {
  auto opt = std::make_shared<GenOptions>();
  CLI::App* app = bench.add_subcommand(
      "generate",
      "End-to-end decode/prefill tok/s of real models vs the memory roof, llama.cpp and transformers.");
  bench::add_common_options(
      *app, *opt,
      {.repeat = 3,
       .quick_repeat = 0,  // run_generate: --quick makes it 1
       .max_repeat = 100,
       .warmup = -1,
       .timed = "generations",
       .quick_help = "A few tokens, one repetition, no peers: a smoke run (needs --models)"});
  app->add_option("--models", opt->models,
                  "default (SmolLM2-135M), moe (synthetic Qwen3-30B-A3B widths) and/or model paths; "
                  "default: default moe");
  app->add_option("--dtypes", opt->dtypes,
                  "kiln weight formats to run (fp8 bf16 f32 native; default per model: fp8 bf16 f32)");
  app->add_option("--tokens", opt->tokens, "Tokens to decode per generation (default 64)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--prompt-tokens", opt->prompt_tokens, "Prompt length in tokens (default 32)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--peer-python", opt->peer_python, "A Python with torch + transformers (+ gguf) as a peer");
  app->add_option("--hf-tokens", opt->hf_tokens, "Decode tokens per transformers run (default 16)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--hf-repeat", opt->hf_repeat, "Timed transformers runs (default 1, after a short warm-up)")
      ->check(CLI::Range(1, 100));
  app->add_option("--llama-python", opt->llama_python, "A Python with llama-cpp-python as a peer");
  app->add_option("--default-model", opt->default_model,
                  "The default model's GGUF (default: fetched into the cache)");
  app->add_option("--model-dir", opt->model_dir,
                  "Where scripts/make_bench_models.py wrote the peer GGUFs and the synthetic MoE "
                  "(default: <cache>/bench)");
  app->add_option("--moe-layers", opt->moe_layers, "Layers of the synthetic MoE to use (default 4)");
  app->add_flag("--split", opt->split,
                "Also time every linear layer alone (grouped) to show where decode time goes");
  app->add_flag("--one", opt->one)->group("");
  app->add_option("--one-path", opt->one_path)->group("");
  app->add_option("--one-name", opt->one_name)->group("");
  return {app, [opt] { return run_generate(*opt); }};
}

}  // namespace kiln::cli
