// Continuous batching: one thread runs a model over every active request at
// once. Requests join and leave the running batch between steps; each step is
// one Model::forward_batch over all decoding sequences (one token each) plus
// chunks of the prompts being prefilled, within a budget of rows per step, so
// a long prompt never stalls the streams already running. Each sequence has
// its own KV cache; a finished one is kept idle (up to a bound) so the next
// request that shares its prefix (a chat's previous turns, a common system
// prompt) skips computing it, and a request for n choices prefills once and
// copies the prompt's cache to the other n - 1.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/llm/model.h"
#include "kiln/sampling.h"
#include "serve/json_constraint.h"
#include "serve/metrics.h"

namespace kiln::serve {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;
};

// One sampled token with its log-probability under the model (log_softmax of
// the raw logits, before temperature and truncation) and the most likely
// alternatives.
struct TokenInfo {
  int32_t id = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top;
};

struct Request {
  std::vector<int32_t> prompt;  // at least one token
  int64_t max_tokens = 16;
  SamplingParams sampling;
  uint64_t seed = 0;  // choice i samples with seed + i
  std::vector<std::string> stop;
  bool stop_at_eos = true;
  int64_t n = 1;              // choices
  int64_t top_logprobs = -1;  // -1: no logprobs; else the alternatives per token (0..20)
  // response_format: the text must be a JSON value this schema accepts (null: free text).
  std::shared_ptr<const JsonSchema> schema;
};

// A piece of one choice's output: text (whole UTF-8 characters), the tokens
// it came from when logprobs were asked, and on the last event of the choice
// its finish reason ("stop", "length", "cancelled").
struct Event {
  int64_t choice = 0;
  std::string text;
  std::vector<TokenInfo> tokens;
  std::string finish_reason;
};

// The consumer's side of a request: the HTTP thread waits on it for events,
// the engine thread posts them.
class Stream {
 public:
  explicit Stream(int64_t choices) : choices_(choices) {}
  // Moves the posted events into `out`, waiting up to `timeout` for one when
  // none is waiting. False once every choice has finished and all was taken.
  bool wait(std::vector<Event>& out, std::chrono::milliseconds timeout);
  // The client went away: the engine frees its sequences at the next step.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const;

  // Engine side.
  // Returns true when this event finished the last choice; `tokens` counts the generated tokens it carries.
  bool post(Event e, int64_t tokens);
  void set_prompt_tokens(int64_t n) { prompt_tokens_ = n; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  int64_t choices_, finished_ = 0, completion_tokens_ = 0;
  int64_t prompt_tokens_ = 0;
  std::atomic<bool> cancelled_{false};
};

struct EngineOptions {
  int64_t max_batch = 16;      // choices decoding at once; more wait in the queue
  int64_t step_tokens = 256;   // rows of one step (decode tokens + prefill chunks)
  int64_t max_queue = 256;     // requests waiting; more are refused (QueueFull)
  int64_t idle_sequences = 8;  // finished caches kept for prefix reuse
};

class QueueFull : public Error {
 public:
  using Error::Error;
};

class Engine {
 public:
  // The engine owns the model's sequences while it runs; the model must
  // outlive it. Starts the engine thread.
  Engine(llm::Model& model, EngineOptions options, Metrics& metrics);
  ~Engine();  // shutdown()
  // Stops the engine thread; running and queued requests end "cancelled" and
  // later submits throw Error. Idempotent.
  void shutdown();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request (ValueError for a bad one, QueueFull when the queue is).
  std::shared_ptr<Stream> submit(Request r);
  llm::Model& model() { return model_; }
  const EngineOptions& options() const { return opt_; }

 private:
  struct Slot;
  struct Pending {
    Request req;
    std::shared_ptr<Stream> stream;
    std::chrono::steady_clock::time_point queued;
  };
  struct Idle {
    llm::Model::SequenceId seq;
    std::vector<int32_t> cached;  // the tokens its cache holds
  };
  void loop();
  void admit(Pending p);
  llm::Model::SequenceId acquire(const std::vector<int32_t>& prompt, int64_t& reused);
  llm::Model::SequenceId fresh_sequence();
  void release(Slot& s);
  bool sample(Slot& s, const float* logits);  // false when the slot finished
  int32_t sample_constrained(Slot& s, const float* logits, int64_t V);  // -1: nothing may follow
  void load_token_bytes();
  void finish(Slot& s, const char* reason);

  llm::Model& model_;
  EngineOptions opt_;
  Metrics& metrics_;
  std::vector<int32_t> eos_;
  // Each token's bytes and whether it is special (a constrained choice never
  // takes one, but the end of sequence), read once for the first schema.
  std::vector<std::string> token_bytes_;
  std::vector<uint8_t> token_special_;
  bool has_tokenizer_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stop_ = false;
  std::atomic<int64_t> waiting_size_{0};  // waiting_.size(), for submit's queue bound

  // Engine thread only.
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<Pending> waiting_;
  std::vector<Idle> idle_;  // least recently used first
  std::vector<std::pair<Slot*, const float*>> draws_;  // this step's (choice, logits row) to sample
  std::thread thread_;
};

}  // namespace kiln::serve
