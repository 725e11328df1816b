// ggml block encoders (internal to src/io): each writes `nblocks` whole blocks
// of its type at `dst` from nblocks * block_size floats at `src`, the inverse
// of the decoders in quant_blocks.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "kiln/float_types.h"

namespace kiln::io::detail {

inline void put_f16(uint8_t* p, float v) {
  const uint16_t h = float_to_f16_bits(v);
  std::memcpy(p, &h, 2);
}

// 32-element blocks (quant_encode.cc), bit for bit as gguf-py.
void quant_q4_0(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q4_1(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q5_0(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q5_1(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q8_0(const float* src, uint8_t* dst, int64_t nblocks);

// 256-element super-blocks (quant_encode_k.cc), fitted by kiln.
void quant_q4_k(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q5_k(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q6_k(const float* src, uint8_t* dst, int64_t nblocks);

}  // namespace kiln::io::detail
