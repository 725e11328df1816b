// Philox4x32-10 (kiln::philox, src/core/random.cc) over a block of
// consecutive counters in SIMD lanes: the draws behind the dropout kernels and
// the random factories (rand, randn, randint).
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Counters per block.
constexpr int kPhiloxBlock = 64;

// words[4 * l + q] = word q of philox(counter0 + l, key) for l < kPhiloxBlock:
// the same bits as kiln::philox, counter by counter.
void philox_block(uint64_t counter0, uint64_t key, uint32_t* words);

// out[l] = sqrt(-2 log(1 - u1)) * cos(2 pi u2) for l < kPhiloxBlock, where u1
// and u2 are the 53-bit uniforms in [0, 1) of words (0, 1) and (2, 3) of counter
// l, (w0 * 2^32 + w1) >> 11 over 2^53: randn's Box-Muller, in float64 lanes
// (log and cos within about an ulp of libm's), the same bits on every target.
void box_muller_block(const uint32_t* words, double* out);

// y[k] = x[k] * (words[k] >= t ? mul : 0) for k < n (y may be x): dropout's
// select-and-scale, compiled per SIMD target (unsigned compares).
void keep_scale(const float* x, float* y, const uint32_t* words, uint32_t t, float mul, int64_t n);
void keep_scale(const double* x, double* y, const uint32_t* words, uint32_t t, double mul, int64_t n);

}  // namespace kiln::cpu
