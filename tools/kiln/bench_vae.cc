// `kiln bench vae`: time and peak memory of a tiled VAE decode / encode at real
// widths (the SDXL VAE architecture by default, or Wan 2.1's video VAE when the
// model directory holds one), measured by the Python module
// kiln.bench_vae in kiln and in torch + diffusers, each side of each case in a
// fresh process so that its peak RSS is that case's. The model is Python-side
// (kiln.models.AutoencoderKL), so that is where it is timed; this command adds
// the machine's description.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

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

struct VaeOptions : bench::CommonOptions {
  int threads = 2;
  int image = 0;  // 0: the module's default
  std::vector<int> tiles;
  std::vector<std::string> ops;
  std::string model, python, peer_python, video;
  bool kiln_only = false;
};

double mib(const json& v) { return v.is_number() ? v.get<double>() / (1024.0 * 1024.0) : 0.0; }

// The memory figures, which the timing table does not show: peak RSS of each
// side, their ratio, and kiln's peak over the least live set.
std::string memory_table(const json& results) {
  std::string t =
      "\npeak RSS during the calls, MiB (+: above the RSS before them); live: the least the "
      "computation needs (Wan: weights + kiln's measured tensor peak)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %9s %9s %6s %9s %9s %9s %7s %8s\n", "case", "kiln", "torch", "k/t",
                "kiln +", "torch +", "live", "k/live", "cpu spd");
  t += line;
  for (const json& r : results) {
    const json& pt = r.value("peer_peak_rss_bytes", json::object());
    const bool peer = pt.contains("torch");
    std::snprintf(line, sizeof line, "%-28s %9.0f %9s %6s %9.0f %9s %9.0f %7.2f %8s\n",
                  r.value("name", std::string()).c_str(), mib(r["peak_rss_bytes"]),
                  peer ? std::to_string(int(mib(pt["torch"]))).c_str() : "-",
                  peer ? std::to_string(r["peak_ratio_vs_torch"].get<double>()).substr(0, 4).c_str() : "-",
                  mib(r["peak_delta_bytes"]),
                  peer ? std::to_string(int(mib(r["peer_peak_delta_bytes"]["torch"]))).c_str() : "-",
                  mib(r["live_set_bytes"]), r.value("peak_over_live_set", 0.0),
                  peer ? (std::to_string(r["cpu_speedup_vs_torch"].get<double>()).substr(0, 4) + "x").c_str()
                       : "-");
    t += line;
  }
  return t;
}

int run_vae(const VaeOptions& opt) {
  const std::string py = bench::find_python(opt.python);
  if (py.empty()) {
    std::fprintf(stderr, "kiln bench vae: no python next to the kiln binary; pass --python PATH\n");
    return 1;
  }
  std::string args = "--repeat " + std::to_string(opt.repeat) + " --threads " + std::to_string(opt.threads);
  if (opt.quick) args += " --quick";
  if (opt.image > 0) args += " --image " + std::to_string(opt.image);
  if (!opt.video.empty()) args += " --video " + bench::shell_quoted(opt.video);
  for (int t : opt.tiles) args += " --tile " + std::to_string(t);
  for (const std::string& o : opt.ops) args += " --op " + o;
  if (!opt.model.empty()) args += " --model " + bench::shell_quoted(opt.model);
  if (!opt.peer_python.empty()) args += " --peer-python " + bench::shell_quoted(opt.peer_python);
  if (opt.kiln_only) args += " --kiln-only";
  if (!opt.json) std::fprintf(stderr, "kiln bench vae: running %s -m kiln.bench_vae ...\n", py.c_str());
  const bench::PythonRun pr = bench::run_python_module(py, "kiln.bench_vae", args);
  if (!pr.ok) {
    std::fprintf(stderr, "kiln bench vae: %s\n", pr.why.c_str());
    return 1;
  }
  json machine = bench::machine_json(sys::RoofStats{});
  machine.erase("roof");  // no read roof: these cases are compute-bound
  machine.erase("roof_gbps");
  json doc = pr.doc;
  doc["command"] = "bench vae";
  doc["kiln_version"] = kiln::kVersion;
  doc["machine"] = machine;
  doc["python"] = {{"executable", py}, {"python_version", pr.doc.value("python_version", std::string())}};
  doc.erase("python_version");
  const std::string header = std::string("kiln ") + kiln::kVersion + " bench vae: " + sys::system_info().cpu_model +
                             ", " + std::to_string(opt.threads) + " threads per side" +
                             (opt.quick ? "; --quick: a smoke run, not a measurement" : "");
  bench::emit_report(doc, opt.out, opt.json, header, memory_table(doc["results"]));
  return 0;
}

}  // namespace

Command add_bench_vae(CLI::App& bench) {
  auto opt = std::make_shared<VaeOptions>();
  CLI::App* app = bench.add_subcommand("vae",
                                       "Tiled VAE decode / encode (SDXL VAE or Wan 2.1 video VAE widths): "
                                       "time and peak memory, beside torch + diffusers.");
  bench::CommonDefaults d;
  d.repeat = 1;
  d.quick_repeat = 1;
  d.warmup = -1;
  d.timed = "calls per case (each side in a fresh process)";
  bench::add_common_options(*app, *opt, d);
  app->add_option("--threads", opt->threads, "Threads of each side (default 2)")->check(CLI::Range(1, 4096));
  app->add_option("--image", opt->image, "Image side in pixels (default 1024; --quick 256)")
      ->check(CLI::Range(1, 1 << 16));
  app->add_option("--op", opt->ops, "decode or encode, repeatable (default: both)")
      ->check(CLI::IsMember({"decode", "encode"}));
  app->add_option("--video", opt->video, "Wan models: HxWxT video size (default 480x832x17)");
  app->add_option("--tile", opt->tiles,
                  "Tile side in pixels, repeatable (default: sample_size and image/2; Wan: 256, stride 192)");
  app->add_option("--model", opt->model,
                  "diffusers-format AutoencoderKL or AutoencoderKLWan directory (default "
                  "~/.cache/kiln/bench/sdxl-vae; scripts/make_bench_vae.py [--wan] builds them)");
  app->add_option("--python", opt->python, "Python with kiln installed (default: a python next to kiln)");
  app->add_option("--peer-python", opt->peer_python,
                  "A Python with torch + diffusers, when the kiln Python has none");
  app->add_flag("--kiln-only", opt->kiln_only, "Skip the torch side");
  return {app, [opt] { return run_vae(*opt); }};
}

}  // namespace kiln::cli
