// Shared pieces of the LLM commands; see llm_common.h.
#include "llm_common.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_io.h"
#include "kiln/error.h"
#include "kiln/llm/default_model.h"
#include "kiln/thread_pool.h"

namespace kiln::cli {

void add_model_flags(CLI::App& app, ModelFlags& f, bool with_quiet) {
  app.add_option(
         "--dtype", f.dtype,
         "Linear-layer weights while running: fp8 (per-row e4m3 at load; native FP8 checkpoints as they "
         "are), native (a GGUF file's Q4_K, Q8_0, ... blocks as stored, exact to the file; everything "
         "else as fp8), bf16 or f32 (an FP8 checkpoint's weights dequantized at load)")
      ->check(CLI::IsMember({"native", "fp8", "bf16", "f32"}))
      ->capture_default_str();
  app.add_option("--context", f.context,
                 "KV-cache positions (0: the length the model was trained for, lowered to what fits in "
                 "memory). Memory is committed as tokens come; a context whose cache cannot fit is refused")
      ->check(non_negative_int64());
  app.add_option("--threads", f.threads, "Worker threads (0: one per core, or KILN_NUM_THREADS)")
      ->check(non_negative());
  app.add_option("--adapter", f.adapter,
                 "A LoRA adapter directory (adapter_config.json + adapter_model.safetensors, as kiln finetune "
                 "writes it) merged into MODEL's weights at load")
      ->check(CLI::ExistingDirectory);
  if (with_quiet) app.add_flag("-q,--quiet", f.quiet, "No progress, load or stats lines on stderr");
}

CLI::Option* add_threads_option(CLI::App& app, int& threads) {
  return app.add_option("--threads", threads, "Worker threads (0: KILN_NUM_THREADS, else one per core)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
}

void add_sampling_flags(CLI::App& app, SamplingFlags& s) {
  llm::GenerateOptions& o = s.options;
  app.add_option("-n,--max-tokens", o.max_tokens,
                 "Tokens to generate at most (a bound: generation also stops at the end of the context)")
      ->check(non_negative_int64())
      ->capture_default_str();
  app.add_option("--temperature", o.sampling.temperature, "Sampling temperature (0: greedy)")
      ->check(non_negative())
      ->capture_default_str();
  app.add_option("--top-k", o.sampling.top_k, "Keep the k most likely tokens (0: off)")
      ->check(non_negative())
      ->capture_default_str();
  app.add_option("--top-p", o.sampling.top_p, "Nucleus sampling mass, in (0, 1] (1: off)")
      ->check(in_open_closed_unit())
      ->capture_default_str();
  app.add_option("--min-p", o.sampling.min_p,
                 "Drop tokens below min-p x the top probability, in [0, 1] (0: off)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--repetition-penalty", o.sampling.repetition_penalty,
                 "Divide seen tokens' positive logits by this, multiply negative ones (> 0; 1: off)")
      ->check(positive())
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Sampling seed, >= 0 (the same seed gives the same text)")
      ->check(non_negative())
      ->capture_default_str();
  app.add_flag("--ignore-eos", s.ignore_eos, "Keep generating past the end-of-sequence token");
  app.add_option("--stop", o.stop,
                 "Stop when the text produces STR, which is not printed (repeatable; text that may begin "
                 "a stop string is held back until it is known not to)")
      ->type_name("STR")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, ""));
}

llm::GenerateOptions generate_options(const SamplingFlags& s) {
  llm::GenerateOptions opt = s.options;
  opt.stop_at_eos = !s.ignore_eos;
  return opt;
}

bool is_existing_path(const std::string& arg) {
  struct stat st {};
  return !arg.empty() && ::stat(arg.c_str(), &st) == 0;
}

std::string resolve_model_path(const std::string& model, bool quiet, const char* what) {
  if (!model.empty() && model != "default") {
    struct stat st {};
    if (::stat(model.c_str(), &st) != 0)
      throw ValueError(std::string(what) + " " + model + " not found (" + std::strerror(errno) + ")");
    return model;
  }
  // Quiet: no callback, so pip's own output is captured too (and shown only in an error).
  std::function<void(const std::string&)> say;
  if (!quiet) say = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return llm::ensure_default_model(say);
}

std::string resolve_tokenizer_path(const std::string& arg, bool quiet) {
  const std::string path = resolve_model_path(arg, quiet, "tokenizer");
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return path;
  const std::filesystem::path json = std::filesystem::path(path) / "tokenizer.json";
  if (!std::filesystem::exists(json, ec))
    throw ValueError("model directory " + path + " holds no tokenizer.json");
  return json.string();
}

const char* const kModelConvention =
    "MODEL is a .gguf file, a Hugging Face model directory, a directory `kiln convert` wrote, or "
    "\"default\" (SmolLM2-135M-Instruct, fetched into the cache on first use), or a LoRA adapter directory "
    "(kiln finetune --out DIR), which runs on the base model it names; without one, a command "
    "uses the default model. --threads 0 (the default) means KILN_NUM_THREADS, else one thread per core.";

