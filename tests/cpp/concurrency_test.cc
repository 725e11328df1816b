// Objects used from several threads at once: the thread pool, a language
// model (calls on one model serialise, a callback may not re-enter the model
// that runs it), the tokenizer and its word cache, chat templates and random
// generators. Results are compared with single-threaded runs; the `tsan`
// preset runs this file under ThreadSanitizer, which must report nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/tokenizer/impl.h"
#include "kiln/chat_template.h"
#include "kiln/error.h"
#include "kiln/llm/generate.h"
#include "kiln/llm/model.h"
#include "kiln/random.h"
#include "kiln/thread_pool.h"
#include "kiln/tokenizer.h"

using kiln::Tensor;
using kiln::llm::Model;

namespace {

// Runs fn(i) on n threads that start together.
void on_threads(int n, const std::function<void(int)>& fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();
      fn(i);
    });
  for (auto& t : ts) t.join();
}

std::string data(const std::string& rel) { return std::string(KILN_TEST_DATA_DIR) + "/" + rel; }

std::unique_ptr<Model> tiny_llama() {
  kiln::llm::LoadOptions o;
  o.weights = kiln::llm::WeightFormat::F32;
  o.kv_dtype = kiln::DType::Float32;
  o.max_context = 256;
  return Model::load(data("models/tiny-llama"), o);
}

// tiny-llama with a byte-level tokenizer of its 256 ids, so generations
// produce text pieces (and on_piece runs).
std::unique_ptr<Model> tiny_llama_with_tokenizer() {
  auto m = tiny_llama();
  kiln::TokenizerParts p;
  for (int b = 0; b < 256; ++b) p.tokens.push_back(kiln::tok::vocab_form_from_bytes(std::string(1, char(b))));
  kiln::llm::LoadOptions o;
  o.weights = kiln::llm::WeightFormat::F32;
  o.kv_dtype = kiln::DType::Float32;
  o.max_context = 256;
  return Model::from_tensors(m->config(), m->named_weights(), o, kiln::Tokenizer::from_parts(p));
}

const std::vector<std::vector<int32_t>> kPrompts = {{3, 4, 5, 6, 7, 8, 9, 10},
                                                    {200, 17, 99, 42, 5, 1, 250, 77, 31, 64, 12}};

// Logits [n, V] of ids from a fresh cache, copied out while the model is held.
std::vector<float> logits(Model& m, const std::vector<int32_t>& ids) {
  const Model::Use use(m, "[test]");
  m.reset();
  const Tensor t = m.forward(ids, true);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

kiln::llm::GenerateOptions greedy(int64_t n) {
  kiln::llm::GenerateOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  o.stop_at_eos = false;
  return o;
}

// A whole generation from a fresh cache: its tokens and its text.
std::pair<std::vector<int32_t>, std::string> generate(Model& m, const std::vector<int32_t>& prompt,
                                                      int64_t n) {
  std::vector<int32_t> toks;
  std::string text;
  {
    const Model::Use use(m, "[test]");  // the reset and the generation together
    m.reset();
    kiln::llm::Generation g(m, prompt, greedy(n));
    std::string piece;
    bool more = true;
    while (more) {
      more = g.next(piece);
      text += piece;
    }
    toks = g.generated();
  }
  return {toks, text};
}

}  // namespace

// ---- thread pool ----------------------------------------------------------------

TEST(ConcurrencyThreadPool, ParallelForFromSeveralThreadsAtOnce) {
  constexpr int kThreads = 4, kRounds = 50;
  constexpr int64_t n = 10007;
  std::vector<std::vector<int>> hits(kThreads, std::vector<int>(size_t(n)));
  on_threads(kThreads, [&](int t) {
    for (int r = 0; r < kRounds; ++r)
      kiln::parallel_for(0, n, 64, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(t)][size_t(i)] += 1;
      });
  });
  for (const auto& h : hits)
    for (int x : h) ASSERT_EQ(x, kRounds);
}

TEST(ConcurrencyThreadPool, NestedRegionsFromSeveralThreads) {
  std::vector<std::atomic<int64_t>> sums(4);
  on_threads(4, [&](int t) {
    for (int r = 0; r < 20; ++r)
      kiln::parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
        EXPECT_TRUE(kiln::in_parallel_region());
        kiln::parallel_for(b * 100, e * 100, 1, [&](int64_t bb, int64_t ee) { sums[size_t(t)] += ee - bb; });
      });
    EXPECT_FALSE(kiln::in_parallel_region());
  });
  for (auto& s : sums) EXPECT_EQ(s.load(), 20 * 6400);
}

TEST(ConcurrencyThreadPool, ResizeWhileOtherThreadsRunRegions) {
  const int before = kiln::num_threads();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> wrong{0};
  std::thread resizer([&] {
    for (int r = 0; r < 40; ++r) kiln::set_num_threads(1 + r % 4);
    stop = true;
  });
  on_threads(3, [&](int) {
    while (!stop.load()) {
      std::atomic<int64_t> covered{0};
      kiln::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { covered += e - b; });
      if (covered.load() != 1000) wrong += 1;
      const int n = kiln::num_threads();
      if (n < 1 || n > 4 + before) wrong += 1;
    }
  });
  resizer.join();
  EXPECT_EQ(wrong.load(), 0);
  kiln::set_num_threads(before);
  EXPECT_EQ(kiln::num_threads(), before);
}

