// Counter-based random numbers (Philox4x32-10): element i of a draw depends only
// on (seed, offset + i), so results are reproducible whatever the thread count.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "kiln/tensor.h"

namespace kiln {

// Threads may share a generator: every draw reserves its own counters, and a
// manual_seed() while another thread draws is no data race (that draw uses
// the old or the new seed). torch's generators do not lock at all; a stream
// that must be reproducible wants one generator per thread.
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_.load(std::memory_order_relaxed); }
  // Reserves `n` counters and returns the first; later draws never reuse them.
  uint64_t advance(uint64_t n);

 private:
  std::mutex mu_;
  std::atomic<uint64_t> seed_;  // written under mu_, read without it
  uint64_t offset_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

// Philox4x32-10 of (counter, key): four independent 32-bit words.
void philox(uint64_t counter, uint64_t key, uint32_t out[4]);

// The factories allocate on `device` and draw there; the counters come from
// `gen` (the default generator when null) whatever the device.
// Uniform [0, 1) of a floating dtype.
Tensor rand(const Shape& shape, DType dtype = DType::Float32, Generator* gen = nullptr,
            Device device = Device{});
// Standard normal (Box-Muller) of a floating dtype.
Tensor randn(const Shape& shape, DType dtype = DType::Float32, Generator* gen = nullptr,
             Device device = Device{});
// Integers uniform in [low, high).
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::Int64,
               Generator* gen = nullptr, Device device = Device{});

}  // namespace kiln
