// FP8 codes (e4m3fn, e5m2) to bf16 bits on AVX512-VBMI, 64 codes at a time,
// exactly: every e4m3fn and e5m2 value, subnormals, infinities and NaN
// included, is a bf16 value. The bf16 bits of each magnitude come from two
// 128-entry byte tables (high and low bytes, vpermi2b reads a code's low 7
// bits), the sign bit is or-ed into the high byte, and the bytes are
// interleaved into words. ~5 vector instructions for 64 codes: the integer
// rebias (shift, add, table for the subnormals, compares for NaN) took ~11 for
// 32 and bounded the bf16 GEMM's FP8 prefill (Sapphire Rapids-class core).
//
// Used by the bf16 matrix-vector rows (gemv_dot.cc) and the bf16 GEMM's weight
// panels (gemm_bf16.cc); include it only where KILN_FP8_BF16_TARGET is allowed.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kiln/float_types.h"

#define KILN_FP8_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi")))

namespace kiln::cpu {

template <class F8>
struct Fp8ToBf16 {
  struct Tables {
    alignas(64) uint8_t hi[128], lo[128];
    // Byte 16j + i (i < 8) takes code 8j + i, byte 16j + 8 + i code
    // 32 + 8j + i: the permutation after which lanes() lands in order.
    alignas(64) uint8_t order[64];
    Tables() {
      for (int c = 0; c < 128; ++c) {
        const uint16_t b = float_to_bf16_bits(float(F8::from_bits(uint8_t(c))));
        hi[c] = uint8_t(b >> 8);
        lo[c] = uint8_t(b);
      }
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 8; ++i) {
          order[16 * j + i] = uint8_t(8 * j + i);
          order[16 * j + 8 + i] = uint8_t(32 + 8 * j + i);
        }
    }
  };
  static const Tables& tables() {
    static const Tables t;
    return t;
  }
  // The tables and the sign mask, kept in registers over a loop.
  struct State {
    __m512i hi0, hi1, lo0, lo1, sign, order;
  };
  KILN_FP8_BF16_TARGET static State start() {
    const Tables& t = tables();
    return {_mm512_load_si512(t.hi),      _mm512_load_si512(t.hi + 64), _mm512_load_si512(t.lo),
            _mm512_load_si512(t.lo + 64), _mm512_set1_epi8(char(0x80)), _mm512_load_si512(t.order)};
  }
  // The bf16 bits of the 64 codes in c, lane-interleaved: out[0] holds codes
  // 16j + 0..7 of each 16-byte lane j, out[1] codes 16j + 8..15.
  KILN_FP8_BF16_TARGET static void lanes(const State& st, __m512i c, __m512i* out) {
    const __m512i hi = _mm512_permutex2var_epi8(st.hi0, c, st.hi1);
    const __m512i lo = _mm512_permutex2var_epi8(st.lo0, c, st.lo1);
    const __m512i hs = _mm512_ternarylogic_epi32(hi, c, st.sign, 0xF8);  // hi | (c & 0x80)
    out[0] = _mm512_unpacklo_epi8(lo, hs);
    out[1] = _mm512_unpackhi_epi8(lo, hs);
  }
  // The same in natural order: out[0] = codes 0..31, out[1] = codes 32..63.
  KILN_FP8_BF16_TARGET static void ordered(const State& st, __m512i c, __m512i* out) {
    lanes(st, _mm512_maskz_permutexvar_epi8(~__mmask64(0), st.order, c),
          out);  // (GCC 12 warns on the plain form)
  }
};

}  // namespace kiln::cpu
