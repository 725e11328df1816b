// Text generation on a Model: prefill the prompt through the GEMM path, then
// one token at a time through the matrix-vector path, sampling each next token
// (kiln/sampling.h) and streaming whole UTF-8 text pieces.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/llm/model.h"
#include "kiln/random.h"
#include "kiln/sampling.h"

namespace kiln::llm {

// The defaults are those of `kiln generate`, `kiln chat` and Python's
// LanguageModel.generate: 128 tokens, temperature 0.8, top-k 40, top-p 0.95,
// min-p 0.05, no penalties, seed 0 (a run is reproducible).
struct GenerateOptions {
  int64_t max_tokens = 128;
  // temperature 0 (or top_k 1): greedy
  SamplingParams sampling = {.temperature = 0.8, .top_k = 40, .top_p = 0.95, .min_p = 0.05};
  uint64_t seed = 0;
  bool stop_at_eos = true;
  // Generation stops when its text produces one of these (non-empty) strings;
  // the text ends just before it (stop_reason "stop"), as OpenAI's `stop`.
  // Needs a tokenizer. Streamed text that may begin one is held back.
  std::vector<std::string> stop;
  // Set from another thread (a SIGINT handler) to stop after the current token.
  const std::atomic<bool>* cancel = nullptr;
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;  // all decode steps after the first token
  std::string stop_reason;    // "eos", "stop", "length", "context", "cancelled"
  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

// One generation, stepped by the caller (the CLI streams it, Python iterates it).
// Each step holds the model (Model::Use); one Generation is stepped by one
// thread at a time.
class Generation {
 public:
  // Continues from the model's current cache position (call model.reset() for a
  // fresh conversation). ValueError when the prompt does not fit the context.
  Generation(Model& model, std::vector<int32_t> prompt, GenerateOptions options);
  // Runs the prefill on the first call, then one decode step per call (Error
  // when another call moved the model's cache since construction or the last
  // step: a model runs one generation at a time). Sets
  // `piece` to the text this step completed (may be empty while a character
  // is split across tokens, or text is held back as the possible start of a
  // stop string). Returns false once generation has stopped (the final call
  // flushes any held text into `piece`).
  bool next(std::string& piece);
  const GenerateStats& stats() const { return stats_; }
  const std::vector<int32_t>& generated() const { return generated_; }

 private:
  Model& model_;
  std::vector<int32_t> prompt_;
  GenerateOptions options_;
  Generator gen_;
  StreamDecoder decoder_;
  std::vector<int32_t> generated_;
  std::vector<int64_t> history_;  // prompt + generated, for the penalties
  std::vector<float> logits_row_;
  std::string stop_held_;  // text not shown yet: it may begin a stop string
  GenerateStats stats_;
  int64_t position_ = 0;  // the model's cache position and reset count after this generation's last step
  uint64_t resets_ = 0;
  bool started_ = false, done_ = false;
  bool has_tokenizer_ = false;  // a model without one yields ids and empty pieces
};

// Runs a whole generation, calling on_piece for every non-empty text piece.
// Holds the model throughout: another thread's calls on it wait, and calls
// from on_piece on the same model throw Error (Model::CallOut).
GenerateStats generate(Model& model, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                       const std::function<void(std::string_view)>& on_piece);

// exp(mean negative log-likelihood) of ids[1:] given the preceding ids, over
// windows of at most `window` tokens (0: max_context()), prefilled in chunks.
// Holds the model throughout and leaves its cache empty.
double perplexity(Model& model, std::span<const int32_t> ids, int64_t window = 0);

}  // namespace kiln::llm
