// `kiln bench softmax`: softmax and log_softmax (float32) over the shapes of a
// case file (default bench/cases/softmax_cases.json: real vocabulary sizes),
// as time per row, GB/s (one read + one write) and fraction of the read roof,
// side by side with torch.softmax / torch.log_softmax when --peer-python names a
// Python with torch. Ends with the geometric-mean speedup over torch.
#include <cmath>
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
#include "bench/options.h"
#include "kiln/binary.h"
#include "kiln/random.h"
#include "kiln/softmax.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct SoftmaxOptions : bench::CommonOptions {
  std::string cases, peer_python, filter;
  std::string cache = "both";
  int threads = 0;
};

// The project's case file when run from the source tree; else these (the same list).
const char* kDefaultCases = R"({"cases": [
 {"shape": [1, 32000], "dim": -1}, {"shape": [1, 49152], "dim": -1}, {"shape": [1, 128256], "dim": -1},
 {"shape": [1, 151936], "dim": -1}, {"shape": [1, 201088], "dim": -1}, {"shape": [4, 32000], "dim": -1},
 {"shape": [4, 49152], "dim": -1}, {"shape": [4, 128256], "dim": -1}, {"shape": [4, 151936], "dim": -1},
 {"shape": [4, 201088], "dim": -1}, {"shape": [8, 32000], "dim": -1}, {"shape": [8, 49152], "dim": -1},
 {"shape": [8, 128256], "dim": -1}, {"shape": [8, 151936], "dim": -1}, {"shape": [8, 201088], "dim": -1},
 {"shape": [5, 51866], "dim": -1}, {"shape": [64, 1000], "dim": -1}, {"shape": [4, 499, 46], "dim": -1}]})";

json load_cases(const SoftmaxOptions& opt, std::string* source) {
  std::string path = opt.cases;
  if (path.empty() && std::ifstream("bench/cases/softmax_cases.json"))
    path = "bench/cases/softmax_cases.json";
  if (path.empty()) {
    *source = "built-in (same as bench/cases/softmax_cases.json)";
    return json::parse(kDefaultCases);
  }
  std::ifstream f(path);
  if (!f) throw std::runtime_error("[bench softmax] cannot read " + path);
  *source = path;
  return json::parse(f);
}

std::string case_name(bool log, const Shape& shape, int dim, bool warm) {
  return std::string(log ? "log_softmax " : "softmax ") + shape_to_string(shape) + " dim " +
         std::to_string(dim) + (warm ? " warm" : " cold");
}

