// `kiln bench tokenizer --tokenizer PATH [--json] [--quick]`: tokenizer.json load
// time, encode and decode throughput (MB of UTF-8 text per second, one thread)
// on a generated multilingual corpus. Not memory-bound, so no roof fraction.
#include "bench_tokenizer.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "bench/harness.h"
#include "bench/options.h"
#include "commands.h"
#include "kiln/io/gguf_tokenizer.h"
#include "kiln/tokenizer.h"
#include "llm_common.h"

namespace kiln::cli {


// A deterministic mix of English prose, code, CJK, Cyrillic, Arabic, Hindi,
// digits, whitespace runs and emoji, `bytes` long (about).
std::string tokenizer_bench_corpus(size_t bytes) {
  static const char* const words[] = {
      "the", "of", "and", "to", "in", "model", "tokenizer", "running", "quickly", "Hello", "World", "isn't", "we'll",
      "def", "return", "self", "x", "=", "+=", "(", ")", "{", "}", "[i]", ";", "->", "//", "#include", "std::vector",
      "日本語の", "テキスト", "中文测试", "你好", "世界", "한국어", "텍스트", "Привет", "мир", "данные", "مرحبا",
      "بالعالم", "हिन्दी", "Γειά", "naïve", "café", "Straße", "2024", "3.14159", "1,000,000", "42", "😀", "👍🏽",
      "🇯🇵", "—", "...", "!", "?", ",", ".", "\"quoted\"", "'s", "http://example.com/a?b=c"};
  static const char* const gaps[] = {" ", " ", " ", " ", " ", "  ", "\n", "\n\n", "\t", "    ", ", ", ". "};
  std::mt19937_64 rng(1234);
  std::string out;
  out.reserve(bytes + 64);
  while (out.size() < bytes) {
    out += words[rng() % std::size(words)];
    out += gaps[rng() % std::size(gaps)];
  }
  return out;
}

namespace {

// Wall time, and the CPU time of this thread: on a shared machine the second
// is the honest per-core figure.
struct Timing {
  double median = 0, min = 0, max = 0, cpu_median = 0;
};
double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}
template <typename F>
Timing time_it(int repeat, F&& f) {
  std::vector<double> t, c;
  for (int i = 0; i < repeat; ++i) {
    const double t0 = bench::now_s(), c0 = thread_cpu_s();
    f();
    c.push_back(thread_cpu_s() - c0);
    t.push_back(bench::now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  std::sort(c.begin(), c.end());
  return {t[t.size() / 2], t.front(), t.back(), c[c.size() / 2]};
}

bench::json entry(const std::string& name, const Timing& t, double mb, int repeat) {
  bench::json j{{"name", name},   {"median_s", t.median}, {"min_s", t.min},
                {"max_s", t.max}, {"repeat", repeat},     {"cpu_median_s", t.cpu_median}};
  if (mb > 0) {
    j["unit"] = "MB/s";
    j["mbps"] = mb / t.median;
    j["mbps_cpu"] = mb / t.cpu_median;
    j["text_mb"] = mb;
  } else {
    j["unit"] = "s";
  }
  return j;
}

}  // namespace

bench::json bench_tokenizer(const TokenizerBenchOptions& opt) {
  const std::string path = resolve_tokenizer_path(opt.tokenizer, /*quiet=*/false);  // "default" too
  const int repeat = opt.quick ? 1 : opt.repeat;
  bench::json results = bench::json::array();

  std::unique_ptr<Tokenizer> tok;
  const Timing load =
      time_it(opt.quick ? 1 : 3, [&] { tok = std::make_unique<Tokenizer>(io::load_tokenizer(path)); });
  results.push_back(entry("load", load, 0, opt.quick ? 1 : 3));

  const std::string text = tokenizer_bench_corpus(opt.quick ? (64 << 10) : (4 << 20));
  const double mb = double(text.size()) / 1e6;
  std::vector<int32_t> ids;
  // The first pass fills the word cache; later passes are what a long
  // document or a server sees.
  const Timing cold = time_it(1, [&] { ids = tok->encode(text); });
  results.push_back(entry("encode_first_pass", cold, mb, 1));
  const Timing warm = time_it(repeat, [&] { ids = tok->encode(text); });
  results.push_back(entry("encode", warm, mb, repeat));
  results.back()["tokens"] = ids.size();
  std::string back;
  const Timing dec = time_it(repeat, [&] { back = tok->decode(ids); });
  results.push_back(entry("decode", dec, double(back.size()) / 1e6, repeat));

  bench::json j = bench::machine_json(sys::RoofStats{});
  j["threads"] = 1;
  j["tokenizer"] = path;
  j["vocab_size"] = tok->vocab_size();
  j["corpus_bytes"] = text.size();
  j["results"] = results;
  return j;
}

Command add_bench_tokenizer(CLI::App& bench) {
  auto opt = std::make_shared<TokenizerBenchOptions>();
  CLI::App* app = bench.add_subcommand(
      "tokenizer", "tokenizer.json load time, encode and decode MB/s on a generated multilingual corpus.");
  app->add_option(
      "--tokenizer", opt->tokenizer,
      "tokenizer.json, a GGUF model, a model directory holding tokenizer.json, or \"default\" (the "
      "default: the default model's)");
  bench::add_common_options(*app, *opt,
                            {.repeat = 5,
                             .quick_repeat = 0,  // bench_tokenizer: --quick makes it 1
                             .max_repeat = 1000,
                             .warmup = -1,
                             .out = false,
                             .quick_help = "A 64 KB corpus, one repetition: checks the plumbing, not speed"});
  return {app, [opt] {
            const bench::json j = bench_tokenizer(*opt);
            if (opt->json) {
              std::printf("%s\n", j.dump(2).c_str());
            } else {
              for (const auto& r : j["results"]) {
                if (r["unit"] == "MB/s")
                  std::printf("%-18s %8.2f MB/s  %8.2f MB/s of CPU time  (median %.4f s, min %.4f, max %.4f)\n",
                              r["name"].get<std::string>().c_str(), r["mbps"].get<double>(),
                              r["mbps_cpu"].get<double>(), r["median_s"].get<double>(), r["min_s"].get<double>(),
                              r["max_s"].get<double>());
                else
                  std::printf("%-18s %8.4f s     %8.4f s of CPU time  (min %.4f, max %.4f)\n",
                              r["name"].get<std::string>().c_str(), r["median_s"].get<double>(),
                              r["cpu_median_s"].get<double>(), r["min_s"].get<double>(), r["max_s"].get<double>());
              }
            }
            return 0;
          }};
}

}  // namespace kiln::cli
