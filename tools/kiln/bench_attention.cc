// `kiln bench attention`: decode attention (one query token, 32 query heads
// sharing 8 KV heads, head_dim 128) against a KV cache of L positions, f32 and
// bf16 KV, through the runtime entry scaled_dot_product_attention_out. Reported
// as GB/s over the K and V bytes read and as a fraction of the read roof, side by
// side with torch's SDPA (same dtype for q, k, v there) with --peer-python.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bandwidth.h"
#include "bench/harness.h"
#include "bench/report.h"
#include "commands.h"
#include "kiln/allocator.h"
#include "kiln/attention.h"
#include "bench/options.h"
#include "kiln/random.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct AttnOptions : bench::CommonOptions {
  std::string peer_python, filter;
  int threads = 0;
  int hq = 32, hkv = 8, d = 128;
};

int run_attention(AttnOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  const sys::RoofStats first = roof.measure(opt.quick ? 0.0 : 0.5, 3, 20);
  bench::Runner runner(roof, opt.runner_options());
  const std::vector<int64_t> lengths =
      opt.quick ? std::vector<int64_t>{64, 300} : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  json results = json::array(), peer_cases = json::array(), missing = json::array();
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    for (int64_t L : lengths) {
      const std::string nm = std::string("decode ") + name(dt) + " KV L=" + std::to_string(L);
      if (!opt.filter.empty() && nm.find(opt.filter) == std::string::npos) continue;
      const double kv_bytes = 2.0 * double(opt.hkv) * double(L) * opt.d * double(itemsize(dt));
      const bench::Rotation rot = bench::plan_rotation(kv_bytes, 0, opt.quick ? 1 : 64);
      kiln::manual_seed(2);
      std::vector<Tensor> ks, vs;
      ks.push_back(randn({1, opt.hkv, L, opt.d}).to(dt));
      vs.push_back(randn({1, opt.hkv, L, opt.d}).to(dt));
      for (int i = 1; i < rot.copies; ++i) {
        ks.push_back(ks.front().clone());
        vs.push_back(vs.front().clone());
      }
      const Tensor q = randn({1, opt.hq, 1, opt.d}).to(dt);
      const Tensor out = empty({1, opt.hq, 1, opt.d}, dt);
      AttentionOptions ao;
      ao.enable_gqa = true;
      bench::Result r = runner.memory_case(nm, kv_bytes, rot, [&](int i) {
        scaled_dot_product_attention_out(q, ks[size_t(i % rot.copies)], vs[size_t(i % rot.copies)], ao, out);
      });
      r.extra["L"] = L;
      r.extra["kv_dtype"] = name(dt);
      r.extra["heads"] = {{"q", opt.hq}, {"kv", opt.hkv}, {"head_dim", opt.d}};
      r.extra["bytes_note"] = "K and V read once (q and out are negligible)";
      results.push_back(r.to_json());
      peer_cases.push_back({{"name", nm},
                            {"kind", "attention"},
                            {"dtype", name(dt)},
                            {"L", L},
                            {"hq", opt.hq},
                            {"hkv", opt.hkv},
                            {"d", opt.d}});
      ks.clear();
      vs.clear();
      kiln::empty_cache();
    }
  }
  const json peer_info = bench::add_torch_peer(opt.peer_python,
                                               {{"cases", peer_cases},
                                                {"repeat", opt.repeat},
                                                {"warmup", opt.warmup},
                                                {"threads", kiln::num_threads()},
                                                {"flush_mb", opt.quick ? 8 : 256}},
                                               results, missing);
  const sys::RoofStats all = runner.roof_stats();
  json doc = {{"command", "bench attention"},
              {"kiln_version", kiln::kVersion},
              {"machine", bench::machine_json(all.passes > 0 ? all : first)},
              {"quick", opt.quick},
              {"repeat", opt.repeat},
              {"warmup", opt.warmup},
              {"timing_rule", "each timed call follows one pass of the read roof (caches cold)"},
              {"results", results}};
  if (!peer_info.is_null()) doc["peers"] = peer_info;
  if (!missing.empty()) doc["missing"] = missing;
  char header[256];
  std::snprintf(
      header, sizeof header,
      "kiln %s bench attention: decode, %d q heads / %d kv heads / head_dim %d, %d threads, roof %.1f GB/s",
      kiln::kVersion, opt.hq, opt.hkv, opt.d, kiln::num_threads(),
      doc["machine"]["roof"]["median_gbps"].get<double>());
  bench::emit_report(doc, opt.out, opt.json, header);
  return 0;
}

}  // namespace

Command add_bench_attention(CLI::App& bench) {
  auto opt = std::make_shared<AttnOptions>();
  CLI::App* app = bench.add_subcommand(
      "attention", "Decode attention against a KV cache, as a fraction of the read roof.");
  bench::add_common_options(*app, *opt, {.repeat = 20});
  add_threads_option(*app, opt->threads);
  app->add_option("--peer-python", opt->peer_python,
                  "A Python with torch, to time torch's SDPA side by side");
  app->add_option("--filter", opt->filter, "Run only the cases whose name contains this text");
  app->add_option("--q-heads", opt->hq, "Query heads (default 32)")->check(CLI::Range(1, 1024));
  app->add_option("--kv-heads", opt->hkv, "KV heads (default 8)")->check(CLI::Range(1, 1024));
  app->add_option("--head-dim", opt->d, "Head dim (default 128)")->check(CLI::Range(1, 1024));
  return {app, [opt] { return run_attention(*opt); }};
}

}  // namespace kiln::cli
