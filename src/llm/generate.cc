// Generation: prefill, then one decode step per call, sampling each token and
// streaming whole UTF-8 pieces.
#include "kiln/llm/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "kiln/error.h"
#include "llm/stop_strings.h"
#include "llm/transformer.h"
#include "nn/sampling.h"

namespace kiln::llm {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The model's tokenizer, or (for a model without one) a one-token stand-in so
// the stream decoder exists; pieces are then left empty.
Tokenizer tokenizer_or_stub(const Model& m, bool& has) {
  try {
    Tokenizer t = m.tokenizer();
    has = true;
    return t;
  } catch (const Error&) {
    has = false;
    TokenizerParts p;
    p.tokens = {"a"};
    return Tokenizer::from_parts(p);
  }
}

bool has_tokenizer(const Model& m) {
  bool h = false;
  (void)tokenizer_or_stub(m, h);
  return h;
}

}  // namespace

double GenerateStats::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? double(prompt_tokens) / prefill_seconds : 0.0;
}
double GenerateStats::decode_tokens_per_second() const {
  return decode_seconds > 0 && generated_tokens > 1 ? double(generated_tokens - 1) / decode_seconds : 0.0;
}

Generation::Generation(Model& model, std::vector<int32_t> prompt, GenerateOptions options)
    : model_(model),
      prompt_(std::move(prompt)),
      options_(std::move(options)),
      gen_(options_.seed),
      decoder_([&] {
        bool h = false;
        return tokenizer_or_stub(model, h);
      }()) {
  KILN_CHECK(!prompt_.empty(), ValueError, "[llm] the prompt is empty");
  KILN_CHECK(options_.max_tokens >= 0, ValueError,
             "[llm] max_tokens must be >= 0 (the most tokens to generate), got " << options_.max_tokens);
  const Model::Use use(model_, "[generate]");
  // The cache state this generation continues from: its first step checks it.
  position_ = model_.position();
  resets_ = model_.resets();
  const int64_t n = int64_t(prompt_.size()), pos = model_.position(), ctx = model_.max_context();
  KILN_CHECK(
      pos + n <= ctx, ValueError,
      "[llm] the prompt of " << n << " tokens does not fit the context of " << ctx << " tokens"
                             << (pos > 0 ? " (" + std::to_string(pos) + " already used)" : std::string()));
  const int64_t V = model_.config().vocab_size;
  for (size_t i = 0; i < prompt_.size(); ++i)
    KILN_CHECK(prompt_[i] >= 0 && prompt_[i] < V, ValueError,
               "[llm] prompt token id " << prompt_[i] << " at index " << i
                                        << " is outside the vocabulary [0, " << V << ")");
  has_tokenizer_ = has_tokenizer(model_);
  detail::check_stop_strings(options_.stop);
  KILN_CHECK(options_.stop.empty() || has_tokenizer_, ValueError,
             "[generate] stop strings need a tokenizer; the model has none");
  // max_tokens is a bound, not a size: what can come is at most the room left
  // in the context (the last token need not enter the cache). Reserved up to a
  // few thousand tokens; a longer generation grows the vectors by doubling.
  const int64_t room = ctx - pos - n + 1;
  const size_t expect = size_t(std::min({options_.max_tokens, room, int64_t(4096)}));
  history_.reserve(prompt_.size() + expect);
  history_.assign(prompt_.begin(), prompt_.end());
  generated_.reserve(expect);
  stats_.prompt_tokens = n;
}

bool Generation::next(std::string& piece) {
  piece.clear();
  if (done_) return false;
  auto finish = [&](const char* why) {
    stats_.stop_reason = why;
    done_ = true;
    bool stopped = false;
    piece += detail::push_past_stops(options_.stop, stop_held_, decoder_.flush(), stopped);
    if (stopped) stats_.stop_reason = "stop";
    piece += stop_held_;
    stop_held_.clear();
    return false;
  };
  if (options_.cancel && options_.cancel->load()) return finish("cancelled");
  if (int64_t(generated_.size()) >= options_.max_tokens) return finish("length");
  // The step (forward and the read of its logits view) runs with the model held.
  const Model::Use use(model_, "[generate]");
  // The cache is the model's: another generation or forward call since this
  // one started or last stepped moved it, and this one would continue from
  // their tokens.
  KILN_CHECK(
      model_.position() == position_ && model_.resets() == resets_, Error,
      "[generate] the model's KV cache was reset or used by another call since this generation "
          << (started_ ? "last stepped" : "started")
          << "; a model runs one generation at a time: start a new one (one model per thread runs them "
             "in parallel)");
  Tensor logits;
  if (!started_) {
    started_ = true;
    const double t0 = now();
    // In the model's own chunks (the same arithmetic as one call), so that
    // Ctrl-C during a long prompt stops within one chunk.
    const int64_t n = int64_t(prompt_.size());
    for (int64_t i = 0; i == 0 || i < n; i += detail::kMaxChunk) {  // n = 0: forward says why not
      if (i > 0 && options_.cancel && options_.cancel->load()) {
        stats_.prefill_seconds = now() - t0;
        return finish("cancelled");
      }
      logits = model_.forward(std::span<const int32_t>(prompt_.data() + i, size_t(std::min(detail::kMaxChunk, n - i))));
    }
    stats_.prefill_seconds = now() - t0;
  } else {
    if (model_.position() + 1 > model_.max_context()) return finish("context");
    const double t0 = now();
    const int32_t last = generated_.back();
    logits = model_.forward(std::span<const int32_t>(&last, 1));
    stats_.decode_seconds += now() - t0;
  }
  position_ = model_.position();
  resets_ = model_.resets();
  const int64_t V = logits.size(-1);
  logits_row_.resize(size_t(V));
  std::memcpy(logits_row_.data(), logits.data<float>(), size_t(V) * sizeof(float));
  // NaN logits (corrupt weights, a broken config) would decode as token 0 or
  // the first NaN forever under greedy decoding: stop with the reason instead.
  KILN_CHECK(!std::isnan(logits_max_(logits_row_.data(), V)), Error,
             "[generate] the model's logits are NaN at generated token "
                 << generated_.size() << " (corrupt weights or an invalid config?)");
  const int64_t tok =
      sample_row_(logits_row_.data(), V, options_.sampling, history_.data(), int64_t(history_.size()), gen_);
  generated_.push_back(int32_t(tok));
  history_.push_back(tok);
  stats_.generated_tokens = int64_t(generated_.size());
  if (options_.stop_at_eos) {
    bool eos = false;
    for (int64_t e : model_.config().eos_token_ids) eos |= e == tok;
    if (!eos && has_tokenizer_) {
      const auto te = model_.tokenizer().eos_id();
      eos = te && *te == tok;
    }
    if (eos) return finish("eos");
  }
  if (has_tokenizer_) {
    bool stopped = false;
    piece = detail::push_past_stops(options_.stop, stop_held_, decoder_.push(int32_t(tok)), stopped);
    if (stopped) {
      stats_.stop_reason = "stop";
      done_ = true;
      return false;
    }
  }
  return true;
}

GenerateStats generate(Model& model, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                       const std::function<void(std::string_view)>& on_piece) {
  // The whole generation holds the model: another thread's generate() waits
  // for it, and on_piece may not call back into this model (Model::CallOut).
  Model::Use use(model, "[generate]");
  Generation g(model, prompt, options);
  std::string piece;
  bool more = true;
  while (more) {
    more = g.next(piece);
    if (!piece.empty() && on_piece) {
      const Model::CallOut out(use);
      on_piece(piece);
    }
  }
  return g.stats();
}

}  // namespace kiln::llm
