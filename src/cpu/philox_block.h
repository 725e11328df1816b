// Philox4x32-10 (kiln::philox, src/core/random.cc) over a block of
// consecutive counters in SIMD lanes: the draws behind the dropout kernels.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Counters per block.
constexpr int kPhiloxBlock = 64;

// words[4 * l + q] = word q of philox(counter0 + l, key) for l < kPhiloxBlock:
// the same bits as kiln::philox, counter by counter.
void philox_block(uint64_t counter0, uint64_t key, uint32_t* words);

// y[k] = x[k] * (words[k] >= t ? mul : 0) for k < n (y may be x): dropout's
// select-and-scale, compiled per SIMD target (unsigned compares).
void keep_scale(const float* x, float* y, const uint32_t* words, uint32_t t, float mul, int64_t n);
void keep_scale(const double* x, double* y, const uint32_t* words, uint32_t t, double mul, int64_t n);

}  // namespace kiln::cpu
