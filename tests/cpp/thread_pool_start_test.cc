// Regression: a parallel_for issued right after the pool (re)starts its workers
// must not be missed by a worker the OS has not run yet (it used to hang).
#include <atomic>

#include <gtest/gtest.h>

#include "kiln/thread_pool.h"

TEST(ThreadPoolStart, RegionRightAfterResizeRuns) {
  const int before = kiln::num_threads();
  for (int round = 0; round < 200; ++round) {
    kiln::set_num_threads(2 + round % 3);
    std::atomic<int64_t> covered{0};
    kiln::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { covered += e - b; });
    ASSERT_EQ(covered.load(), 1000);
  }
  kiln::set_num_threads(before);
}
