// ggml blocks split into small integers and per-group scales: element i of a
// row is w[i] = a[i / G] * q[i] + b[i / G], the product rounded to float32,
// then the sum, which is how gguf-py's reference dequantizes every block type
// (kiln/block_quant.h). The matrix-vector kernel sums a * sum(q * x) + b *
// sum(x) per group from this form; dequantizing forms w itself.
#pragma once

#include <cstdint>

#include "kiln/block_quant.h"

namespace kiln::cpu {

// The group size G: 16 (Q2_K, Q3_K, Q6_K) or 32.
int64_t split_group(BlockType t);
// Whether b is ever nonzero (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K).
bool split_has_offset(BlockType t);

// Splits `nblocks` whole blocks at src (nblocks * block_bytes bytes) into
// q [nblocks * block_size], a [nblocks * block_size / G] and, where the type
// has an offset, b (same length; untouched otherwise).
void split_blocks(BlockType t, const uint8_t* src, int64_t nblocks, int8_t* q, float* a, float* b);

// Whether the scales of those blocks (d, dmin, m) are all finite.
bool block_scales_finite(BlockType t, const uint8_t* src, int64_t nblocks);

}  // namespace kiln::cpu
