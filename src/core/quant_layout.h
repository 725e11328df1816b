// The chunking of FP8 quantization, shared by its CPU kernel and the weight
// loaders (src/llm) that feed it.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kiln {

// Rows of length K that make about 8 MiB of float32: the unit quantize_fp8
// (and the loaders feeding it) widen at a time, so no full float32 copy of a
// weight is ever held.
inline int64_t quantize_chunk_rows(int64_t K) {
  return std::max<int64_t>(1, (int64_t(2) << 20) / std::max<int64_t>(K, 1));
}

}  // namespace kiln
