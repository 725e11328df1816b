// `kiln bench ops`: elementwise, conversion and reduction ops on large
// contiguous float32 tensors, each as achieved GB/s and as a fraction of the
// read roof measured beside it, plus the fixed cost of dispatching a tiny op;
// then the hot functions of the PyTorch API (bench_ops_hot.cc), side by side
// with torch when --peer-python names a Python with torch.
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bandwidth.h"
#include "bench/harness.h"
#include "bench/options.h"
#include "bench/python_side.h"
#include "bench/report.h"
#include "bench_ops_hot.h"
#include "cli_io.h"
#include "commands.h"
#include "kiln/allocator.h"
#include "kiln/binary.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/sysinfo.h"
#include "kiln/tensor.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct OpsOptions : bench::CommonOptions {
  int threads = 0;    // 0: kiln's default
  int64_t numel = 0;  // 0: 64M, or 64K with --quick
  std::string python;  // interpreter for the Python side; "" finds one
  bool no_python = false;
  std::string filter;  // run only cases whose name contains this
  std::string peer_python;  // a Python with torch, for the hot cases' torch column
};

constexpr double kF32 = 4.0;

// `copies` independent float32 tensors of n elements (one randn, then clones:
// the values are realistic and setup stays at memcpy speed).
std::vector<Tensor> make_inputs(int copies, int64_t n, uint64_t seed) {
  kiln::manual_seed(seed);
  std::vector<Tensor> v;
  v.push_back(kiln::randn({n}));
  for (int i = 1; i < copies; ++i) v.push_back(v.front().clone());
  return v;
}

// Largest working set a case may allocate: a third of what is free now, so the
// bench never pushes a shared machine into swap.
int max_copies(double per_copy, double shared) {
  const int64_t avail = sys::system_info().mem_available_bytes;
  if (avail <= 0) return 64;
  const double budget = double(avail) / 3 - shared;
  return std::max(1, std::min(64, int(budget / per_copy)));
}

bench::Rotation rotation_for(const OpsOptions& opt, double per_copy, double shared) {
  // --quick checks plumbing at cache-resident sizes; rotating there is pointless.
  return bench::plan_rotation(per_copy, shared, opt.quick ? 1 : max_copies(per_copy, shared));
}

// Tensor::to from float32 into `to`: reads 4 bytes and writes itemsize bytes per element.
bench::Result convert_case(bench::Runner& runner, const OpsOptions& opt, int64_t n, DType to) {
  const double in_bytes = kF32 * n, out_bytes = double(itemsize(to)) * n;
  const bench::Rotation rot = rotation_for(opt, in_bytes, out_bytes);
  std::vector<Tensor> xs = make_inputs(rot.copies, n, 1);
  bench::Result r = runner.memory_case(
      std::string("to f32->") + name(to), in_bytes + out_bytes, rot,
      [&](int i) { Tensor y = xs[i % rot.copies].to(to); });
  r.extra["numel"] = n;
  r.extra["bytes_note"] = "1 read + 1 write";
  return r;
}

// a <op> b over n float32 elements: 2 reads + 1 write of 4 bytes each. The
// output comes back from the caching allocator every call (one shared block).
bench::Result binary_case(bench::Runner& runner, const OpsOptions& opt, int64_t n, const char* op,
                          Tensor (*fn)(const Tensor&, const Tensor&)) {
  const bench::Rotation rot = rotation_for(opt, 2 * kF32 * n, kF32 * n);
  std::vector<Tensor> as = make_inputs(rot.copies, n, 2), bs = make_inputs(rot.copies, n, 3);
  bench::Result r = runner.memory_case(std::string(op) + " f32", 3 * kF32 * n, rot, [&](int i) {
    Tensor y = fn(as[i % rot.copies], bs[i % rot.copies]);
  });
  r.extra["numel"] = n;
  r.extra["bytes_note"] = "2 reads + 1 write";
  return r;
}

// A full reduction of n float32 elements: one read of 4 bytes each.
bench::Result reduce_case(bench::Runner& runner, const OpsOptions& opt, int64_t n, const char* name,
                          void (*fn)(const Tensor&)) {
  const bench::Rotation rot = rotation_for(opt, kF32 * n, 0);
  std::vector<Tensor> xs = make_inputs(rot.copies, n, 4);
  bench::Result r = runner.memory_case(std::string(name) + " f32", kF32 * n, rot,
                                       [&](int i) { fn(xs[i % rot.copies]); });
  r.extra["numel"] = n;
  r.extra["bytes_note"] = "1 read";
  return r;
}

