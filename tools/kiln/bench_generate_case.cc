// One kiln case of `kiln bench generate` (see bench_generate.h), run in a
// child process so its resident and peak memory are its own:
//   load -> peak RSS during load; greedy generation -> RSS while generating;
//   then R timed generations, each after one pass of the read roof.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench_generate.h"
#include "kiln/allocator.h"
#include "kiln/block_quant.h"
#include "kiln/dtype.h"
#include "kiln/linear.h"
#include "kiln/llm/model.h"
#include "kiln/thread_pool.h"

namespace kiln::cli::genbench {


double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

namespace {

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
    std::optional<BlockType> blocks;  // w holds ggml blocks (--dtype native)
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
    if (const Tensor bt = find(base + ".weight_block_type"); bt.defined()) {
      calls.push_back({n.find("self_attn") != std::string::npos ? "attention linears"
                       : n.rfind("lm_head", 0) == 0             ? "lm_head"
                                                                : "mlp linears",
                       t, Tensor(), BlockType(bt.item<int64_t>())});
      continue;
    }
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
  // The weights scanned for NaN and subnormal codes as the runtime scans them at load.
  std::vector<Fp8Codes> codes;
  std::vector<std::unique_ptr<Fp8Subnormals>> subnormals;
  for (const auto& cl : calls) {
    codes.push_back(cl.blocks || fp8_has_nan_code(cl.w) ? Fp8Codes::Unchecked : Fp8Codes::NoNan);
    subnormals.push_back(cl.w.dtype() == DType::Float8_e4m3fn
                             ? std::make_unique<Fp8Subnormals>(fp8_find_subnormals(cl.w))
                             : nullptr);
  }
  std::vector<Tensor> xs, ys;
  for (const auto& cl : calls) {
    const int64_t K = cl.blocks ? cl.w.size(1) / block_type_info(*cl.blocks).block_bytes *
                                      block_type_info(*cl.blocks).block_size
                                : cl.w.size(1);
    xs.push_back(full({1, K}, 0.01, DType::Float32));
    ys.push_back(empty({1, cl.w.size(0)}));
  }
  json groups = json::object();
  double total = 0, bytes = 0;
  for (int pass = 0; pass < 3; ++pass) {
    std::map<std::string, double> t;
    for (size_t i = 0; i < calls.size(); ++i) {
      const double a = bench::now_s();
      if (calls[i].blocks)
        block_linear_out(xs[i], calls[i].w, *calls[i].blocks, Tensor(), ys[i]);
      else
        linear_out(xs[i], calls[i].w, Tensor(), calls[i].scale, ys[i], codes[i], subnormals[i].get());
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

}  // namespace

json run_case(const GenOptions& opt) {
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

}  // namespace kiln::cli::genbench
