// Allocator, thread pool and random numbers.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <set>
#include <thread>

#include "kiln/kiln.h"

using namespace kiln;

TEST(Allocator, StatsAndReuse) {
  empty_cache();
  const MemoryStats before = memory_stats();
  void* p = nullptr;
  {
    Tensor t = empty({1 << 20}, DType::Float32);  // 4 MiB
    p = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    const MemoryStats during = memory_stats();
    EXPECT_GE(during.current_bytes, before.current_bytes + (size_t(4) << 20));
    EXPECT_GE(during.peak_bytes, during.current_bytes);
  }
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.current_bytes, before.current_bytes);
  EXPECT_GE(after.reserved_bytes, size_t(4) << 20);
  Tensor again = empty({1 << 20}, DType::Float32);
  EXPECT_EQ(again.data_ptr(), p);  // the cached block is reused
  EXPECT_GT(memory_stats().cache_hits, after.cache_hits);
  again = Tensor();
  empty_cache();
  EXPECT_LT(memory_stats().reserved_bytes, after.reserved_bytes);
  reset_peak_memory_stats();
  EXPECT_EQ(memory_stats().peak_bytes, memory_stats().current_bytes);
}

TEST(Allocator, LargeRequestTakesALargerCachedBlock) {
  // A freed 8 MiB block serves a later 6 MiB request (within 2x) instead of new
  // memory, is counted at its own size while in use, and goes back to the cache
  // as an 8 MiB block; a request under half its size gets new memory.
  empty_cache();
  void* p = nullptr;
  { p = empty({int64_t(2) << 20}, DType::Float32).data_ptr(); }  // 8 MiB, freed
  const MemoryStats cached = memory_stats();
  {
    Tensor t = empty({int64_t(3) << 19}, DType::Float32);  // 6 MiB
    EXPECT_EQ(t.data_ptr(), p);
    EXPECT_EQ(memory_stats().reserved_bytes, cached.reserved_bytes);
    EXPECT_EQ(memory_stats().current_bytes, cached.current_bytes + (size_t(8) << 20));
  }
  EXPECT_EQ(memory_stats().current_bytes, cached.current_bytes);
  {
    Tensor small = empty({int64_t(1) << 19}, DType::Float32);  // 2 MiB: new memory
    EXPECT_NE(small.data_ptr(), p);
  }
  Tensor again = empty({int64_t(2) << 20}, DType::Float32);  // the 8 MiB class finds it again
  EXPECT_EQ(again.data_ptr(), p);
  again = Tensor();
  empty_cache();
  EXPECT_EQ(memory_stats().reserved_bytes, memory_stats().current_bytes);
}

TEST(ThreadPool, CoversRangeOnceAndPropagatesErrors) {
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for(0, n, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  EXPECT_THROW(parallel_for(0, 1000, 1, [](int64_t b, int64_t) {
                 if (b == 0) throw ValueError("[test] boom");
               }),
               ValueError);
  // Nested regions run inline instead of deadlocking.
  std::atomic<int64_t> sum{0};
  parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
    parallel_for(b, e, 1, [&](int64_t bb, int64_t ee) { sum += ee - bb; });
  });
  EXPECT_EQ(sum.load(), 100);
  EXPECT_GE(num_threads(), 1);
}

// More threads than cores: workers the OS has not run yet must neither lose
// nor repeat a chunk, and an error still reaches the caller.
TEST(ThreadPool, OversubscribedRegionsCoverRangeOnce) {
  const int before = num_threads();
  set_num_threads(16);
  std::vector<std::atomic<int>> hits(997);
  for (int round = 0; round < 2000; ++round) {
    parallel_for(0, 997, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
  }
  for (auto& h : hits) ASSERT_EQ(h.load(), 2000);
  EXPECT_THROW(parallel_for(0, 64, 1, [](int64_t b, int64_t) {
                 if (b >= 60) throw ValueError("[test] late chunk");
               }),
               ValueError);
  EXPECT_THROW(set_num_threads(kMaxThreads + 1), ValueError);
  set_num_threads(before);
  EXPECT_EQ(num_threads(), before);
}

TEST(Random, ReproducibleAndDistributed) {
  Generator g1(42), g2(42);
  Tensor a = rand({10000}, DType::Float32, &g1);
  Tensor b = rand({10000}, DType::Float32, &g2);
  Tensor c = rand({10000}, DType::Float32, &g1);  // next draw differs
  double sum = 0, sumsq = 0;
  bool differs = false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i];
    ASSERT_EQ(x, b.data<float>()[i]);
    ASSERT_GE(x, 0.0f);
    ASSERT_LT(x, 1.0f);
    differs |= x != c.data<float>()[i];
    sum += x;
    sumsq += double(x) * x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
  EXPECT_NEAR(sumsq / 10000 - 0.25, 1.0 / 12, 0.01);

  Generator g3(7);
  Tensor n = randn({20000}, DType::Float64, &g3);
  double m = 0, v = 0;
  for (int64_t i = 0; i < n.numel(); ++i) m += n.data<double>()[i];
  m /= n.numel();
  for (int64_t i = 0; i < n.numel(); ++i) v += std::pow(n.data<double>()[i] - m, 2);
  v /= n.numel();
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(v, 1.0, 0.05);

  Tensor r = randint(-3, 4, {5000}, DType::Int64, &g3);
  std::set<int64_t> seen;
  for (int64_t i = 0; i < r.numel(); ++i) {
    const int64_t x = r.data<int64_t>()[i];
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_THROW(randint(3, 3, {1}), ValueError);
  // Narrow floats stay below 1 (bf16 has only 8 significant bits).
  for (DType d : {DType::BFloat16, DType::Float16}) {
    Generator gb(1);
    Tensor u = rand({200000}, d, &gb).to(DType::Float32);
    for (int64_t i = 0; i < u.numel(); ++i) ASSERT_LT(u.data<float>()[i], 1.0f) << name(d);
  }
  EXPECT_THROW(rand({2}, DType::Int32), TypeError);

  // Same values whatever the thread count.
  set_num_threads(1);
  Generator g4(42);
  Tensor d = rand({10000}, DType::Float32, &g4);
  set_num_threads(std::max(2, int(std::thread::hardware_concurrency())));
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data<float>()[i], d.data<float>()[i]);
}

TEST(Allocator, CacheStaysUnderItsLimit) {
  const size_t old_limit = cache_limit();
  empty_cache();
  set_cache_limit(size_t(6) << 20);  // 6 MiB
  const size_t base = memory_stats().reserved_bytes;
  for (int i = 1; i <= 8; ++i) {
    Tensor t = empty({int64_t(i) << 18}, DType::Float32);  // 1, 2, ... 8 MiB, each freed at once
  }
  const MemoryStats s = memory_stats();
  EXPECT_LE(s.reserved_bytes - s.current_bytes, size_t(6) << 20);
  EXPECT_LE(s.reserved_bytes, base + (size_t(6) << 20));
  // A block larger than the limit is never cached.
  { Tensor big = empty({int64_t(4) << 20}, DType::Float32); }  // 16 MiB
  EXPECT_LE(memory_stats().reserved_bytes - memory_stats().current_bytes, size_t(6) << 20);
  set_cache_limit(0);
  EXPECT_EQ(memory_stats().reserved_bytes, memory_stats().current_bytes);
  set_cache_limit(old_limit);
}
