// The context length and what it costs: the default is the model's trained
// length; a context whose KV cache cannot fit is refused up front with the
// bytes it needs; a long context commits memory only for the positions used
// (the KV cache is a reservation the OS fills page by page) and gives the
// same logits; generation bounds (max_tokens) are bounds, never sizes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "kiln/allocator.h"
#include "kiln/error.h"
#include "kiln/io/model_config.h"
#include "kiln/kv_cache.h"
#include "kiln/llm/generate.h"
#include "kiln/llm/model.h"
#include "kiln/nn.h"
#include "matmul_test_util.h"

using kiln::DType;
using kiln::Tensor;
using kiln::llm::LoadOptions;
using kiln::llm::Model;

namespace {

std::string tiny() { return std::string(KILN_TEST_DATA_DIR) + "/models/tiny-llama"; }

// Resident memory of this process, from /proc/self/statm.
int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * int64_t(::sysconf(_SC_PAGESIZE));
}

int64_t meminfo(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  int64_t kib = 0;
  std::string unit;
  while (f >> k >> kib) {
    std::getline(f, unit);
    if (k == key + ":") return kib * 1024;
  }
  return 0;
}

LoadOptions f32(int64_t context = 0) {
  LoadOptions o;
  o.weights = kiln::llm::WeightFormat::F32;
  o.kv_dtype = DType::BFloat16;
  o.max_context = context;
  return o;
}

// tiny-llama with its config's trained length replaced.
std::unique_ptr<Model> tiny_trained_for(int64_t trained, const LoadOptions& o) {
  kiln::io::ModelConfig cfg = kiln::io::load_hf_config(tiny());
  cfg.max_position_embeddings = trained;
  auto base = Model::load(tiny(), f32(16));
  return Model::from_tensors(cfg, base->named_weights(), o);
}

double rel_err(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  double md = 0, mr = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    md = std::max(md, std::abs(double(x.data<float>()[i]) - double(y.data<float>()[i])));
    mr = std::max(mr, std::abs(double(y.data<float>()[i])));
  }
  return md / std::max(mr, 1e-30);
}

std::vector<int32_t> ids_of(int64_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = int32_t((i * 37 + 11) % 256);
  return ids;
}

}  // namespace

// The default context is the length the model was trained for (it was capped
// at 4096 before, so an 8192-token model ran with half its context).
TEST(LlmContext, DefaultIsTheTrainedLength) {
  auto m = tiny_trained_for(8192, f32());
  EXPECT_EQ(m->max_context(), 8192);
  EXPECT_EQ(Model::load(tiny(), f32())->max_context(), 256);  // its config.json
}

// A trained length no machine can hold is lowered to what fits, at load, without a wait.
TEST(LlmContext, DefaultIsLoweredToWhatFits) {
  auto m = tiny_trained_for(int64_t(1) << 50, f32());
  EXPECT_LT(m->max_context(), int64_t(1) << 50);
  EXPECT_GE(m->max_context(), 256);
  EXPECT_LE(m->kv_cache_bytes(), meminfo("MemTotal"));
}

