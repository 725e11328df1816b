// The continuous-batching engine (engine.h): the step loop, admission with
// prefix reuse, sampling and streaming of each choice.
#include "serve/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "io/tokenizer/impl.h"
#include "kiln/error.h"
#include "kiln/random.h"
#include "kiln/thread_pool.h"
#include "kiln/tokenizer.h"
#include "llm/stop_strings.h"
#include "nn/sampling.h"

namespace kiln::serve {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

size_t common_prefix(const int32_t* a, size_t na, const std::vector<int32_t>& b) {
  size_t i = 0;
  const size_t n = std::min(na, b.size());
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// A copied prefix shorter than this is recomputed rather than copied.
constexpr int64_t kMinCopiedPrefix = 16;

}  // namespace

// ---- Stream ---------------------------------------------------------------------

bool Stream::wait(std::vector<Event>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (events_.empty() && finished_ < choices_) cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  while (!events_.empty()) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return finished_ < choices_ || !out.empty();
}

int64_t Stream::completion_tokens() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return completion_tokens_;
}

bool Stream::post(Event e, int64_t tokens) {
  bool all = false;
  {
    const std::lock_guard<std::mutex> lock(mu_);
    completion_tokens_ += tokens;
    if (!e.finish_reason.empty()) all = ++finished_ == choices_;
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
  return all;
}

// ---- the engine -------------------------------------------------------------------

struct Engine::Slot {
  std::shared_ptr<const Request> req;
  std::shared_ptr<Stream> stream;
  Clock::time_point queued;
  int64_t choice = 0;
  llm::Model::SequenceId seq = 0;  // 0: a fork waiting for its parent's prefill
  Slot* parent = nullptr;
  std::vector<int32_t> tokens;  // the prompt, then each sampled token
  int64_t fed = 0;              // tokens in the sequence's cache
  int64_t generated = 0;
  std::unique_ptr<Generator> gen;
  std::unique_ptr<StreamDecoder> dec;
  std::string held;              // text that may begin a stop string
  std::vector<int64_t> history;  // for the penalties
  std::vector<float> row;        // the logits the sampler may modify
  std::vector<float> raw;        // constrained: the logits with refused tokens at -inf
  std::optional<JsonMatcher> matcher;  // response_format: where the JSON text stands
  bool done = false;
};

Engine::Engine(llm::Model& model, EngineOptions options, Metrics& metrics)
    : model_(model), opt_(options), metrics_(metrics) {
  KILN_CHECK(opt_.max_batch >= 1 && opt_.step_tokens >= 1 && opt_.max_queue >= 0 && opt_.idle_sequences >= 0,
             ValueError, "[serve] max_batch and step_tokens must be >= 1, max_queue and idle_sequences >= 0");
  opt_.step_tokens = std::min(opt_.step_tokens, model_.max_batch_tokens());
  KILN_CHECK(opt_.max_batch <= opt_.step_tokens, ValueError,
             "[serve] max_batch " << opt_.max_batch << " is more than the rows of one step ("
                                  << opt_.step_tokens << ")");
  const Tokenizer& tok = model_.tokenizer();  // ValueError when the model has none
  for (int64_t e : model_.config().eos_token_ids) eos_.push_back(int32_t(e));
  if (const auto e = tok.eos_id()) eos_.push_back(*e);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<Stream> Engine::submit(Request r) {
  const int64_t V = model_.config().vocab_size, ctx = model_.max_context();
  KILN_CHECK(!r.prompt.empty(), ValueError, "the prompt is empty");
  KILN_CHECK(int64_t(r.prompt.size()) < ctx, ValueError,
             "the prompt is " << r.prompt.size() << " tokens; this model's context is " << ctx << " tokens");
  for (int32_t t : r.prompt)
    KILN_CHECK(t >= 0 && t < V, ValueError,
               "token id " << t << " is outside the vocabulary [0, " << V << ")");
  KILN_CHECK(r.n >= 1 && r.n <= opt_.max_batch, ValueError,
             "n must be between 1 and " << opt_.max_batch << ", got " << r.n);
  KILN_CHECK(r.max_tokens >= 1, ValueError, "max_tokens must be >= 1, got " << r.max_tokens);
  KILN_CHECK(r.top_logprobs >= -1 && r.top_logprobs <= 20, ValueError,
             "top_logprobs must be between 0 and 20, got " << r.top_logprobs);
  llm::detail::check_stop_strings(r.stop);
  auto stream = std::make_shared<Stream>(r.n);
  stream->set_prompt_tokens(int64_t(r.prompt.size()));
  {
    const std::lock_guard<std::mutex> lock(mu_);
    KILN_CHECK(!stop_, Error, "the server is shutting down");
    if (int64_t(queue_.size() + waiting_size_.load()) >= opt_.max_queue)
      throw QueueFull("the server's queue is full (" + std::to_string(opt_.max_queue) +
                      " requests); retry later");
    queue_.push_back({std::move(r), stream, Clock::now()});
    metrics_.waiting = int64_t(queue_.size()) + waiting_size_.load();
  }
  cv_.notify_all();
  return stream;
}

// A sequence for `prompt`: an idle one holding the longest prefix of it (kept
// up to the prompt's last token, which must run to give logits), a copy of a
// running sequence's prefix when that is longer, or an empty one.
llm::Model::SequenceId Engine::acquire(const std::vector<int32_t>& prompt, int64_t& reused) {
  const int64_t limit = int64_t(prompt.size()) - 1;
  size_t best_idle = idle_.size();
  int64_t idle_len = 0;
  for (size_t i = 0; i < idle_.size(); ++i) {
    const int64_t L = int64_t(common_prefix(idle_[i].cached.data(), idle_[i].cached.size(), prompt));
    if (L > idle_len) idle_len = L, best_idle = i;
  }
  const Slot* best_run = nullptr;
  int64_t run_len = 0;
  for (const auto& s : slots_) {
    if (s->seq == 0) continue;
    const int64_t L = int64_t(common_prefix(s->tokens.data(), size_t(s->fed), prompt));
    if (L > run_len) run_len = L, best_run = s.get();
  }
  idle_len = std::min(idle_len, limit);
  run_len = std::min(run_len, limit);
  if (best_run && run_len > idle_len && run_len >= kMinCopiedPrefix) {
    const auto id = fresh_sequence();
    model_.copy_sequence(best_run->seq, id, run_len);
    reused = run_len;
    return id;
  }
  if (best_idle < idle_.size() && idle_len > 0) {
    const auto id = idle_[best_idle].seq;
    idle_.erase(idle_.begin() + std::ptrdiff_t(best_idle));
    model_.truncate_sequence(id, idle_len);
    reused = idle_len;
    return id;
  }
  reused = 0;
  return fresh_sequence();
}

// An empty sequence: the least recently used idle one when the idle pool is
// full (its memory is already committed), else a new one.
llm::Model::SequenceId Engine::fresh_sequence() {
  if (!idle_.empty() && int64_t(idle_.size()) >= opt_.idle_sequences) {
    const auto id = idle_.front().seq;
    idle_.erase(idle_.begin());
    model_.truncate_sequence(id, 0);
    return id;
  }
  return model_.open_sequence();
}

void Engine::admit(Pending p) {
  auto req = std::make_shared<const Request>(std::move(p.req));
  Slot* first = nullptr;
  for (int64_t c = 0; c < req->n; ++c) {
    auto s = std::make_unique<Slot>();
    s->req = req;
    s->stream = p.stream;
    s->queued = p.queued;
    s->choice = c;
    s->tokens = req->prompt;
    s->gen = std::make_unique<Generator>(req->seed + uint64_t(c));
    s->dec = std::make_unique<StreamDecoder>(model_.tokenizer());
    s->history.assign(req->prompt.begin(), req->prompt.end());
    if (req->schema) {
      load_token_bytes();
      s->matcher.emplace(*req->schema);
    }
    if (c == 0) {
      int64_t reused = 0;
      s->seq = acquire(req->prompt, reused);
      s->fed = reused;
      metrics_.prompt_tokens += int64_t(req->prompt.size());
      metrics_.prompt_tokens_reused += reused;
      first = s.get();
    } else {
      s->parent = first;
    }
    slots_.push_back(std::move(s));
  }
}

void Engine::release(Slot& s) {
  if (s.seq == 0) return;
  idle_.push_back({s.seq, std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + s.fed)});
  s.seq = 0;
  while (int64_t(idle_.size()) > opt_.idle_sequences) {
    model_.close_sequence(idle_.front().seq);
    idle_.erase(idle_.begin());
  }
}

void Engine::finish(Slot& s, const char* reason) {
  if (s.done) return;
  s.done = true;
  Event e;
  e.choice = s.choice;
  bool stopped = false;
  e.text = llm::detail::push_past_stops(s.req->stop, s.held, s.dec->flush(), stopped);
  e.text += s.held;
  s.held.clear();
  e.finish_reason = stopped ? "stop" : reason;
  if (s.stream->post(std::move(e), 0)) metrics_.request_seconds.observe(seconds_since(s.queued));
}

bool Engine::sample(Slot& s, const float* logits) {
  const Request& r = *s.req;
  const int64_t V = model_.config().vocab_size;
  s.row.assign(logits, logits + V);
  if (std::isnan(logits_max_(s.row.data(), V))) {
    finish(s, "error");
    return false;
  }
  const int32_t tok = s.matcher ? sample_constrained(s, logits, V)
                                : int32_t(sample_row_(s.row.data(), V, r.sampling, s.history.data(),
                                                      int64_t(s.history.size()), *s.gen));
  if (tok < 0) {  // the schema allows nothing the model can say (cannot happen once a value may end)
    finish(s, "length");
    return false;
  }
  Event e;
  e.choice = s.choice;
  if (r.top_logprobs >= 0) {
    // log_softmax of the raw logits at the sampled token and the top alternatives.
    double mx = -INFINITY;
    for (int64_t i = 0; i < V; ++i) mx = std::max(mx, double(logits[i]));
    double sum = 0;
    for (int64_t i = 0; i < V; ++i) sum += std::exp(double(logits[i]) - mx);
    const double lse = mx + std::log(sum);
    TokenInfo info;
    info.id = tok;
    info.logprob = float(double(logits[tok]) - lse);
    if (r.top_logprobs > 0) {
      std::vector<int32_t> idx(static_cast<size_t>(V));
      for (int32_t i = 0; i < int32_t(V); ++i) idx[size_t(i)] = i;
      const auto k = std::ptrdiff_t(std::min<int64_t>(r.top_logprobs, V));
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
      for (std::ptrdiff_t i = 0; i < k; ++i)
        info.top.push_back({idx[size_t(i)], float(double(logits[idx[size_t(i)]]) - lse)});
    }
    e.tokens.push_back(std::move(info));
  }
  s.tokens.push_back(tok);
  s.history.push_back(tok);
  ++s.generated;
  ++metrics_.generated_tokens;
  if (s.generated == 1 && s.choice == 0) metrics_.time_to_first_token.observe(seconds_since(s.queued));
  const bool eos = r.stop_at_eos && std::find(eos_.begin(), eos_.end(), tok) != eos_.end();
  bool stopped = false;
  if (!eos) e.text = llm::detail::push_past_stops(r.stop, s.held, s.dec->push(tok), stopped);
  if (!eos && s.matcher) {
    s.matcher->advance(token_bytes_[size_t(tok)]);  // allowed: sample_constrained checked it
    stopped |= s.matcher->done();                   // the JSON value is closed
  }
  const bool full = s.generated >= r.max_tokens || int64_t(s.tokens.size()) >= model_.max_context();
  if (!eos && !stopped && !full) {
    s.stream->post(std::move(e), 1);
    return true;
  }
  // The last token: its text and the flushed remainder in one event.
  if (!stopped) {
    e.text += llm::detail::push_past_stops(r.stop, s.held, s.dec->flush(), stopped);
    if (!stopped) e.text += s.held;
  }
  s.held.clear();
  s.done = true;
  e.finish_reason = (eos || stopped) ? "stop" : "length";
  if (s.stream->post(std::move(e), 1)) metrics_.request_seconds.observe(seconds_since(s.queued));
  return false;
}

void Engine::load_token_bytes() {
  if (!token_bytes_.empty()) return;
  const Tokenizer& tok = model_.tokenizer();
  const int64_t V = model_.config().vocab_size;
  token_bytes_.resize(size_t(V));
  token_special_.assign(size_t(V), 0);
  for (int32_t i = 0; i < int32_t(V); ++i) {
    if (i < tok.vocab_size())
      token_bytes_[size_t(i)] = tok.impl().decode_bytes(std::span<const int32_t>(&i, 1), false);
    token_special_[size_t(i)] = i >= tok.vocab_size() || tok.is_special(i) || token_bytes_[size_t(i)].empty();
  }
}

// A token the schema allows, drawn as sample_row_ draws from the logits with
// every refused token removed: draw, and while the draw is refused, remove it
// and draw again; after a few refusals, remove every refused token at once.
int32_t Engine::sample_constrained(Slot& s, const float* logits, int64_t V) {
  const Request& r = *s.req;
  auto allowed = [&](int32_t t) {
    if (std::find(eos_.begin(), eos_.end(), t) != eos_.end()) return s.matcher->can_end();
    if (token_special_[size_t(t)]) return false;
    JsonMatcher m = *s.matcher;
    return m.advance(token_bytes_[size_t(t)]);
  };
  auto draw = [&] {
    s.row = s.raw;
    return int32_t(
        sample_row_(s.row.data(), V, r.sampling, s.history.data(), int64_t(s.history.size()), *s.gen));
  };
  s.raw.assign(logits, logits + V);
  for (int tries = 0; tries < 8; ++tries) {
    const int32_t t = draw();
    if (allowed(t)) return t;
    s.raw[size_t(t)] = -INFINITY;
  }
  bool any = false;
  for (int32_t t = 0; t < int32_t(V); ++t) {
    if (s.raw[size_t(t)] == -INFINITY) continue;
    if (allowed(t))
      any = true;
    else
      s.raw[size_t(t)] = -INFINITY;
  }
  return any ? draw() : -1;
}

void Engine::loop() {
  std::vector<llm::Model::BatchItem> items;
  std::vector<Slot*> owners;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !slots_.empty() || !waiting_.empty(); });
      if (stop_) break;
      while (!queue_.empty()) {
        waiting_.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      waiting_size_ = int64_t(waiting_.size());
    }
    try {
      // Clients that went away free their places; finished choices leave.
      for (auto& s : slots_)
        if (!s->done && s->stream->cancelled()) {
          if (s->choice == 0) ++metrics_.cancelled;
          finish(*s, "cancelled");
        }
      std::erase_if(waiting_, [&](const Pending& p) {
        if (!p.stream->cancelled()) return false;
        ++metrics_.cancelled;
        return true;
      });
      // A choice waiting for its first choice's prompt ends with it (cancelled, or an error).
      for (auto& s : slots_)
        if (!s->done && s->parent && s->parent->done) finish(*s, "error");
      for (auto& s : slots_)
        if (s->done) release(*s);
      std::erase_if(slots_, [](const auto& s) { return s->done; });
      // Requests join while there is room for all their choices.
      while (!waiting_.empty() && int64_t(slots_.size()) + waiting_.front().req.n <= opt_.max_batch) {
        Pending p = std::move(waiting_.front());
        waiting_.pop_front();
        const auto stream = p.stream;
        const int64_t n = p.req.n;
        try {
          admit(std::move(p));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "kiln serve: a request could not start: %s\n", e.what());
          for (int64_t c = 0; c < n; ++c) stream->post(Event{c, "", {}, "error"}, 0);
        }
      }
      waiting_size_ = int64_t(waiting_.size());
      {
        const std::lock_guard<std::mutex> lock(mu_);
        metrics_.waiting = int64_t(queue_.size()) + waiting_size_.load();
      }
      metrics_.running = int64_t(slots_.size());
      // The step: every decoding choice's token, then prompt chunks in arrival order.
      items.clear();
      owners.clear();
      int64_t rows = 0;
      for (auto& s : slots_)
        if (!s->done && s->seq != 0 && s->generated > 0 && s->fed < int64_t(s->tokens.size())) {
          items.push_back({s->seq, std::span<const int32_t>(s->tokens.data() + s->fed, 1)});
          owners.push_back(s.get());
          ++rows;
        }
      for (auto& s : slots_) {
        if (s->done || s->seq == 0 || s->generated > 0) continue;
        const int64_t chunk = std::min(int64_t(s->tokens.size()) - s->fed, opt_.step_tokens - rows);
        if (chunk <= 0) break;
        items.push_back({s->seq, std::span<const int32_t>(s->tokens.data() + s->fed, size_t(chunk))});
        owners.push_back(s.get());
        rows += chunk;
      }
      if (items.empty()) continue;
      const auto t0 = Clock::now();
      Tensor logits;
      try {
        logits = model_.forward_batch(items);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kiln serve: a step failed: %s\n", e.what());
        for (Slot* s : owners) finish(*s, "error");
        continue;
      }
      const int64_t V = logits.size(1);
      std::vector<std::pair<Slot*, const float*>>& draws = draws_;
      draws.clear();
      for (size_t i = 0; i < owners.size(); ++i) {
        Slot& s = *owners[i];
        s.fed += int64_t(items[i].tokens.size());
        if (s.fed < int64_t(s.tokens.size())) continue;  // a prompt chunk: more to come
        const float* row = logits.data<float>() + int64_t(i) * V;
        if (s.generated == 0) {
          // The prompt is in: its other choices copy the cache and sample from the same logits.
          for (auto& o : slots_)
            if (o->parent == &s && o->seq == 0 && !o->done) {
              o->seq = fresh_sequence();
              model_.copy_sequence(s.seq, o->seq, s.fed);
              o->fed = s.fed;
              o->parent = nullptr;
              draws.emplace_back(o.get(), row);
            }
        }
        draws.emplace_back(&s, row);
      }
      // Each choice samples with its own generator, scratch row and decoder: in
      // parallel (a full-vocabulary softmax per row is not free at 16+ rows).
      parallel_for(0, int64_t(draws.size()), 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) sample(*draws[size_t(i)].first, draws[size_t(i)].second);
      });
      ++metrics_.steps;
      metrics_.step_seconds.observe(seconds_since(t0));
    } catch (const std::exception& e) {
      // A failure outside any one request (memory for a new sequence, a
      // kernel error): the requests in the batch end with an error, the
      // server keeps serving.
      std::fprintf(stderr, "kiln serve: a step failed: %s\n", e.what());
      for (auto& s : slots_) finish(*s, "error");
    }
  }
  // Stopping: every request still here ends cancelled.
  for (auto& s : slots_) finish(*s, "cancelled");
  for (auto& p : waiting_)
    for (int64_t c = 0; c < p.req.n; ++c) p.stream->post(Event{c, "", {}, "cancelled"}, 0);
  const std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : queue_)
    for (int64_t c = 0; c < p.req.n; ++c) p.stream->post(Event{c, "", {}, "cancelled"}, 0);
}

}  // namespace kiln::serve
