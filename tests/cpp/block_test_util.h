// Random ggml blocks for the block-kernel tests: any bytes, with finite f16
// scales of either sign and modest size, so products stay finite.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kiln/block_quant.h"
#include "kiln/float_types.h"
#include "kiln/kiln.h"

namespace kiln::test {

// Where a type keeps its f16 scales (Q8_K: one float32 at 0).
inline std::vector<int> scale_offsets(BlockType t) {
  switch (t) {
    case BlockType::Q4_1:
    case BlockType::Q5_1:
    case BlockType::Q4_K:
    case BlockType::Q5_K:
      return {0, 2};
    case BlockType::Q2_K:
      return {80, 82};
    case BlockType::Q3_K:
      return {108};
    case BlockType::Q6_K:
      return {208};
    default:
      return {0};
  }
}

// N rows of K elements of random blocks with finite scales of either sign.
inline Tensor random_blocks(BlockType t, int64_t N, int64_t K, uint32_t seed) {
  const BlockTypeInfo& info = block_type_info(t);
  const int64_t per_row = K / info.block_size;
  Tensor b = empty({N, per_row * info.block_bytes}, DType::UInt8);
  std::mt19937 rng(seed);
  uint8_t* p = b.data<uint8_t>();
  for (int64_t i = 0; i < b.numel(); ++i) p[i] = uint8_t(rng());
  std::uniform_real_distribution<float> mag(0.002f, 0.05f);
  for (int64_t blk = 0; blk < N * per_row; ++blk) {
    uint8_t* q = p + blk * info.block_bytes;
    if (t == BlockType::Q8_K) {
      const float d = (rng() & 1 ? -1 : 1) * mag(rng);
      std::memcpy(q, &d, 4);
      continue;
    }
    for (int off : scale_offsets(t)) {
      const uint16_t h = float_to_f16_bits((rng() & 1 ? -1 : 1) * mag(rng));
      std::memcpy(q + off, &h, 2);
    }
  }
  return b;
}

}  // namespace kiln::test
