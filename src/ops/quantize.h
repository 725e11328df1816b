// Quantization internals shared with the weight loaders (src/llm).
#pragma once

#include <cstdint>

namespace kiln {

// Rows of length K that make about 8 MiB of float32: the unit quantize_fp8
// (and the loaders feeding it) widen at a time, so no full float32 copy of a
// weight is ever held.
int64_t quantize_chunk_rows(int64_t K);

}  // namespace kiln
