// Dropout (kiln/dropout.h): the mask for a seed is the same bits whatever the
// thread count, the backward regenerates the forward's mask, and torch's
// argument and rank errors.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/philox_block.h"
#include "kiln/kiln.h"

namespace {

using namespace kiln;

std::vector<unsigned char> bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<unsigned char> b(size_t(c.nbytes()));
  std::memcpy(b.data(), c.data_ptr(), b.size());
  return b;
}

// Every functional form over several dtypes, with one generator seed each.
std::vector<Tensor> all_forms(const Tensor& x4) {
  std::vector<Tensor> r;
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    const Tensor x = x4.to(d);
    Generator g(1234);
    r.push_back(dropout(x, 0.3, true, false, &g));
    r.push_back(dropout2d(x, 0.5, true, false, &g));
    r.push_back(dropout3d(x, 0.5, true, false, &g));
    r.push_back(alpha_dropout(x, 0.2, true, false, &g));
    r.push_back(feature_alpha_dropout(x, 0.4, true, false, &g));
    DropoutMask m;
    m.p = 0.25;
    m.seed = 99;
    m.offset = 3;
    r.push_back(dropout_backward(x, m));
  }
  return r;
}

uint32_t bytes_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// The dropout kernels' block draws are kiln::philox counter by counter on
// every SIMD target this machine runs, across the 2^32 and 2^64 carries.
TEST(Dropout, PhiloxBlockMatchesPhiloxOnEveryTarget) {
  const int64_t supported = hwy::SupportedTargets();
  for (int64_t t = 1; t != 0 && t <= supported; t <<= 1) {
    if (!(supported & t)) continue;
    hwy::SetSupportedTargetsForTest(t);
    for (uint64_t c0 : {uint64_t(0), uint64_t(0xFFFFFFF0ull), ~uint64_t(0) - 20, uint64_t(0x123456789ull)})
      for (uint64_t key : {uint64_t(0), uint64_t(0xDEADBEEFCAFEF00Dull)}) {
        uint32_t got[4 * cpu::kPhiloxBlock];
        cpu::philox_block(c0, key, got);
        for (int l = 0; l < cpu::kPhiloxBlock; ++l) {
          uint32_t want[4];
          philox(c0 + uint64_t(l), key, want);
          for (int q = 0; q < 4; ++q)
            ASSERT_EQ(got[4 * l + q], want[q]) << "target " << t << " counter " << l;
        }
      }
    // The select-and-scale: kept words give x * mul, the rest x * 0 (-0, NaN).
    uint32_t words[4 * cpu::kPhiloxBlock];
    cpu::philox_block(99, 7, words);
    const int n = 4 * cpu::kPhiloxBlock - 3;  // a tail after whole vectors
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) x[size_t(i)] = i % 7 == 3 ? NAN : float(i % 11) - 5.5f;
    for (bool in_place : {false, true}) {
      if (in_place) {
        y = x;
        cpu::keep_scale(y.data(), y.data(), words, 0x40000000u, 1.25f, n);
      } else {
        cpu::keep_scale(x.data(), y.data(), words, 0x40000000u, 1.25f, n);
      }
      for (int i = 0; i < n; ++i) {
        const float want = x[size_t(i)] * (words[i] >= 0x40000000u ? 1.25f : 0.0f);
        ASSERT_EQ(bytes_of(y[size_t(i)]), bytes_of(want)) << "target " << t << " element " << i;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(Dropout, SameBitsAtAnyThreadCount) {
  const int before = num_threads();
  Generator gx(7);
  // Large enough for several chunks; 9 channels of 4 * 1013 elements.
  const Tensor x = randn({3, 3, 4, 1013}, DType::Float32, &gx);
  set_num_threads(1);
  const std::vector<Tensor> ref = all_forms(x);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    const std::vector<Tensor> got = all_forms(x);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(bytes(got[i]), bytes(ref[i])) << i << " at " << threads;
  }
  set_num_threads(before);
}

// The keep decisions are Philox words as kiln/dropout.h states them, and the
// gradient is the same mask times 1 / (1 - p): regenerated, not stored.
TEST(Dropout, BackwardRegeneratesTheForwardMask) {
  const int64_t n = 50001;
  Tensor x = ones({n}, DType::Float64);
  x.requires_grad_(true);
  Generator g(42);
  g.advance(11);
  const double p = 0.3;
  const Tensor y = dropout(x, p, true, false, &g);
  sum(y).backward();
  const Tensor gx = x.grad();
  int64_t kept_count = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w[4];
    philox(11 + uint64_t(i) / 4, 42, w);
    const bool keep = double(w[i % 4]) / 4294967296.0 >= p;
    kept_count += keep;
    ASSERT_EQ(y.data<double>()[i], keep ? 1.0 / 0.7 : 0.0) << i;
    ASSERT_EQ(gx.data<double>()[i], keep ? 1.0 / 0.7 : 0.0) << i;
  }
  EXPECT_NEAR(double(kept_count) / double(n), 0.7, 5 * std::sqrt(0.21 / double(n)));
  // The draw reserved (n + 3) / 4 counters.
  EXPECT_EQ(g.advance(0), 11 + uint64_t(n + 3) / 4);
}

TEST(Dropout, TorchErrors) {
  const Tensor x = ones({2, 3});
  EXPECT_THROW(dropout(x, 1.5), ValueError);
  EXPECT_THROW(dropout(x, -0.1), ValueError);
  EXPECT_THROW(alpha_dropout(x, std::nan(""), true), ValueError);
  EXPECT_THROW(dropout1d(ones({4}), 0.5), Error);
  EXPECT_THROW(dropout1d(ones({1, 2, 3, 4}), 0.5), Error);
  EXPECT_THROW(dropout2d(ones({4}), 0.5), Error);
  EXPECT_THROW(feature_alpha_dropout(ones({4}), 0.5, true), Error);
  EXPECT_THROW(dropout3d(ones({}), 0.5), Error);
  // Not training: the input itself, before any rank check (as torch).
  const Tensor y = ones({4});
  EXPECT_EQ(dropout2d(y, 0.5, false).data_ptr(), y.data_ptr());
  EXPECT_THROW(dropout(ones({3}, DType::Int64), 0.5), TypeError);
  // A leaf that requires grad cannot be written in place.
  Tensor leaf = ones({3});
  leaf.requires_grad_(true);
  EXPECT_THROW(dropout(leaf, 0.5, true, true), Error);
}

}  // namespace
