// `kiln info`: what kiln sees of the machine, including the memory read roof
// that every benchmark measures against.
#include <cstdio>
#include <memory>
#include <string>

#include "bench/bandwidth.h"
#include "bench/harness.h"
#include "commands.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "kiln/version.h"
#include "llm_common.h"

namespace kiln::cli {

int run_model_info(const std::string& path, bool as_json);  // info_model.cc

namespace {

struct InfoOptions {
  std::string path;  // a model file or directory: summarize it instead of the machine
  bool json = false;
  bool no_bandwidth = false;
  int threads = 0;      // 0: kiln's default
  double roof_mib = 0;  // 0: 4x the last-level cache
};

std::string cache_text(int64_t bytes) { return bytes > 0 ? sys::format_bytes(bytes) : "unknown"; }

int run_info(const InfoOptions& opt) {
  // "default" names the default model here too (fetched on first use).
  if (!opt.path.empty()) return run_model_info(resolve_model_path(opt.path, /*quiet=*/false), opt.json);
  if (opt.threads > 0) kiln::set_num_threads(opt.threads);
  sys::RoofStats roof;
  if (!opt.no_bandwidth) {
    const size_t bytes = opt.roof_mib > 0 ? size_t(opt.roof_mib * (1 << 20)) : sys::default_roof_bytes();
    sys::ReadRoof buffer(bytes);
    roof = buffer.measure(/*budget_s=*/1.0, /*min_passes=*/5, /*max_passes=*/50);
  }
  const sys::SystemInfo& info = sys::system_info();
  bench::json j = bench::machine_json(roof);
  j["version"] = kiln::kVersion;
  j["memory_total_bytes"] = info.mem_total_bytes;
  if (opt.no_bandwidth) {
    j["roof_gbps"] = nullptr;
    j["roof"] = nullptr;
  }
  if (opt.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("kiln %s\n", kiln::kVersion);
  std::printf("  cpu             %s\n", info.cpu_model.c_str());
  std::printf("  logical cores   %d\n", info.logical_cores);
  std::printf("  simd target     %s\n", j["simd_target"].get<std::string>().c_str());
  std::printf("  bf16 dot        %s\n",
              j["bf16_dot"].get<bool>()
                  ? "on (bf16/FP8 decode rows via AVX512-BF16; KILN_BF16_DOT=off to keep exact)"
                  : "off");
  std::printf("  bf16 gemm       %s\n",
              !j["bf16_gemm"].get<bool>() ? "off"
              : j["amx_tiles"].get<bool>()
                  ? "on (prefill/MoE rows of bf16/FP8 weights via AMX tiles, x rounded to bf16; "
                    "KILN_BF16_GEMM=off to keep exact; KILN_AMX=off turns the bf16 gemm off here, or onto "
                    "AVX512-BF16 "
                    "with KILN_BF16_GEMM=on)"
                  : "on (prefill/MoE rows of bf16/FP8 weights via AVX512-BF16, x rounded to bf16; "
                    "KILN_BF16_GEMM=off to keep exact)");
  std::printf("  threads         %d\n", kiln::num_threads());
  std::printf("  L1d cache       %s\n", cache_text(info.l1d_bytes).c_str());
  std::printf("  L2 cache        %s\n", cache_text(info.l2_bytes).c_str());
  std::printf("  L3 cache        %s\n", cache_text(info.l3_bytes).c_str());
  std::printf("  memory          %s\n", cache_text(info.mem_total_bytes).c_str());
  if (opt.no_bandwidth) {
    std::printf("  read bandwidth  not measured (--no-bandwidth)\n");
  } else {
    std::printf(
        "  read bandwidth  %.1f GB/s  (best of %d passes over %s, %d threads; median %.1f, min %.1f)\n",
        roof.max_gbps, roof.passes, sys::format_bytes(int64_t(roof.bytes)).c_str(), roof.threads,
        roof.median_gbps, roof.min_gbps);
  }
  return 0;
}

}  // namespace

Command add_info(CLI::App& parent) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* app = parent.add_subcommand(
      "info",
      "Show the version, CPU, caches, SIMD target, threads and measured memory read bandwidth; with PATH, "
      "summarize a model file or directory (safetensors, GGUF, config.json, tokenizer).");
  app->add_option("path", opt->path,
                  "A .safetensors/.gguf file, an index.json, a model directory, or \"default\" (the default "
                  "model)");
  app->add_flag("--json", opt->json, "Print one JSON object instead of the text block");
  add_threads_option(*app, opt->threads);
  app->add_option("--roof-mib", opt->roof_mib,
                  "Size of the bandwidth buffer in MiB (default: 4x the last-level cache)")
      ->check(CLI::Range(1.0, 1048576.0));
  app->add_flag("--no-bandwidth", opt->no_bandwidth, "Skip the ~1 s bandwidth measurement");
  return {app, [opt] { return run_info(*opt); }};
}

}  // namespace kiln::cli
