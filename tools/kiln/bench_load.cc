// `kiln bench load`: how long it takes to open (map + validate) a safetensors
// and a GGUF file, to fault every page of the tensor data in (page cache warm,
// and cold where posix_fadvise can drop the file's pages), and to dequantize
// GGUF blocks. Uses the files given with --file, or writes synthetic ones.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "bench/options.h"
#include "bench_tokenizer.h"
#include "commands.h"
#include "kiln/float_types.h"
#include "kiln/io/gguf.h"
#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"

namespace kiln::cli {
namespace {

using bench::json;

struct LoadOptions : bench::CommonOptions {
  bool keep = false;
  double size_mib = 1024;
  std::vector<std::string> files;
  std::string dir = "/tmp";
  std::string tokenizer;  // also time this tokenizer.json's load, encode and decode
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Drops the file's pages from the page cache (best effort; needs them clean).
bool drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  const bool ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// Reads one byte per 4 KiB page of [begin, end): what first use of a weight costs.
uint64_t touch(const uint8_t* p, uint64_t begin, uint64_t end) {
  uint64_t s = 0;
  for (uint64_t i = begin; i < end; i += 4096) s += p[i];
  return s;
}

std::string write_synthetic_safetensors(const std::string& dir, double mib) {
  // bf16 [rows, 4096] matrices of up to 32 MiB, all views of one buffer (the file is
  // streamed out, so a multi-GB file needs only 32 MiB of memory to write).
  const int64_t total = std::max<int64_t>(4096, int64_t(mib * (1 << 20)) / 2);
  const int64_t rows = std::min<int64_t>(4096, std::max<int64_t>(1, total / 4096));
  const Tensor w = full({rows, 4096}, 0.5, DType::BFloat16);
  std::vector<std::pair<std::string, Tensor>> ts;
  for (int64_t done = 0, i = 0; done < total; done += rows * 4096, ++i)
    ts.emplace_back("layers." + std::to_string(i) + ".weight", w);
  const std::string path = dir + "/kiln_bench_load.safetensors";
  io::save_safetensors(path, ts, {{"format", "pt"}});
  return path;
}

std::string write_synthetic_gguf(const std::string& dir, double mib) {
  // Q8_0 [rows, 4096] blocks: 34 bytes per 32 weights.
  auto pod = [](auto v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); };
  auto str = [&](const std::string& s) { return pod(uint64_t(s.size())) + s; };
  const int64_t row_bytes = 4096 / 32 * 34;
  const int64_t rows_per = 1024;
  const int64_t n_tensors = std::max<int64_t>(1, int64_t(mib * (1 << 20)) / (row_bytes * rows_per));
  std::string head = "GGUF" + pod(uint32_t(3)) + pod(uint64_t(n_tensors)) + pod(uint64_t(1));
  head += str("general.architecture") + pod(uint32_t(8)) + str("llama");
  const uint64_t tensor_bytes = uint64_t(row_bytes * rows_per);
  for (int64_t i = 0; i < n_tensors; ++i) {
    head += str("blk." + std::to_string(i) + ".ffn_up.weight") + pod(uint32_t(2)) + pod(uint64_t(4096)) +
            pod(uint64_t(rows_per)) + pod(uint32_t(8)) + pod(uint64_t(i) * tensor_bytes);
  }
  head.resize((head.size() + 31) / 32 * 32, '\0');
  std::string block = pod(float_to_f16_bits(0.01f));
  for (int j = 0; j < 32; ++j) block.push_back(char(j - 16));
  std::string tensor;
  tensor.reserve(tensor_bytes);
  while (tensor.size() < tensor_bytes) tensor += block;
  const std::string path = dir + "/kiln_bench_load.gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw ValueError("[bench load] cannot write " + path);
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  for (int64_t i = 0; i < n_tensors && ok; ++i)
    ok = std::fwrite(tensor.data(), 1, tensor.size(), f) == tensor.size();
  if (std::fclose(f) != 0 || !ok) throw ValueError("[bench load] cannot write " + path);
  return path;
}

json measure(const std::string& path, const LoadOptions& opt) {
  const bool is_gguf = path.size() > 5 && path.ends_with(".gguf");
  json r;
  r["file"] = path;
  std::vector<double> open_s, warm_s, cold_s, deq_s;
  uint64_t tensor_bytes = 0, file_bytes = 0, deq_bytes = 0;
  bool cold_ok = true;
  volatile uint64_t sink = 0;
  for (int rep = 0; rep < opt.repeat; ++rep) {
    for (int pass = 0; pass < 2; ++pass) {  // pass 0: cold (pages dropped), pass 1: warm
      if (pass == 0) cold_ok = drop_cache(path) && cold_ok;
      const double t0 = bench::now_s();
      std::shared_ptr<io::MappedFile> file;
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      std::unique_ptr<io::GGUFFile> g;
      if (is_gguf) {
        g = std::make_unique<io::GGUFFile>(io::GGUFFile::open(path));
        file = g->file();
        for (const auto& t : g->tensors()) ranges.emplace_back(t.offset, t.offset + t.nbytes);
      } else {
        auto f = io::SafetensorsFile::open(path);
        file = f.file();
        for (const auto& e : f.tensors()) ranges.emplace_back(e.begin, e.end);
      }
      const double t1 = bench::now_s();
      uint64_t s = 0, b = 0;
      for (auto [lo, hi] : ranges) {
        s += touch(file->data(), lo, hi);
        b += hi - lo;
      }
      const double t2 = bench::now_s();
      sink = sink + s;
      tensor_bytes = b;
      file_bytes = file->size();
      if (pass == 1) {
        open_s.push_back(t1 - t0);
        warm_s.push_back(t2 - t1);
      } else {
        cold_s.push_back(t2 - t0);
      }
      if (pass == 1 && g) {
        const double t3 = bench::now_s();
        uint64_t out = 0;
        for (const auto& t : g->tensors()) {
          const auto* info = io::ggml_type_info(uint32_t(t.type));
          if (!info->dequantizable) continue;
          Tensor d = g->dequantize(t.name);
          out += d.nbytes();
        }
        deq_s.push_back(bench::now_s() - t3);
        deq_bytes = out;
      }
    }
  }
  r["format"] = is_gguf ? "gguf" : "safetensors";
  r["file_bytes"] = file_bytes;
  r["tensor_bytes"] = tensor_bytes;
  r["open_s"] = median(open_s);
  r["touch_warm_s"] = median(warm_s);
  r["touch_warm_gbps"] = median(warm_s) > 0 ? tensor_bytes / median(warm_s) / 1e9 : 0;
  r["open_and_touch_cold_s"] = median(cold_s);
  r["cold_gbps"] = median(cold_s) > 0 ? tensor_bytes / median(cold_s) / 1e9 : 0;
  r["cold_cache_dropped"] = cold_ok;
  if (!deq_s.empty()) {
    r["dequantize_s"] = median(deq_s);
    r["dequantize_out_gbps"] = median(deq_s) > 0 ? deq_bytes / median(deq_s) / 1e9 : 0;
  }
  r["repeat"] = opt.repeat;
  return r;
}

int run_load(LoadOptions opt) {
  if (opt.quick) {
    opt.size_mib = std::min(opt.size_mib, 8.0);
    opt.repeat = std::min(opt.repeat, 2);
  }
  std::vector<std::string> files = opt.files, made;
  if (files.empty()) {
    made.push_back(write_synthetic_safetensors(opt.dir, opt.size_mib));
    made.push_back(write_synthetic_gguf(opt.dir, opt.size_mib));
    files = made;
  }
  json out;
  out["kiln_version"] = kiln::kVersion;
  out["machine"] = bench::machine_json(sys::RoofStats{});
  out["synthetic"] = !made.empty();
  out["results"] = json::array();
  for (const auto& f : files) out["results"].push_back(measure(f, opt));
  if (!opt.keep)
    for (const auto& f : made) std::remove(f.c_str());
  if (!opt.tokenizer.empty()) {
    TokenizerBenchOptions t;
    t.tokenizer = opt.tokenizer;
    t.quick = opt.quick;
    t.repeat = opt.repeat;
    const json tj = bench_tokenizer(t);
    out["tokenizer"] = {{"path", tj["tokenizer"]}, {"vocab_size", tj["vocab_size"]},
                        {"corpus_bytes", tj["corpus_bytes"]}, {"results", tj["results"]}};
  }
  if (opt.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%-44s %10s %9s %12s %12s %12s\n", "file", "size", "open ms", "warm GB/s", "cold GB/s",
              "dequant GB/s");
  for (const auto& r : out["results"]) {
    std::string name = r["file"].get<std::string>();
    if (name.size() > 44) name = "..." + name.substr(name.size() - 41);
    std::printf("%-44s %10s %9.2f %12.2f %12s %12s\n", name.c_str(),
                sys::format_bytes(int64_t(r["file_bytes"].get<uint64_t>())).c_str(),
                r["open_s"].get<double>() * 1e3, r["touch_warm_gbps"].get<double>(),
                r["cold_cache_dropped"].get<bool>()
                    ? std::to_string(r["cold_gbps"].get<double>()).substr(0, 6).c_str()
                    : "n/a",
                r.contains("dequantize_out_gbps")
                    ? std::to_string(r["dequantize_out_gbps"].get<double>()).substr(0, 6).c_str()
                    : "-");
  }
  if (out.contains("tokenizer")) {
    std::printf("\ntokenizer %s (vocab %d)\n", out["tokenizer"]["path"].get<std::string>().c_str(),
                out["tokenizer"]["vocab_size"].get<int>());
    for (const auto& r : out["tokenizer"]["results"]) {
      if (r["unit"] == "MB/s")
        std::printf("  %-18s %8.2f MB/s (%.2f MB/s of CPU time)\n", r["name"].get<std::string>().c_str(),
                    r["mbps"].get<double>(), r["mbps_cpu"].get<double>());
      else
        std::printf("  %-18s %8.1f ms\n", r["name"].get<std::string>().c_str(), r["median_s"].get<double>() * 1e3);
    }
  }
  return 0;
}

}  // namespace

Command add_bench_load(CLI::App& bench) {
  auto opt = std::make_shared<LoadOptions>();
  CLI::App* app = bench.add_subcommand(
      "load", "Open/map/validate time and page-in throughput of safetensors and GGUF files (warm and cold).");
  bench::add_common_options(*app, *opt,
                            {.repeat = 5,
                             .quick_repeat = 0,  // run_load: --quick caps it at 2
                             .max_repeat = 1000,
                             .warmup = -1,
                             .out = false,
                             .quick_help = "Tiny synthetic files and 2 repeats: a smoke run"});
  app->add_flag("--keep", opt->keep, "Keep the synthetic files");
  app->add_option("--file", opt->files,
                  "A .safetensors or .gguf file to measure (repeatable); default: synthetic");
  app->add_option("--size-mib", opt->size_mib, "Size of each synthetic file (default 1024)")
      ->check(CLI::Range(1.0, 1048576.0));
  app->add_option("--dir", opt->dir, "Where to write the synthetic files (default /tmp)");
  app->add_option("--tokenizer", opt->tokenizer,
                  "Also time loading this tokenizer (tokenizer.json, a GGUF model, a model directory, or "
                  "\"default\") and encoding/decoding with it");
  return {app, [opt] { return run_load(*opt); }};
}

}  // namespace kiln::cli
