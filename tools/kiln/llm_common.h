// What the LLM commands (generate, chat, perplexity, convert) share: finding
// the model (a path, or the default model fetched on first use), loading it
// with progress on stderr, flag validators, Ctrl-C, and the peak-memory and
// stats figures printed at the end.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/llm/generate.h"
#include "kiln/llm/model.h"

namespace kiln::cli {

// Options every model-running command takes.
struct ModelFlags {
  std::string model;  // a path, "default" or empty (the default model)
  std::string dtype = "fp8";
  int64_t context = 0;  // 0: the runtime's choice
  int threads = 0;      // 0: the pool's default
  bool quiet = false;   // no progress or load lines on stderr
  std::string adapter;  // a LoRA adapter directory merged at load, or empty
};
void add_model_flags(CLI::App& app, ModelFlags& f, bool with_quiet = true);

// --threads N as every command takes it: 0 (the default) means
// KILN_NUM_THREADS, else one per core; at most 4096.
CLI::Option* add_threads_option(CLI::App& app, int& threads);

// Sampling options shared by generate and chat, with llm::GenerateOptions'
// defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, seed 0: runs
// are reproducible; --temperature 0 is greedy).
struct SamplingFlags {
  llm::GenerateOptions options;
  bool ignore_eos = false;
};
void add_sampling_flags(CLI::App& app, SamplingFlags& s);
llm::GenerateOptions generate_options(const SamplingFlags& s);

// True when `arg` names an existing file or directory (then it is a MODEL,
// not a prompt).
bool is_existing_path(const std::string& arg);

// The model path: MODEL as given (ValueError when it does not exist), or the
// default model for "" and "default", fetched with progress on stderr.
std::string resolve_model_path(const std::string& model, bool quiet, const char* what = "model");

// A tokenizer argument as io::load_tokenizer reads it: a tokenizer.json or
// GGUF file as given, a model directory's tokenizer.json, or for "" and
// "default" the default model's GGUF (fetched as resolve_model_path does).
std::string resolve_tokenizer_path(const std::string& arg, bool quiet);

// How every model-taking command reads its MODEL and --threads, for --help.
extern const char* const kModelConvention;

// Resolves, applies --threads, loads with progress and prints
// "loaded NAME (arch, layers, dtype) in S s" unless quiet.
std::unique_ptr<llm::Model> load_model(const ModelFlags& f);

// VmHWM of this process in bytes (0 when /proc does not say).
int64_t peak_rss_bytes();

// "prompt 5 tokens (612.0 tok/s prefill) | 64 tokens (48.2 tok/s decode) |
//  weights 162.9 MB fp8 | peak memory 301.4 MB | stop length"
std::string stats_line(const llm::GenerateStats& s, const llm::Model& m);

// Ctrl-C while alive: the first sets cancel() (generation stops after the
// current token), a second exits at once with status 130, and so does the
// first one while idle. The previous handler comes back on destruction.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  static const std::atomic<bool>* cancel();
  static bool interrupted();
  static void clear();  // re-arm for the next generation (chat)
  // While idle (chat waiting for a line), the first Ctrl-C exits with status 130.
  static void set_idle(bool idle);

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

// CLI11 validators with one-line messages (inf and nan are refused).
CLI::Validator in_open_closed_unit();  // (0, 1]
CLI::Validator non_negative();         // >= 0, finite
CLI::Validator positive();             // > 0, finite
CLI::Validator non_negative_int64();   // an integer in [0, 2^63): a count or size (CLI11 saturates past it)

}  // namespace kiln::cli
