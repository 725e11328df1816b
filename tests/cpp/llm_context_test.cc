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

// Resident memory of this process, from /proc/self/statm.
int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * int64_t(::sysconf(_SC_PAGESIZE));
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

}  // namespace

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
