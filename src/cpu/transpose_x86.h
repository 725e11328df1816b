// A 16 x 16 transpose of 32-bit elements in AVX-512 registers, for packing
// AMX tiles (gemm_bf16.cc, attention_amx.cc). Include only in x86 code built
// for AVX-512 at run time.
#pragma once

#include <immintrin.h>

namespace kiln::cpu {

// r[i] lane j -> r[j] lane i: a 16 x 16 transpose of 32-bit elements (the
// maskz forms: GCC 12 warns on the plain ones).
__attribute__((target("avx512f"))) inline void transpose16(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {  // 2x2 blocks of single elements
    t[i] = _mm512_maskz_unpacklo_epi32(0xFFFF, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_epi32(0xFFFF, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4)  // of pairs: r[i + e] holds element e of each 128-bit lane of rows i..i+3
    for (int j = 0; j < 2; ++j) {
      r[i + 2 * j] = _mm512_maskz_unpacklo_epi64(0xFF, t[i + j], t[i + j + 2]);
      r[i + 2 * j + 1] = _mm512_maskz_unpackhi_epi64(0xFF, t[i + j], t[i + j + 2]);
    }
  // Rows i and i + 4 hold 128-bit lanes that trade places twice.
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_maskz_shuffle_i32x4(0xFFFF, r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_maskz_shuffle_i32x4(0xFFFF, r[i + j], r[i + j + 4], 0xDD);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_maskz_shuffle_i32x4(0xFFFF, t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_maskz_shuffle_i32x4(0xFFFF, t[j], t[j + 8], 0xDD);
  }
}

}  // namespace kiln::cpu