// The fixed cost of one op call: add of two 1-element tensors, all dispatch
// and allocation, no arithmetic to speak of.
bench::Result dispatch_case(bench::Runner& runner, const OpsOptions& opt) {
  const Tensor a = kiln::ones({1}), b = kiln::ones({1});
  bench::Result r = runner.latency_case("add 1-element dispatch (C++)", opt.quick ? 2000 : 100000,
                                        [&] { Tensor y = kiln::add(a, b); });
  return r;
}

int run_ops(OpsOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  const int64_t n = opt.numel > 0 ? opt.numel : (opt.quick ? int64_t(1) << 16 : int64_t(1) << 26);

  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  const sys::RoofStats first = roof.measure(opt.quick ? 0.0 : 0.5, 3, 20);
  bench::Runner runner(roof, opt.runner_options());
  if (!opt.json) {
    std::fprintf(stderr, "kiln bench ops: %lld elements, %d threads, roof %.1f GB/s at start ...\n",
                 static_cast<long long>(n), kiln::num_threads(), first.median_gbps);
  }

  json results = json::array();
  json missing = json::array();
  auto record = [&](const bench::Result& r) {
    results.push_back(r.to_json());
    kiln::empty_cache();  // hand each case's buffers back before the next
    if (!opt.json) std::fprintf(stderr, "  %s done\n", r.name.c_str());
  };

  // (name, run): names are what --filter matches.
  const std::vector<std::pair<std::string, std::function<bench::Result()>>> cases = {
      {"add f32", [&] { return binary_case(runner, opt, n, "add", [](const Tensor& a, const Tensor& b) { return kiln::add(a, b); }); }},
      {"mul f32", [&] { return binary_case(runner, opt, n, "mul", [](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); }); }},
      {"to f32->bfloat16", [&] { return convert_case(runner, opt, n, DType::BFloat16); }},
      {"to f32->float8_e4m3fn", [&] { return convert_case(runner, opt, n, DType::Float8_e4m3fn); }},
      {"sum f32", [&] { return reduce_case(runner, opt, n, "sum", [](const Tensor& x) { Tensor s = kiln::sum(x); }); }},
      {"var_mean f32", [&] { return reduce_case(runner, opt, n, "var_mean", [](const Tensor& x) { auto vm = kiln::var_mean(x); }); }},
      {"add 1-element dispatch (C++)", [&] { return dispatch_case(runner, opt); }},
  };
  for (const auto& [case_name, run] : cases)
    if (opt.filter.empty() || case_name.find(opt.filter) != std::string::npos) record(run());

  // The hot functions, then torch on the same cases (before the Python side's
  // results join `results`, so that names can only match kiln's rows).
  const HotRun hot{n, opt.quick, opt.filter,
                   [&](double per_copy, double shared) { return rotation_for(opt, per_copy, shared); },
                   record};
  const json peer_cases = run_hot_cases(runner, hot);
  json peer_info;
  if (!peer_cases.empty()) {
    if (!opt.json) std::fprintf(stderr, "  torch peer on %zu cases ...\n", peer_cases.size());
    peer_info = bench::add_torch_peer(opt.peer_python,
                                      {{"cases", peer_cases},
                                       {"repeat", opt.repeat},
                                       {"warmup", opt.warmup},
                                       {"threads", kiln::num_threads()},
                                       {"flush_mb", int64_t(roof_bytes >> 20)}},
                                      results, missing);
  }
  int geo_cases = 0;
  const double geo = hot_geomean_speedup(results, &geo_cases);

  json python_info;
  if (!opt.no_python) {
    const std::string py = bench::find_python(opt.python);
    if (py.empty()) {
      missing.push_back({{"name", "python-side cases"},
                         {"why", "no python next to the kiln binary; pass --python PATH"}});
    } else {
      std::string args = "ops --repeat " + std::to_string(opt.repeat);
      if (opt.quick) args += " --quick";
      if (opt.threads > 0) args += " --threads " + std::to_string(opt.threads);
      const bench::PythonRun pr = bench::run_python_bench(py, args);
      if (pr.ok) {
        for (json r : pr.doc["results"]) {
          if (!opt.filter.empty() && r.value("name", std::string()).find(opt.filter) == std::string::npos)
            continue;
          r["side"] = "python";
          results.push_back(r);
        }
        python_info = {{"executable", py}};
        for (const char* k : {"python_version", "peers"})
          if (pr.doc.contains(k)) python_info[k] = pr.doc[k];
        if (pr.doc.contains("missing"))
          for (const json& mi : pr.doc["missing"]) missing.push_back(mi);
      } else {
        missing.push_back({{"name", "python-side cases"}, {"why", pr.why}});
        std::fprintf(stderr, "kiln bench ops: python side skipped: %s\n", pr.why.c_str());
      }
    }
  }

  const sys::RoofStats all = runner.roof_stats();
  json doc = {{"command", "bench ops"},
              {"kiln_version", kiln::kVersion},
              {"machine", bench::machine_json(all.passes > 0 ? all : first)},
              {"quick", opt.quick},
              {"numel", n},
              {"repeat", opt.repeat},
              {"warmup", opt.warmup},
              {"rotation_rule",
               "each memory-bound case cycles through copies of its inputs so that its working "
               "set is >= 4x the last-level cache (see each result's rotation); not in --quick"},
              {"roof_rule", "one pass of the read roof is taken right before every timed repetition; "
                            "roof_fraction uses the median of the passes beside that case"},
              {"results", results}};
  if (!python_info.is_null()) doc["python"] = python_info;
  if (!peer_info.is_null()) doc["peers"] = peer_info;
  if (geo_cases > 0) doc["geomean_speedup_vs_torch"] = {{"hot", geo}, {"cases", geo_cases}};
  if (!missing.empty()) doc["missing"] = missing;

  if (!opt.out.empty()) write_file(opt.out, doc.dump(2) + "\n");
  if (opt.json) {
    std::printf("%s\n", doc.dump(2).c_str());
    return 0;
  }
  const json& m = doc["machine"];
  const sys::SystemInfo& info = sys::system_info();
  std::printf("kiln %s bench ops: %s, %d threads, %s\n", kiln::kVersion, info.cpu_model.c_str(),
              kiln::num_threads(), m["simd_target"].get<std::string>().c_str());
  std::printf("L1d %s, L2 %s, L3 %s; read roof %.1f GB/s (median of %d passes over %s, min %.1f, max %.1f)\n",
              sys::format_bytes(info.l1d_bytes).c_str(), sys::format_bytes(info.l2_bytes).c_str(),
              sys::format_bytes(info.l3_bytes).c_str(), m["roof"]["median_gbps"].get<double>(),
              m["roof"]["passes"].get<int>(), sys::format_bytes(int64_t(roof.bytes())).c_str(),
              m["roof"]["min_gbps"].get<double>(), m["roof"]["max_gbps"].get<double>());
  std::printf("%lld elements per tensor, %d repeats after %d warm-up%s\n\n", static_cast<long long>(n),
              opt.repeat, opt.warmup, opt.quick ? "; --quick: cache-resident, not a speed figure" : "");
  std::fputs(bench::format_table(doc["results"]).c_str(), stdout);
  for (const json& r : doc["results"]) {
    if (r.contains("rotation")) {
      const json& rot = r["rotation"];
      std::printf("  %-32s rotation: %d copies, working set %s = %.1fx LLC\n",
                  r["name"].get<std::string>().c_str(), rot["copies"].get<int>(),
                  sys::format_bytes(int64_t(rot["working_set_bytes"].get<double>())).c_str(),
                  rot["x_llc"].get<double>());
    }
  }
  if (geo_cases > 0) std::printf("geomean speedup vs torch over %d hot cases: %.2fx\n", geo_cases, geo);
  for (const json& mi : missing)
    std::printf("  not measured: %s (%s)\n", mi["name"].get<std::string>().c_str(),
                mi["why"].get<std::string>().c_str());
  return 0;
}

}  // namespace

Command add_bench_ops(CLI::App& bench) {
  auto opt = std::make_shared<OpsOptions>();
  CLI::App* app = bench.add_subcommand("ops",
                                       "Elementwise, conversion, reduction and hot PyTorch-API ops as GB/s "
                                       "and fraction of the read roof, vs torch.");
  bench::add_common_options(*app, *opt);
  add_threads_option(*app, opt->threads);
  app->add_option("--numel", opt->numel, "Elements per tensor (default 64M; 64K with --quick)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  app->add_option("--python", opt->python,
                  "Python with kiln installed, for the Python-side cases (default: a python next to kiln)");
  app->add_flag("--no-python", opt->no_python, "Skip the Python-side cases");
  app->add_option("--filter", opt->filter, "Run only the cases whose name contains this text");
  app->add_option("--peer-python", opt->peer_python,
                  "A Python with torch, to time torch on the hot cases side by side");
  return {app, [opt] { return run_ops(*opt); }};
}

}  // namespace kiln::cli