// ---- language model -----------------------------------------------------------------

TEST(ConcurrencyModel, LogitsFromTwoThreadsOnOneModelEqualSingleThreaded) {
  auto m = tiny_llama();
  const std::vector<float> want[2] = {logits(*m, kPrompts[0]), logits(*m, kPrompts[1])};
  std::atomic<int> wrong{0};
  on_threads(2, [&](int t) {
    for (int r = 0; r < 10; ++r)
      if (logits(*m, kPrompts[size_t(t)]) != want[t]) wrong += 1;
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConcurrencyModel, ForwardCallsFromTwoThreadsSerialise) {
  // forward() calls from two threads each run whole: every token lands in the
  // cache once, and the cache then holds what single-threaded calls in the
  // order they ran would have left.
  auto m = tiny_llama();
  m->reset();
  std::mutex order_mu;
  std::vector<int32_t> order;
  on_threads(2, [&](int t) {
    for (int r = 0; r < 20; ++r) {
      const int32_t tok = int32_t(10 * t + r % 10);
      const Model::Use use(*m, "[test]");  // only to record the order the calls ran in
      m->forward(std::vector<int32_t>{tok});
      const std::lock_guard<std::mutex> lock(order_mu);
      order.push_back(tok);
    }
  });
  ASSERT_EQ(m->position(), 40);
  const Tensor t = m->forward(std::vector<int32_t>{7});
  const std::vector<float> got(t.data<float>(), t.data<float>() + t.numel());
  m->reset();
  for (int32_t tok : order) m->forward(std::vector<int32_t>{tok});
  const Tensor u = m->forward(std::vector<int32_t>{7});
  EXPECT_EQ(got, std::vector<float>(u.data<float>(), u.data<float>() + u.numel()));
  // And without a Use around them: 2 x 20 single-token calls end at position 40.
  m->reset();
  on_threads(2, [&](int t) {
    for (int r = 0; r < 20; ++r) m->forward(std::vector<int32_t>{int32_t(5 + t)});
  });
  EXPECT_EQ(m->position(), 40);
}

TEST(ConcurrencyModel, GenerateFromTwoThreadsOnOneModelEqualsSingleThreaded) {
  auto m = tiny_llama_with_tokenizer();
  const auto want0 = generate(*m, kPrompts[0], 12), want1 = generate(*m, kPrompts[1], 12);
  ASSERT_FALSE(want0.second.empty());
  std::atomic<int> wrong{0};
  on_threads(2, [&](int t) {
    for (int r = 0; r < 4; ++r) {
      // Held generations wait for each other.
      if (generate(*m, kPrompts[size_t(t)], 12) != (t == 0 ? want0 : want1)) wrong += 1;
      // generate() holds the model for the whole generation by itself (the
      // Use here keeps another thread's calls out between the reset and it).
      std::string text;
      {
        const Model::Use use(*m, "[test]");
        m->reset();
        kiln::llm::generate(*m, kPrompts[size_t(t)], greedy(12), [&](std::string_view p) { text += p; });
      }
      if (text != (t == 0 ? want0 : want1).second) wrong += 1;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConcurrencyModel, GenerateOnTwoModelsInParallel) {
  std::unique_ptr<Model> ms[2] = {tiny_llama(), tiny_llama()};
  const auto want0 = generate(*ms[0], kPrompts[0], 24), want1 = generate(*ms[0], kPrompts[1], 24);
  std::atomic<int> wrong{0};
  on_threads(2, [&](int t) {
    for (int r = 0; r < 3; ++r)
      if (generate(*ms[t], kPrompts[size_t(t)], 24) != (t == 0 ? want0 : want1)) wrong += 1;
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConcurrencyModel, AGenerationInterleavedWithAnotherCallIsRefused) {
  auto m = tiny_llama();
  m->reset();
  kiln::llm::Generation g(*m, kPrompts[0], greedy(4));
  logits(*m, kPrompts[1]);  // moves the cache before the generation's first step
  std::string piece;
  try {
    g.next(piece);
    FAIL() << "a generation continued from another call's tokens";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[generate] the model's KV cache was reset or used by another call"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConcurrencyModel, ACallbackCallingTheModelThatRunsItThrows) {
  auto m = tiny_llama_with_tokenizer();
  const auto want = generate(*m, kPrompts[0], 12);
  // Each of these, from on_piece, would run inside the generation (or wait on
  // itself): it throws instead, and the generation ends with that error.
  const std::vector<std::function<void()>> reentries = {
      [&] { m->forward(std::vector<int32_t>{1}); },
      [&] { m->reset(); },
      [&] { logits(*m, kPrompts[1]); },
      [&] { kiln::llm::generate(*m, kPrompts[1], greedy(2), nullptr); },
  };
  for (const auto& reenter : reentries) {
    m->reset();
    int calls = 0;
    try {
      kiln::llm::generate(*m, kPrompts[0], greedy(12), [&](std::string_view) {
        ++calls;
        reenter();
      });
      ADD_FAILURE() << "the callback used the model that runs it";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("in use by this thread"), std::string::npos) << e.what();
    }
    EXPECT_EQ(calls, 1);
    // The model is free again, and a callback may use other models.
    EXPECT_EQ(generate(*m, kPrompts[0], 12), want);
  }
  auto other = tiny_llama();
  m->reset();
  std::string text;
  kiln::llm::generate(*m, kPrompts[0], greedy(12), [&](std::string_view p) {
    text += p;
    logits(*other, kPrompts[1]);
  });
  EXPECT_EQ(text, want.second);
}

// ---- tokenizer, chat template, random -------------------------------------------------

TEST(ConcurrencyTokenizer, EncodeDecodeFromFourThreadsEqualSingleThreaded) {
  std::ifstream f(data("text/mill_on_the_river.txt"));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
  std::vector<std::string> texts;
  for (size_t i = 0; i < all.size(); i += 40) texts.push_back(all.substr(i, 40 + i % 3));
  texts.push_back("<|im_start|>user\nnaïve 日本語 👍🏽 don't<|im_end|>");
  texts.push_back(all);
  const kiln::Tokenizer single = kiln::Tokenizer::from_file(KILN_QWEN3_TOKENIZER);
  std::vector<std::vector<int32_t>> want;
  for (const auto& t : texts) want.push_back(single.encode(t));
  // A fresh tokenizer (an empty word cache) that four threads fill and read at once.
  const kiln::Tokenizer tok = kiln::Tokenizer::from_file(KILN_QWEN3_TOKENIZER);
  const size_t n = texts.size();
  std::atomic<int> wrong{0};
  on_threads(4, [&](int t) {
    for (size_t k = 0; k < n; ++k) {
      const size_t j = (k + size_t(t) * n / 4) % n;
      const std::vector<int32_t> ids = tok.encode(texts[j]);
      if (ids != want[j]) wrong += 1;
      if (tok.decode(ids) != single.decode(want[j])) wrong += 1;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConcurrencyTokenizer, ChatTemplateFromFourThreads) {
  const kiln::Tokenizer tok = kiln::Tokenizer::from_file(KILN_QWEN3_TOKENIZER);
  ASSERT_FALSE(tok.chat_template().empty());
  auto messages = [](int t) {
    kiln::jinja::List l;
    for (int i = 0; i <= t; ++i) {
      kiln::jinja::Dict d;
      d.set("role", kiln::jinja::Value(i % 2 ? "assistant" : "user"));
      d.set("content", kiln::jinja::Value("message " + std::to_string(i)));
      l.push_back(kiln::jinja::Value(std::move(d)));
    }
    return kiln::jinja::Value(std::move(l));
  };
  std::vector<std::string> want;
  for (int t = 0; t < 4; ++t) want.push_back(kiln::apply_chat_template(tok, messages(t), true));
  std::atomic<int> wrong{0};
  on_threads(4, [&](int t) {
    for (int r = 0; r < 20; ++r)
      if (kiln::apply_chat_template(tok, messages(t), true) != want[size_t(t)]) wrong += 1;
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConcurrencyRandom, OneGeneratorFromSeveralThreads) {
  // Draws from one generator take distinct counters whichever thread makes
  // them, and reseeding it meanwhile is no data race (a draw then uses the old
  // or the new seed).
  kiln::Generator g(7);
  std::atomic<int> drawing{3};
  std::vector<std::vector<float>> draws(3);
  on_threads(4, [&](int t) {
    if (t == 3) {
      while (drawing.load() > 0) g.manual_seed(7);
      return;
    }
    for (int r = 0; r < 2000; ++r) {
      const Tensor x = kiln::rand({16}, kiln::DType::Float32, &g);
      draws[size_t(t)].insert(draws[size_t(t)].end(), x.data<float>(), x.data<float>() + 16);
    }
    drawing -= 1;
  });
  for (const auto& d : draws)
    for (float v : d) ASSERT_TRUE(v >= 0.0f && v < 1.0f);
  // Without reseeding, three threads' draws are 3 x 200 distinct blocks of the
  // one stream: together, the single-threaded draws in some order.
  kiln::Generator h(11), single(11);
  std::vector<std::vector<float>> blocks(3);
  on_threads(3, [&](int t) {
    for (int r = 0; r < 200; ++r) {
      const Tensor x = kiln::rand({16}, kiln::DType::Float32, &h);
      blocks[size_t(t)].insert(blocks[size_t(t)].end(), x.data<float>(), x.data<float>() + 16);
    }
  });
  std::vector<float> got, want;
  for (const auto& b : blocks) got.insert(got.end(), b.begin(), b.end());
  for (int r = 0; r < 600; ++r) {
    const Tensor x = kiln::rand({16}, kiln::DType::Float32, &single);
    want.insert(want.end(), x.data<float>(), x.data<float>() + 16);
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}