std::unique_ptr<llm::Model> load_model(const ModelFlags& f) {
  const std::string path = resolve_model_path(f.model, f.quiet);
  if (f.threads > 0) set_num_threads(f.threads);
  llm::LoadOptions lo;
  lo.weights = llm::weight_format_from_name(f.dtype);
  lo.max_context = f.context;
  lo.adapter = f.adapter;
  const bool tty = ::isatty(2) != 0;
  if (!f.quiet && tty) {
    lo.progress = [last = -1](int64_t done, int64_t total) mutable {
      const int pct = total > 0 ? int(done * 100 / total) : 100;
      if (pct != last) std::fprintf(stderr, "\rloading weights %3d%%", pct);
      last = pct;
    };
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto model = llm::Model::load(path, lo);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!f.quiet) {
    const auto& c = model->config();
    const std::string name = model_name(path);
    std::fprintf(stderr, "%sloaded %s (%s, %lld layers, %s weights, context %lld) in %.2f s\n",
                 tty ? "\r" : "", name.c_str(), c.architecture.c_str(), (long long)c.num_hidden_layers,
                 llm::weight_format_name(model->weight_format()), (long long)model->max_context(), secs);
    const int64_t trained = model->config().max_position_embeddings;
    if (trained > 0 && model->max_context() > trained)
      std::fprintf(stderr,
                   "warning: --context %lld is beyond the %lld positions the model was trained on; text past "
                   "them is likely to degrade\n",
                   (long long)model->max_context(), (long long)trained);
  }
  return model;
}

int64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  return 0;
}

std::string stats_line(const llm::GenerateStats& s, const llm::Model& m) {
  // A rate that was not measured (no prefill ran: -n 0; no decode step: one
  // token or none) reads "-", not 0.
  auto rate = [](bool measured, double v) {
    char b[32];
    if (measured)
      std::snprintf(b, sizeof b, "%.1f", v);
    else
      std::snprintf(b, sizeof b, "-");
    return std::string(b);
  };
  const std::string prefill = rate(s.prefill_seconds > 0, s.prefill_tokens_per_second());
  const std::string decode =
      rate(s.decode_seconds > 0 && s.generated_tokens > 1, s.decode_tokens_per_second());
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "prompt %lld tokens (%s tok/s prefill) | %lld tokens (%s tok/s decode) | weights %.1f MB %s | "
      "peak memory %.1f MB | stop %s",
      (long long)s.prompt_tokens, prefill.c_str(), (long long)s.generated_tokens, decode.c_str(),
      double(m.weight_bytes()) / 1e6, llm::weight_format_name(m.weight_format()),
      double(peak_rss_bytes()) / 1e6, s.stop_reason.empty() ? "-" : s.stop_reason.c_str());
  return buf;
}

// ---- Ctrl-C ---------------------------------------------------------------------

namespace {
std::atomic<bool> g_cancel{false};
std::atomic<bool> g_idle{false};
void on_sigint(int) {
  if (g_idle.load() || g_cancel.exchange(true)) {
    static const char msg[] = "\n";
    (void)!::write(2, msg, 1);
    ::_exit(130);  // the second Ctrl-C: leave now
  }
}
}  // namespace

struct InterruptGuard::Saved {
  struct sigaction old {};
};

InterruptGuard::InterruptGuard() : saved_(std::make_unique<Saved>()) {
  g_cancel = false;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &saved_->old);
}
InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &saved_->old, nullptr);
  g_idle = false;
}
const std::atomic<bool>* InterruptGuard::cancel() { return &g_cancel; }
bool InterruptGuard::interrupted() { return g_cancel.load(); }
void InterruptGuard::clear() { g_cancel = false; }
void InterruptGuard::set_idle(bool idle) { g_idle = idle; }

// ---- validators -------------------------------------------------------------------

namespace {
// A validator for a finite number that `ok` accepts; the message says what was expected.
CLI::Validator finite_number(bool (*ok)(double), const char* expected, const char* label) {
  return CLI::Validator(
      [ok, expected](std::string& s) -> std::string {
        try {
          size_t pos = 0;
          const double v = std::stod(s, &pos);
          if (pos == s.size() && std::isfinite(v) && ok(v)) return {};
        } catch (...) {
        }
        return std::string("must be ") + expected + ", got " + s;
      },
      label);
}
}  // namespace

CLI::Validator in_open_closed_unit() {
  return finite_number([](double v) { return v > 0 && v <= 1; }, "in (0, 1]", "(0,1]");
}

CLI::Validator non_negative() {
  return finite_number([](double v) { return v >= 0; }, "a number >= 0", ">=0");
}

CLI::Validator non_negative_int64() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && end == s.c_str() + s.size() && errno != ERANGE && v >= 0) return {};
        return "must be an integer in [0, 9223372036854775807], got " + s;
      },
      "[0,2^63)");
}

CLI::Validator positive() {
  return finite_number([](double v) { return v > 0; }, "a number > 0", ">0");
}

}  // namespace kiln::cli
