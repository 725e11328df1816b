// Pieces of ggml's block layouts that both the GGUF reader's decoders
// (src/io/quant_blocks*.cc) and the block kernels (src/cpu/block_split.cc,
// gemv_blocks.cc) read.
#pragma once

#include <cstdint>

namespace kiln::ggml {

// IQ4_NL / IQ4_XS: the 16 non-uniform 4-bit levels (aligned for a vector load).
alignas(16) inline constexpr int8_t kIQ4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                      1,    13,   25,  38,  53,  69,  89,  113};

// Q4_K / Q5_K: sub-block j's 6-bit scale and min, packed in 12 bytes at s.
inline void k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 2) & 0x30);
    m = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
  }
}

}  // namespace kiln::ggml
