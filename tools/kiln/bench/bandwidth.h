// The machine's memory read roof: a STREAM-like read of a buffer several times
// larger than the last-level cache, by every thread of kiln's pool, with the
// loads a good streaming kernel uses (full-width SIMD, one contiguous share of
// the buffer per thread, read as 8 or 12 far-apart streams with independent
// accumulators; see bench/stream_read.h). Benchmarks report memory-bound results as a fraction of
// the best pass measured beside them in the same run (bench/README.md, "How the read roof is measured"),
// because shared VMs drift by tens of percent and a pass can only be slowed
// by other work, never sped up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::sys {

struct RoofStats {
  double median_gbps = 0, min_gbps = 0, max_gbps = 0;  // 1 GB = 1e9 bytes
  int passes = 0;
  size_t bytes = 0;  // bytes read per pass
  int threads = 0;
};

// Median, min and max of samples (which it sorts); zeros when empty.
RoofStats summarize_gbps(std::vector<double> gbps);

// The default roof buffer: 4x the last-level cache, at least 256 MiB, at most
// a quarter of the memory available now (a shared machine must not be starved).
size_t default_roof_bytes();

class ReadRoof {
 public:
  // Allocates `bytes` (rounded up to 64) and first-touches it from the pool's
  // threads, so pages sit near the threads that read them.
  explicit ReadRoof(size_t bytes);
  ~ReadRoof();
  ReadRoof(const ReadRoof&) = delete;
  ReadRoof& operator=(const ReadRoof&) = delete;

  size_t bytes() const { return bytes_; }
  // One timed pass over the whole buffer with kiln::num_threads() threads;
  // returns GB/s. Every other pass reads 12 streams per thread, not 8, and
  // prefetches in software.
  double pass_gbps() const;
  // Passes until at least min_passes are done and budget_s has been spent,
  // or max_passes are done.
  RoofStats measure(double budget_s, int min_passes, int max_passes) const;

 private:
  uint64_t* data_ = nullptr;
  size_t bytes_ = 0;
  mutable uint64_t passes_ = 0;
};

}  // namespace kiln::sys
