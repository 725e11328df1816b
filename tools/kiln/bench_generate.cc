// `kiln bench generate`: end-to-end decode and prefill speed of real models,
// judged against the memory bus and side by side with llama.cpp and
// transformers in one run (BENCHMARKS.md).
//
// Each kiln case (model x weight dtype) runs in a child process (this binary,
// re-executed with --one), so its resident and peak memory are its own:
//   load -> peak RSS during load; greedy generation -> RSS while generating;
//   then R timed generations, each after one pass of the read roof.
// Decode bandwidth bound: bytes one token must read (the weights the forward
// read, Model::bytes_read_last_forward(), MoE: only the selected experts; plus
// the K/V cache read at that position) / the roof measured next to it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/allocator.h"
#include "kiln/bench/harness.h"
#include "kiln/bench/python_side.h"
#include "kiln/bench_generate_peers.h"
#include "kiln/commands.h"
#include "kiln/dtype.h"
#include "kiln/linear.h"
#include "kiln/llm/default_model.h"
#include "kiln/llm/model.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"

namespace kiln::cli {
namespace {

using bench::json;
namespace fs = std::filesystem;

struct GenOptions {
  bool json = false, quick = false;
  std::string out, peer_python, llama_python, default_model, model_dir;
  std::vector<std::string> models;  // "default", "moe", or paths
  std::vector<std::string> dtypes;  // kiln weight formats
  int tokens = 64, prompt_tokens = 32, repeat = 3, moe_layers = 4;
  int hf_tokens = 16, hf_repeat = 1;  // transformers is slow: fewer tokens per timed run
  // --one: run a single kiln case in this process and print its JSON.
  bool one = false, split = false;
  std::string one_path, one_name;
};

// ---------------------------------------------------------------- /proc memory

int64_t status_bytes(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(f, line))
    if (line.rfind(k, 0) == 0) return std::atoll(line.c_str() + k.size()) * 1024;
  return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false where not allowed.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---------------------------------------------------------------- one kiln case

// A fixed English prompt, tokenized by the model's own tokenizer when it has
// one; otherwise (test fixtures without a tokenizer) fixed ids.
std::vector<int32_t> prompt_ids(const llm::Model& m, int n) {
  static const char* kText =
      "Once upon a time, in a village at the edge of a great forest, there lived an old clockmaker "
      "who repaired every clock in the valley. Each morning he opened his shop, wound the tall clock "
      "by the door, and listened to the town wake up around him while the bells rang out the hour.";
  std::vector<int32_t> ids;
  try {
    ids = m.tokenizer().encode(kText);
  } catch (const std::exception&) {
    ids.clear();
  }
  const int64_t V = m.config().vocab_size;
  for (int32_t t : ids)
    if (t < 0 || t >= V) ids.clear();
  if (ids.empty())
    for (int i = 0; i < n; ++i) ids.push_back(int32_t((3 + 7 * i) % V));
  std::vector<int32_t> out;
  while (int(out.size()) < n) out.push_back(ids[out.size() % ids.size()]);
  return out;
}

int32_t argmax_last(const Tensor& logits) {
  // logits: [1, V] float32 (contiguous scratch)
  const int64_t V = logits.shape().back();
  const float* p = logits.data<float>() + (logits.numel() - V);
  return int32_t(std::max_element(p, p + V) - p);
}

// K and V bytes the attention of one token at position `pos` reads (all layers).
double kv_read_bytes(const io::ModelConfig& c, int64_t pos, DType kv) {
  return double(c.num_hidden_layers) * 2.0 * double(c.num_key_value_heads) * double(c.head_dim) *
         double(pos + 1) * double(itemsize(kv));
}

// The weight bytes one decode token must read, counted from the weights as
// held (independently of the runtime's own counter): every tensor once, one
// embedding row (all of it again when tied as the head), and top_k of the E
// stacked experts per MoE layer.
double decode_weight_bytes(const llm::Model& m) {
  const auto named = m.named_weights();
  const io::ModelConfig& c = m.config();
  bool has_head = false;
  for (const auto& [n, t] : named) has_head = has_head || n.rfind("lm_head.", 0) == 0;
  double b = 0;
  for (const auto& [n, t] : named) {
    const double nb = double(t.nbytes());
    if (n == "model.embed_tokens.weight")
      b += nb / double(t.size(0)) + (has_head ? 0.0 : nb);
    else if (n.find(".experts.") != std::string::npos && c.num_experts > 0)
      b += nb * double(c.num_experts_per_tok) / double(c.num_experts);
    else
      b += nb;
  }
  return b;
}

// Where decode time goes: every linear layer of the model timed alone as the
// runtime calls it (linear_out on one float32 row), grouped, against the
// measured time per token. MoE layers: top_k experts of each layer.
json decode_split(const llm::Model& m, double per_token_s) {
  const auto named = m.named_weights();
  const io::ModelConfig& c = m.config();
  struct Call {
    std::string group;
    Tensor w, scale;
  };
  std::vector<Call> calls;
  auto find = [&](const std::string& name) {
    for (const auto& [n, t] : named)
      if (n == name) return t;
    return Tensor();
  };
  for (const auto& [n, t] : named) {
    if (t.dim() < 2 || n == "model.embed_tokens.weight" || !n.ends_with(".weight")) continue;
    const std::string base = n.substr(0, n.size() - 7);
    Tensor scale = find(base + ".weight_scale");
    if (!scale.defined()) scale = find(base + ".weight_scale_inv");
    if (t.dim() == 3) {  // stacked experts [E, N, K]: top_k of them
      for (int64_t e = 0; e < c.num_experts_per_tok; ++e) {
        const int64_t idx = (e * 17 + 5) % t.size(0);
        calls.push_back({"experts", t.select(0, idx), scale.defined() ? scale.select(0, idx) : Tensor()});
      }
      continue;
    }
    std::string g = n.find("self_attn") != std::string::npos    ? "attention linears"
                    : n.rfind("lm_head", 0) == 0                ? "lm_head"
                    : n.find(".mlp.gate.") != std::string::npos ? "router"
                                                                : "mlp linears";
    calls.push_back({g, t, scale});
  }
  if (!find("lm_head.weight").defined())
    calls.push_back({"lm_head", find("model.embed_tokens.weight"), Tensor()});
  std::vector<Tensor> xs, ys;
  for (const auto& cl : calls) {
    xs.push_back(full({1, cl.w.size(1)}, 0.01, DType::Float32));
    ys.push_back(empty({1, cl.w.size(0)}));
  }
  json groups = json::object();
  double total = 0, bytes = 0;
  for (int pass = 0; pass < 3; ++pass) {
    std::map<std::string, double> t;
    for (size_t i = 0; i < calls.size(); ++i) {
      const double a = bench::now_s();
      linear_out(xs[i], calls[i].w, calls[i].scale, Tensor(), ys[i]);
      t[calls[i].group] += bench::now_s() - a;
    }
    if (pass < 2) continue;  // the last pass is the one reported
    for (const auto& [g, s] : t) {
      groups[g] = s;
      total += s;
    }
  }
  for (const auto& cl : calls)
    bytes += double(cl.w.nbytes()) + (cl.scale.defined() ? double(cl.scale.nbytes()) : 0.0);
  return {
      {"linear_calls", calls.size()},
      {"linears_s", groups},
      {"linears_total_s", total},
      {"linears_bytes", bytes},
      {"linears_gbps", total > 0 ? bytes / total / 1e9 : 0},
      {"decode_s_per_token", per_token_s},
      {"rest_s", per_token_s - total},
      {"note", "rest = attention over the cache, norms, rope, routing, embedding, thread fork/join, ..."}};
}

json run_one(const GenOptions& opt) {
  json r;
  const llm::WeightFormat wf = llm::weight_format_from_name(opt.dtypes.at(0));
  llm::LoadOptions lo;
  lo.weights = wf;
  const int64_t rss0 = status_bytes("VmRSS");
  reset_peak_rss();
  const double t0 = bench::now_s();
  std::unique_ptr<llm::Model> m = llm::Model::load(opt.one_path, lo);
  const double load_s = bench::now_s() - t0;
  const int64_t peak_load = status_bytes("VmHWM"), rss_loaded = status_bytes("VmRSS");
  const io::ModelConfig& c = m->config();
  const int P = opt.prompt_tokens, N = opt.tokens;
  const std::vector<int32_t> prompt = prompt_ids(*m, P);

  // One generation: prefill P tokens, then N greedy decode steps.
  struct Gen {
    double prefill_s = 0, decode_s = 0, weight_bytes = 0, kv_bytes = 0;
    std::vector<int32_t> ids;
  };
  auto generate = [&] {
    Gen g;
    m->reset();
    const double a = bench::now_s();
    Tensor logits = m->forward(prompt);
    g.prefill_s = bench::now_s() - a;
    int32_t tok = argmax_last(logits);
    for (int i = 0; i < N; ++i) {
      g.ids.push_back(tok);
      const int64_t pos = m->position();
      const int32_t one[1] = {tok};
      const double s = bench::now_s();
      logits = m->forward(std::span<const int32_t>(one, 1));
      g.decode_s += bench::now_s() - s;
      g.weight_bytes += double(m->bytes_read_last_forward());
      g.kv_bytes += kv_read_bytes(c, pos, lo.kv_dtype);
      tok = argmax_last(logits);
    }
    g.weight_bytes /= N;
    g.kv_bytes /= N;
    return g;
  };

  // Warm-up generation; memory is read while the model is loaded and its cache filled.
  reset_peak_rss();
  const Gen warm = generate();
  const int64_t rss_gen = status_bytes("VmRSS"), peak_gen = status_bytes("VmHWM");
  const int64_t rss_anon = status_bytes("RssAnon"), rss_file = status_bytes("RssFile");
  // kiln's caching allocator keeps freed blocks (load-time temporaries among
  // them); what RSS would be without them tells load leftovers from live data.
  const MemoryStats ms = memory_stats();
  empty_cache();
  const int64_t rss_emptied = status_bytes("VmRSS");

  // The roof buffer is allocated only now, so it is not in the memory figures.
  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  roof.measure(opt.quick ? 0.0 : 0.3, 2, 10);
  std::vector<double> prefill, per_tok, roofs;
  Gen last;
  for (int rep = 0; rep < opt.repeat; ++rep) {
    roofs.push_back(roof.pass_gbps());
    last = generate();
    prefill.push_back(last.prefill_s);
    per_tok.push_back(last.decode_s / N);
  }
  const double tok_s = median(per_tok), roof_gbps = median(roofs);
  // The bound's numerator: the bench's own count of the weights a one-token
  // forward reads (exact for T = 1), beside the runtime's counter.
  const double counted = decode_weight_bytes(*m);
  const double bytes_tok = counted + last.kv_bytes;
  const double gbps = tok_s > 0 ? bytes_tok / tok_s / 1e9 : 0;
  const double weights = double(m->weight_bytes()), kv = double(m->kv_cache_bytes());
  const double limit = 1.15 * (weights + kv) + 100e6;

  r["model"] = opt.one_name;
  r["source"] = opt.one_path;
  r["dtype"] = llm::weight_format_name(wf);
  r["architecture"] = c.architecture;
  r["config"] = c.summary();
  r["prompt_tokens"] = P;
  r["decode_tokens"] = N;
  r["prompt_ids"] = prompt;
  r["greedy_ids"] =
      std::vector<int32_t>(last.ids.begin(), last.ids.begin() + std::min<size_t>(8, last.ids.size()));
  r["greedy_repeatable"] = last.ids == warm.ids;
  r["threads"] = kiln::num_threads();
  r["load_s"] = load_s;
  r["weight_bytes"] = weights;
  r["kv_cache_bytes"] = kv;
  r["prefill_s"] = median(prefill);
  r["prefill_tok_s"] = median(prefill) > 0 ? P / median(prefill) : 0;
  r["decode_s_per_token"] = {{"median", tok_s},
                             {"min", *std::min_element(per_tok.begin(), per_tok.end())},
                             {"max", *std::max_element(per_tok.begin(), per_tok.end())}};
  r["decode_tok_s"] = tok_s > 0 ? 1.0 / tok_s : 0;
  r["bytes_per_token"] = {{"weights", counted},
                          {"weights_runtime_counter", last.weight_bytes},
                          {"kv", last.kv_bytes},
                          {"total", bytes_tok}};
  r["roof_gbps"] = roof_gbps;
  r["roof_samples"] = roofs;
  r["gbps"] = gbps;
  r["bound_tok_s"] = bytes_tok > 0 ? roof_gbps * 1e9 / bytes_tok : 0;
  r["roof_fraction"] = roof_gbps > 0 ? gbps / roof_gbps : 0;
  r["memory"] = {{"rss_before_load", rss0},
                 {"peak_during_load", peak_load},
                 {"rss_after_load", rss_loaded},
                 {"rss_generating", rss_gen},
                 {"rss_anon", rss_anon},
                 {"rss_file", rss_file},
                 {"peak_generating", peak_gen},
                 {"allocator_live", ms.current_bytes},
                 {"allocator_reserved", ms.reserved_bytes},
                 {"rss_after_empty_cache", rss_emptied},
                 {"weights_plus_kv", weights + kv},
                 {"limit", limit},
                 {"generate_over_weights_kv", (rss_gen) / (weights + kv)},
                 {"load_peak_over_weights_kv", (peak_load) / (weights + kv)},
                 {"ok_generate", double(rss_gen) <= limit},
                 {"ok_load", double(peak_load) <= limit}};
  if (opt.split) r["split"] = decode_split(*m, tok_s);
  return r;
}

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
    s.llama = {{"fp8", dir + "/smollm2-135m-instruct.q8_0.gguf"},
               {"bf16", dir + "/smollm2-135m-instruct.bf16.gguf"}};
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
    s.name = fs::path(m).filename().string();
    if (s.name.empty()) s.name = fs::path(m).parent_path().filename().string();
    s.kiln_path = s.hf_path = m;
    s.dtypes = {"fp8", "bf16", "f32"};
    s.hf_dtypes = {"bf16", "f32"};
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
    const json r = run_one(opt);
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
  if (!opt.out.empty()) std::ofstream(opt.out) << doc.dump(2) << "\n";
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
  app->add_flag("--json", opt->json, "Print one JSON object instead of the table");
  app->add_option("--out", opt->out, "Also write the JSON object to FILE");
  app->add_flag("--quick", opt->quick,
                "A few tokens, one repetition, no peers: a smoke run (needs --models)");
  app->add_option("--models", opt->models,
                  "default (SmolLM2-135M), moe (synthetic Qwen3-30B-A3B widths) and/or model paths; "
                  "default: default moe");
  app->add_option("--dtypes", opt->dtypes, "kiln weight formats to run (fp8 bf16 f32; default per model)");
  app->add_option("--tokens", opt->tokens, "Tokens to decode per generation (default 64)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--prompt-tokens", opt->prompt_tokens, "Prompt length in tokens (default 32)")
      ->check(CLI::Range(1, 4096));
  app->add_option("--repeat", opt->repeat, "Timed generations per case (default 3)")
      ->check(CLI::Range(1, 100));
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
