// ggml block decoders (internal to src/io): each turns `nblocks` whole blocks
// at `src` into nblocks * block_size floats at `dst`, in ggml's element order.
// They read exactly nblocks * type_size bytes; the caller guarantees them.
// The arithmetic is gguf-py's (gguf.quants), operation for operation, so the
// results are bit-exact with it: f16 scales widened to f32, every product and
// sum rounded to f32 on its own (the files are built with -ffp-contract=off so
// no multiply-add is fused). NaN or inf scales propagate as IEEE arithmetic
// makes them (inf * 0 = NaN), as the reference does; nothing is refused.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/ggml_blocks.h"
#include "kiln/float_types.h"

namespace kiln::io::detail {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_bits_to_float(h);
}

// 32-element blocks (quant_blocks.cc).
void dequant_q4_0(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q4_1(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q5_0(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q5_1(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q8_0(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_iq4_nl(const uint8_t* src, float* dst, int64_t nblocks);

// 256-element super-blocks (quant_blocks_k.cc).
void dequant_q2_k(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q3_k(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q4_k(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q5_k(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q6_k(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_q8_k(const uint8_t* src, float* dst, int64_t nblocks);
void dequant_iq4_xs(const uint8_t* src, float* dst, int64_t nblocks);

using ggml::kIQ4Levels;  // IQ4_NL / IQ4_XS levels (core/ggml_blocks.h)

}  // namespace kiln::io::detail