// An explicit context whose cache cannot fit is refused before anything is
// allocated, with the bytes it needs (it threw std::bad_alloc or
// std::length_error from the rotary table before).
TEST(LlmContext, UnfittableContextIsRefusedWithTheSize) {
  for (int64_t ctx : {int64_t(1) << 50, int64_t(1) << 62, INT64_MAX}) {
    std::string what;
    try {
      Model::load(tiny(), f32(ctx));
    } catch (const kiln::ValueError& e) {
      what = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a ValueError: " << e.what();
    }
    const std::string head = "[llm] a context of " + std::to_string(ctx) + " tokens needs ";
    EXPECT_EQ(what.rfind(head, 0), 0u) << what;
    EXPECT_NE(what.find("for the KV cache (512 bytes per token)"), std::string::npos) << what;
    EXPECT_NE(what.find("available (at most "), std::string::npos) << what;
  }
  // 2^50 tokens x 512 bytes = 2^59 bytes = 512 PiB.
  try {
    Model::load(tiny(), f32(int64_t(1) << 50));
  } catch (const kiln::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 512.0 PiB"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Model::load(tiny(), f32(-1)), kiln::ValueError);
}

// A context of 2M positions (1 GiB of bf16 cache for tiny-llama, all of it
// zero-filled at load before) commits memory only for what is used, gives the
// logits of a short context, and decodes across page boundaries without
// allocating.
TEST(LlmContext, LongContextCommitsOnlyWhatIsUsed) {
  const int64_t ctx = int64_t(1) << 21, cache = ctx * 512;
  if (meminfo("MemAvailable") < 2 * cache) GTEST_SKIP() << "less than 2 GiB of memory available";
  auto small = Model::load(tiny(), f32(1024));
  const int64_t before = rss_bytes();
  auto m = Model::load(tiny(), f32(ctx));
  ASSERT_EQ(m->max_context(), ctx);
  EXPECT_EQ(m->kv_cache_bytes(), cache);
  const std::vector<int32_t> ids = ids_of(600);  // two prefill chunks
  const Tensor a = m->forward(ids, true).clone();
  EXPECT_LT(rss_bytes() - before, int64_t(64) << 20);
  const Tensor b = small->forward(ids, true);
  EXPECT_LT(rel_err(a, b), 1e-6);
  // 200 decode steps: bf16 rows of 64 bytes per head, so a new page every 64 positions.
  const int32_t tok = 7;
  m->forward(std::span<const int32_t>(&tok, 1));
  small->forward(std::span<const int32_t>(&tok, 1));
  const auto allocs = kiln::memory_stats().alloc_count;
  for (int i = 0; i < 200; ++i) m->forward(std::span<const int32_t>(&tok, 1));
  EXPECT_EQ(kiln::memory_stats().alloc_count, allocs);
  for (int i = 0; i < 200; ++i) small->forward(std::span<const int32_t>(&tok, 1));
  EXPECT_LT(rel_err(m->forward(std::span<const int32_t>(&tok, 1)),
                    small->forward(std::span<const int32_t>(&tok, 1))),
            1e-6);
  EXPECT_LT(rss_bytes() - before, int64_t(64) << 20);
}

// max_tokens bounds a generation; it is not a size to reserve (INT64_MAX threw
// std::length_error "vector::reserve"). A negative bound is an error, not an
// empty generation.
TEST(LlmContext, HugeMaxTokensRunsToTheEndOfTheContext) {
  auto m = Model::load(tiny(), f32(40));
  for (int64_t n : {INT64_MAX, INT64_MAX - 2, int64_t(1) << 62}) {
    kiln::llm::GenerateOptions o;
    o.max_tokens = n;
    o.sampling.temperature = 0;
    o.stop_at_eos = false;
    m->reset();
    kiln::llm::Generation g(*m, {5, 6, 7}, o);
    std::string piece;
    while (g.next(piece)) {
    }
    EXPECT_EQ(g.stats().stop_reason, "context");
    EXPECT_EQ(g.generated().size(), 38u);  // 40 - 3 positions, and the last token sampled
  }
  kiln::llm::GenerateOptions neg;
  neg.max_tokens = -1;
  m->reset();
  try {
    kiln::llm::Generation g(*m, {5, 6, 7}, neg);
    ADD_FAILURE() << "max_tokens -1 accepted";
  } catch (const kiln::ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[llm] max_tokens must be >= 0", 0), 0u) << e.what();
  }
}

// The cache reserves address space, not memory: 128 GiB of it for a cache that
// holds three positions (std::bad_alloc before, from zero-filled tensors).
TEST(KVCacheReserve, HugeMaxLenCommitsOnlyWrittenPositions) {
  const int64_t before = rss_bytes();
  kiln::KVCache c(2, 1, 2, int64_t(1) << 28, 64, DType::BFloat16);
  EXPECT_EQ(c.capacity_bytes(), int64_t(2) * 2 * 2 * (int64_t(1) << 28) * 64 * 2);
  const Tensor k = kiln::test::randn_as({2, 3, 64}, DType::Float32, 1);
  const Tensor v = kiln::test::randn_as({2, 3, 64}, DType::Float32, 2);
  for (int64_t l = 0; l < 2; ++l) EXPECT_EQ(c.append(l, k, v), 3);
  EXPECT_LT(rel_err(c.keys(1).select(0, 0).to(DType::Float32), k.to(DType::BFloat16).to(DType::Float32)),
            1e-7);
  EXPECT_LT(rel_err(c.values(0).select(0, 0).to(DType::Float32), v.to(DType::BFloat16).to(DType::Float32)),
            1e-7);
  EXPECT_LT(rss_bytes() - before, int64_t(64) << 20);
  // Sizes whose bytes overflow int64: a ValueError naming them.
  try {
    kiln::KVCache big(1, 1, 1, int64_t(1) << 62, 64, DType::BFloat16);
    ADD_FAILURE() << "accepted";
  } catch (const kiln::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("max_len 4611686018427387904"), std::string::npos) << e.what();
  }
}

// The per-chunk rows equal the tables, bit for bit, at any start.
TEST(RopeCosSinOut, EqualsTheTables) {
  const Tensor inv = kiln::rope_inv_freq(64, 500000.0);
  for (int64_t start : {int64_t(0), int64_t(511), int64_t(1) << 40}) {
    const kiln::RopeTables t = kiln::rope_cos_sin(start, 7, inv);
    Tensor c = kiln::empty({7, 32}), s = kiln::empty({7, 32});
    kiln::rope_cos_sin_out(start, inv, c, s);
    for (int64_t i = 0; i < 7 * 32; ++i) {
      EXPECT_EQ(c.data<float>()[i], t.cos.data<float>()[i]) << start << " " << i;
      EXPECT_EQ(s.data<float>()[i], t.sin.data<float>()[i]) << start << " " << i;
    }
  }
  Tensor bad = kiln::empty({7, 31});
  EXPECT_THROW(kiln::rope_cos_sin_out(0, inv, bad, bad), kiln::ValueError);
}
