// `kiln bench train`: training figures, measured by the Python module
// kiln.bench_train (MLP and CNN epochs on the 8x8 digits and a transformer-ish block's
// forward+backward step, each beside torch where torch is there) under the
// interpreter next to kiln, with this machine's description added. Training is
// driven from Python (kiln.nn, kiln.optim), so that is where it is timed.
#include <cstdio>
#include <memory>
#include <string>

#include "bench/harness.h"
#include "bench/options.h"
#include "bench/python_side.h"
#include "bench/report.h"
#include "commands.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {
namespace {

using bench::json;

struct TrainOptions : bench::CommonOptions {
  int threads = 0;  // 0: kiln's default
  std::string python, peer_python;
};

int run_train(const TrainOptions& opt) {
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  const std::string py = bench::find_python(opt.python);
  if (py.empty()) {
    std::fprintf(stderr, "kiln bench train: no python next to the kiln binary; pass --python PATH\n");
    return 1;
  }
  std::string args =
      "--repeat " + std::to_string(opt.repeat) + " --threads " + std::to_string(kiln::num_threads());
  if (opt.quick) args += " --quick";
  if (!opt.peer_python.empty()) args += " --peer-python " + bench::shell_quoted(opt.peer_python);
  if (!opt.json) std::fprintf(stderr, "kiln bench train: running %s -m kiln.bench_train ...\n", py.c_str());
  const bench::PythonRun pr = bench::run_python_module(py, "kiln.bench_train", args);
  if (!pr.ok) {
    std::fprintf(stderr, "kiln bench train: %s\n", pr.why.c_str());
    return 1;
  }
  json machine = bench::machine_json(sys::RoofStats{});
  machine.erase("roof");  // no read roof: these cases are not memory-bound
  machine.erase("roof_gbps");
  json doc = pr.doc;
  doc["command"] = "bench train";
  doc["kiln_version"] = kiln::kVersion;
  doc["machine"] = machine;
  doc["python"] = {{"executable", py}, {"python_version", pr.doc.value("python_version", std::string())}};
  doc.erase("python_version");
  const std::string header = std::string("kiln ") + kiln::kVersion +
                             " bench train: " + sys::system_info().cpu_model + ", " +
                             std::to_string(kiln::num_threads()) + " threads" +
                             (opt.quick ? "; --quick: a smoke run, not a measurement" : "");
  bench::emit_report(doc, opt.out, opt.json, header, "");
  return 0;
}

}  // namespace

Command add_bench_train(CLI::App& bench) {
  auto opt = std::make_shared<TrainOptions>();
  CLI::App* app = bench.add_subcommand("train",
                                       "Training step times from Python: MLP and CNN epochs on the digits and a "
                                       "transformer-ish block, beside torch.");
  bench::CommonDefaults d;
  d.repeat = 5;
  d.quick_repeat = 1;
  d.warmup = -1;
  d.timed = "MLP and CNN epochs (and 5x as many block steps)";
  bench::add_common_options(*app, *opt, d);
  add_threads_option(*app, opt->threads);
  app->add_option("--python", opt->python, "Python with kiln installed (default: a python next to kiln)");
  app->add_option("--peer-python", opt->peer_python,
                  "A Python with torch, when the kiln Python has none (torch then runs there)");
  return {app, [opt] { return run_train(*opt); }};
}

}  // namespace kiln::cli
