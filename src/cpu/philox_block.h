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

}  // namespace kiln::cpu
