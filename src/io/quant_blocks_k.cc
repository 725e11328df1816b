// ggml's 256-element "K" super-blocks (and IQ4_XS, which shares their shape),
// dequantized as gguf-py's gguf.quants does it (see quant_blocks.h). Element i
// of a super-block belongs to sub-block i / 16 (Q2_K, Q3_K, Q6_K: 16 scales) or
// i / 32 (Q4_K, Q5_K, IQ4_XS: 8 scales); the sub-block scale is d * sc, rounded
// to f32 once, then applied to each element.
//   Q2_K   (84 B): u8 sc[16] (lo nibble scale, hi nibble min); u8 qs[64]; f16 d; f16 dmin
//                  q = 2 bits of qs[(i/128)*32 + i%32] at bit 2*((i/32)%4)
//                  x = (d * (sc & 15)) * q - dmin * (sc >> 4)
//   Q3_K  (110 B): u8 hmask[32]; u8 qs[64]; u8 scales[12] (16 six-bit); f16 d
//                  q = 2 bits as Q2_K, minus 4 where bit i/32 of hmask[i%32] is clear
//                  x = (d * (scale - 32)) * q
//   Q4_K  (144 B): f16 d; f16 dmin; u8 scales[12] (8 six-bit scales + 8 mins); u8 qs[128]
//                  q = nibble (i/32)%2 of qs[(i/64)*32 + i%32]
//                  x = (d * sc) * q - dmin * m
//   Q5_K  (176 B): f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
//                  q = Q4_K's nibble | (bit i/32 of qh[i%32]) << 4; x as Q4_K
//   Q6_K  (210 B): u8 ql[128]; u8 qh[64]; int8 sc[16]; f16 d
//                  q = nibble (i%128)/64 of ql[(i/128)*64 + i%64]
//                      | (2 bits of qh[(i/128)*32 + i%32] at bit 2*((i%128)/32)) << 4, minus 32
//                  x = (d * sc) * q
//   Q8_K  (292 B): f32 d; int8 qs[256]; int16 bsums[16] (unused here)    x = d * q
//   IQ4_XS(136 B): f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]
//                  scale g = (nibble g%2 of scales_l[g/2] | (2 bits g of scales_h) << 4) - 32
//                  q = nibble (i%32)/16 of qs[(i/32)*16 + i%16]
//                  x = (d * scale) * levels[q]
#include "quant_blocks.h"

namespace kiln::io::detail {

void dequant_q2_k(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 84, dst += 256) {
    const uint8_t* sc = src;
    const uint8_t* qs = src + 16;
    const float d = f16_at(src + 80), dmin = f16_at(src + 82);
    for (int g = 0; g < 16; ++g) {
      const float dl = d * float(sc[g] & 0x0F);
      const float ml = dmin * float(sc[g] >> 4);
      for (int k = 0; k < 16; ++k) {
        const int i = g * 16 + k;
        const int q = (qs[(i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3;
        dst[i] = dl * float(q) - ml;
      }
    }
  }
}

void dequant_q3_k(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 110, dst += 256) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const uint8_t* s = src + 96;
    const float d = f16_at(src + 108);
    for (int g = 0; g < 16; ++g) {
      // Low 4 bits: nibble g/8 of s[g%8]; high 2 bits: bits 2*(g/4) of s[8 + g%4].
      const int lo = (s[g & 7] >> (4 * (g >> 3))) & 0x0F;
      const int hi = (s[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
      const float dl = d * float((lo | hi << 4) - 32);
      for (int k = 0; k < 16; ++k) {
        const int i = g * 16 + k;
        const int ql = (qs[(i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3;
        const int h = (hmask[i & 31] >> (i >> 5)) & 1;
        dst[i] = dl * float(ql - (h ? 0 : 4));
      }
    }
  }
}

namespace {

using ggml::k4_scale_min;

// Q4_K (qh == nullptr) and Q5_K.
void dequant_k45(const uint8_t* src, float* dst, int64_t nblocks, bool five) {
  const int bytes = five ? 176 : 144;
  for (int64_t b = 0; b < nblocks; ++b, src += bytes, dst += 256) {
    const float d = f16_at(src), dmin = f16_at(src + 2);
    const uint8_t* s = src + 4;
    const uint8_t* qh = five ? src + 16 : nullptr;
    const uint8_t* qs = five ? src + 48 : src + 16;
    for (int g = 0; g < 8; ++g) {
      int sc, m;
      k4_scale_min(s, g, sc, m);
      const float dl = d * float(sc);
      const float ml = dmin * float(m);
      const uint8_t* q4 = qs + (g >> 1) * 32;
      const int shift = 4 * (g & 1);
      for (int l = 0; l < 32; ++l) {
        int q = (q4[l] >> shift) & 0x0F;
        if (five) q |= ((qh[l] >> g) & 1) << 4;
        dst[g * 32 + l] = dl * float(q) - ml;
      }
    }
  }
}

}  // namespace

void dequant_q4_k(const uint8_t* src, float* dst, int64_t nblocks) { dequant_k45(src, dst, nblocks, false); }
void dequant_q5_k(const uint8_t* src, float* dst, int64_t nblocks) { dequant_k45(src, dst, nblocks, true); }

void dequant_q6_k(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 210, dst += 256) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = f16_at(src + 208);
    for (int g = 0; g < 16; ++g) {
      const float dl = d * float(sc[g]);
      for (int k = 0; k < 16; ++k) {
        const int i = g * 16 + k;
        const int h = i >> 7, r = i & 127;
        const int lo = (ql[h * 64 + (r & 63)] >> (4 * (r >> 6))) & 0x0F;
        const int hi = (qh[h * 32 + (r & 31)] >> (2 * (r >> 5))) & 3;
        dst[i] = dl * float((lo | hi << 4) - 32);
      }
    }
  }
}

void dequant_q8_k(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 292, dst += 256) {
    float d;
    std::memcpy(&d, src, 4);
    const int8_t* q = reinterpret_cast<const int8_t*>(src + 4);
    for (int j = 0; j < 256; ++j) dst[j] = d * float(q[j]);
  }
}

void dequant_iq4_xs(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 136, dst += 256) {
    const float d = f16_at(src);
    uint16_t sh;
    std::memcpy(&sh, src + 2, 2);
    const uint8_t* sl = src + 4;
    const uint8_t* qs = src + 8;
    for (int g = 0; g < 8; ++g) {
      const int lo = (sl[g >> 1] >> (4 * (g & 1))) & 0x0F;
      const int hi = (sh >> (2 * g)) & 3;
      const float dl = d * float((lo | hi << 4) - 32);
      const uint8_t* q = qs + g * 16;
      for (int k = 0; k < 16; ++k) {
        dst[g * 32 + k] = dl * float(kIQ4Levels[q[k] & 0x0F]);
        dst[g * 32 + 16 + k] = dl * float(kIQ4Levels[q[k] >> 4]);
      }
    }
  }
}

}  // namespace kiln::io::detail