int run_softmax(SoftmaxOptions opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  std::string source;
  json doc_cases = load_cases(opt, &source);
  const size_t roof_bytes = opt.quick ? size_t(8) << 20 : sys::default_roof_bytes();
  sys::ReadRoof roof(roof_bytes);
  const sys::RoofStats first = roof.measure(opt.quick ? 0.0 : 0.5, 3, 20);
  bench::Runner runner(roof, opt.runner_options());

  json results = json::array(), peer_cases = json::array(), missing = json::array();
  for (const json& c : doc_cases["cases"]) {
    Shape shape = c["shape"].get<Shape>();
    const int dim = c.value("dim", -1);
    if (opt.quick)  // tiny: same ranks, vocab cut to <= 2048
      for (auto& s : shape) s = std::min<int64_t>(s, 2048);
    for (bool warm : {false, true})
      for (bool log : {false, true}) {
        if (opt.cache != "both" && (opt.cache == "warm") != warm) continue;
        const std::string nm = case_name(log, shape, dim, warm);
        if (!opt.filter.empty() && nm.find(opt.filter) == std::string::npos) continue;
        const int64_t n = shape_numel(shape, "bench softmax");
        const double bytes = 8.0 * double(n);
        // Cold: each call reads its input from memory (a copy not touched since
        // the roof pass). Warm: the input was just used, as logits are right
        // after the LM head wrote them; one copy.
        const bench::Rotation rot =
            bench::plan_rotation(4.0 * double(n), 4.0 * double(n), opt.quick || warm ? 1 : 256);
        kiln::manual_seed(1);
        std::vector<Tensor> xs;
        xs.push_back(mul(randn(shape), Scalar(3.0)));
        for (int i = 1; i < rot.copies; ++i) xs.push_back(xs.front().clone());
        bench::Result r = runner.memory_case(
            nm, bytes, rot,
            [&](int i) {
              Tensor y = log ? kiln::log_softmax(xs[size_t(i % rot.copies)], dim)
                             : kiln::softmax(xs[size_t(i % rot.copies)], dim);
            },
            1, warm);
        const int d = dim < 0 ? dim + int(shape.size()) : dim;
        const int64_t rows = n / std::max<int64_t>(shape[size_t(d)], 1);
        r.extra["shape"] = shape;
        r.extra["dim"] = dim;
        r.extra["rows"] = rows;
        r.extra["time_per_row_s"] = r.median_s / double(std::max<int64_t>(rows, 1));
        r.extra["bytes_note"] = "1 read + 1 write of float32";
        if (warm) r.roof_fraction = 0;  // from cache: the memory roof does not bound it
        results.push_back(r.to_json());
        peer_cases.push_back({{"name", nm},
                              {"kind", "softmax"},
                              {"shape", shape},
                              {"dim", dim},
                              {"log", log},
                              {"warm", warm},
                              {"copies", rot.copies}});
        xs.clear();
        kiln::empty_cache();
      }
  }
  // The same cache policy as kiln's side: a read of the roof buffer's size
  // before every timed call, inputs rotated.
  const json peer_info = bench::add_torch_peer(opt.peer_python,
                                               {{"cases", peer_cases},
                                                {"repeat", opt.repeat},
                                                {"warmup", opt.warmup},
                                                {"threads", kiln::num_threads()},
                                                {"flush_mb", int64_t(roof_bytes >> 20)}},
                                               results, missing);
  // Geometric-mean speedups over torch.
  json geo = json::object();
  for (const char* cache : {"cold", "warm"})
    for (const char* kind : {"softmax", "log_softmax", "all"}) {
      double s = 0;
      int k = 0;
      for (const json& r : results) {
        const std::string nm = r["name"].get<std::string>();
        if (!r.contains("speedup_vs_torch") || r["cache"] != cache) continue;
        if (std::string(kind) != "all" && nm.rfind(std::string(kind) + " ", 0) != 0) continue;
        s += std::log(r["speedup_vs_torch"].get<double>());
        ++k;
      }
      if (k > 0) geo[std::string(cache) + " " + kind] = std::exp(s / k);
    }
  const sys::RoofStats all = runner.roof_stats();
  json doc = {
      {"command", "bench softmax"},
      {"kiln_version", kiln::kVersion},
      {"machine", bench::machine_json(all.passes > 0 ? all : first)},
      {"cases_file", source},
      {"quick", opt.quick},
      {"repeat", opt.repeat},
      {"warmup", opt.warmup},
      {"timing_rule",
       "each timed call follows one pass of the read roof (pool warm); cold cases then read an input "
       "copy not touched since (rotated), warm cases first make one untimed call on the same input "
       "(in cache, as fresh logits are); the torch peer follows a read of the same size and the same rule"},
      {"results", results}};
  if (!geo.empty()) doc["geomean_speedup_vs_torch"] = geo;
  if (!peer_info.is_null()) doc["peers"] = peer_info;
  if (!missing.empty()) doc["missing"] = missing;
  std::string after;
  char line[256];
  for (const json& r : results) {
    std::string vs;
    if (r.contains("speedup_vs_torch"))
      vs = " vs torch " + std::to_string(r["speedup_vs_torch"].get<double>()) + "x";
    std::snprintf(line, sizeof line, "  %-40s %9.2f us/row%s\n", r["name"].get<std::string>().c_str(),
                  r["time_per_row_s"].get<double>() * 1e6, vs.c_str());
    after += line;
  }
  for (auto it = geo.begin(); it != geo.end(); ++it) {
    std::snprintf(line, sizeof line, "geomean speedup vs torch (%s): %.2fx\n", it.key().c_str(),
                  it.value().get<double>());
    after += line;
  }
  char header[256];
  std::snprintf(header, sizeof header, "kiln %s bench softmax: %d threads, roof %.1f GB/s, cases from %s",
                kiln::kVersion, kiln::num_threads(), doc["machine"]["roof"]["median_gbps"].get<double>(),
                source.c_str());
  bench::emit_report(doc, opt.out, opt.json, header, after);
  return 0;
}

}  // namespace

Command add_bench_softmax(CLI::App& bench) {
  auto opt = std::make_shared<SoftmaxOptions>();
  CLI::App* app =
      bench.add_subcommand("softmax", "softmax / log_softmax over real vocabulary sizes, vs torch.");
  bench::add_common_options(*app, *opt, {.repeat = 30});
  app->add_option("--cases", opt->cases,
                  "Case file {\"cases\": [{\"shape\", \"dim\"}]} (default bench/cases/softmax_cases.json)");
  add_threads_option(*app, opt->threads);
  app->add_option("--peer-python", opt->peer_python, "A Python with torch, to time torch side by side");
  app->add_option("--cache", opt->cache,
                  "cold: inputs read from memory; warm: inputs just used (in cache, as fresh logits); both")
      ->check(CLI::IsMember({"cold", "warm", "both"}));
  app->add_option("--filter", opt->filter, "Run only the cases whose name contains this text");
  return {app, [opt] { return run_softmax(*opt); }};
}

}  // namespace kiln::cli
