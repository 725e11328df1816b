// The split of each ggml block type into q and group scales (block_split.h).
// a and b are computed as gguf-py does (f16 scales widened to float32, each
// product rounded on its own), so a * q + b is the reference's element:
//   Q8_0    a = d                  q = qs
//   Q4_0    a = d                  q = nibble - 8
//   Q4_1    a = d, b = m           q = nibble
//   Q5_0    a = d                  q = 5 bits - 16
//   Q5_1    a = d, b = m           q = 5 bits
//   IQ4_NL  a = d                  q = levels[nibble]
//   Q2_K    a = d * (sc & 15), b = -(dmin * (sc >> 4))   q = 2 bits
//   Q3_K    a = d * (scale - 32)   q = 2 bits, minus 4 where the hmask bit is clear
//   Q4_K    a = d * sc, b = -(dmin * m)                  q = nibble
//   Q5_K    as Q4_K                q = 5 bits
//   Q6_K    a = d * sc             q = 6 bits - 32
//   Q8_K    a = d (float32)        q = qs
//   IQ4_XS  a = d * (scale - 32)   q = levels[nibble]
// The bit layouts are those of src/io/quant_blocks*.cc. Built with
// -ffp-contract=off: no product and sum may fuse into one rounding.
#include "cpu/block_split.h"

#include <cmath>
#include <cstring>

#include "core/ggml_blocks.h"
#include "kiln/float_types.h"

namespace kiln::cpu {
namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_bits_to_float(h);
}

using ggml::k4_scale_min;
using ggml::kIQ4Levels;

// Q4_0's nibble order: byte j holds elements j (low) and j + 16 (high).
inline void nibbles32(const uint8_t* qs, int8_t* q, int bias) {
  for (int j = 0; j < 16; ++j) {
    q[j] = int8_t((qs[j] & 0x0F) - bias);
    q[j + 16] = int8_t((qs[j] >> 4) - bias);
  }
}

inline void q5_32(const uint8_t* qh_p, const uint8_t* qs, int8_t* q, int bias) {
  uint32_t qh;
  std::memcpy(&qh, qh_p, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = int8_t(((qs[j] & 0x0F) | int((qh >> j) & 1) << 4) - bias);
    q[j + 16] = int8_t(((qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4) - bias);
  }
}

void split_k45(const uint8_t* src, int64_t nblocks, int8_t* q, float* a, float* b, bool five) {
  const int bytes = five ? 176 : 144;
  for (int64_t blk = 0; blk < nblocks; ++blk, src += bytes, q += 256, a += 8, b += 8) {
    const float d = f16_at(src), dmin = f16_at(src + 2);
    const uint8_t* s = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = five ? src + 48 : src + 16;
    for (int g = 0; g < 8; ++g) {
      int sc, m;
      k4_scale_min(s, g, sc, m);
      a[g] = d * float(sc);
      b[g] = -(dmin * float(m));
    }
    for (int c = 0; c < 4; ++c) {  // 64 elements: low nibbles, then high
      const uint8_t* q4 = qs + c * 32;
      int8_t* lo = q + c * 64;
      for (int l = 0; l < 32; ++l) {
        lo[l] = int8_t(q4[l] & 0x0F);
        lo[l + 32] = int8_t(q4[l] >> 4);
      }
      if (five)
        for (int l = 0; l < 32; ++l) {
          lo[l] = int8_t(lo[l] | ((qh[l] >> (2 * c)) & 1) << 4);
          lo[l + 32] = int8_t(lo[l + 32] | ((qh[l] >> (2 * c + 1)) & 1) << 4);
        }
    }
  }
}

void split_q6_k(const uint8_t* src, int64_t nblocks, int8_t* q, float* a) {
  for (int64_t blk = 0; blk < nblocks; ++blk, src += 210, q += 256, a += 16) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = f16_at(src + 208);
    for (int g = 0; g < 16; ++g) a[g] = d * float(sc[g]);
    for (int h = 0; h < 2; ++h) {  // halves of 128: four runs of 32
      const uint8_t* l = ql + h * 64;
      const uint8_t* hb = qh + h * 32;
      int8_t* o = q + h * 128;
      for (int i = 0; i < 32; ++i) {
        o[i] = int8_t(((l[i] & 0x0F) | (hb[i] & 3) << 4) - 32);
        o[i + 32] = int8_t(((l[i + 32] & 0x0F) | ((hb[i] >> 2) & 3) << 4) - 32);
        o[i + 64] = int8_t(((l[i] >> 4) | ((hb[i] >> 4) & 3) << 4) - 32);
        o[i + 96] = int8_t(((l[i + 32] >> 4) | ((hb[i] >> 6) & 3) << 4) - 32);
      }
    }
  }
}

void split_q2_q3_k(const uint8_t* src, int64_t nblocks, int8_t* q, float* a, float* b, bool three) {
  const int bytes = three ? 110 : 84;
  for (int64_t blk = 0; blk < nblocks; ++blk, src += bytes, q += 256, a += 16, b += 16) {
    const uint8_t* qs = three ? src + 32 : src + 16;
    if (three) {
      const uint8_t* s = src + 96;
      const float d = f16_at(src + 108);
      for (int g = 0; g < 16; ++g) {
        const int lo = (s[g & 7] >> (4 * (g >> 3))) & 0x0F;
        const int hi = (s[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
        a[g] = d * float((lo | hi << 4) - 32);
      }
    } else {
      const float d = f16_at(src + 80), dmin = f16_at(src + 82);
      for (int g = 0; g < 16; ++g) {
        a[g] = d * float(src[g] & 0x0F);
        b[g] = -(dmin * float(src[g] >> 4));
      }
    }
    // Element i: 2 bits of qs[(i / 128) * 32 + i % 32] at bit 2 * ((i / 32) % 4).
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 4; ++s)
        for (int l = 0; l < 32; ++l) q[h * 128 + s * 32 + l] = int8_t((qs[h * 32 + l] >> (2 * s)) & 3);
    if (three) {
      const uint8_t* hmask = src;
      for (int i = 0; i < 256; ++i) q[i] = int8_t(q[i] - (((hmask[i & 31] >> (i >> 5)) & 1) ? 0 : 4));
    }
  }
}

}  // namespace

int64_t split_group(BlockType t) {
  return t == BlockType::Q2_K || t == BlockType::Q3_K || t == BlockType::Q6_K ? 16 : 32;
}

bool split_has_offset(BlockType t) {
  return t == BlockType::Q4_1 || t == BlockType::Q5_1 || t == BlockType::Q2_K || t == BlockType::Q4_K ||
         t == BlockType::Q5_K;
}

void split_blocks(BlockType t, const uint8_t* src, int64_t nblocks, int8_t* q, float* a, float* b) {
  const int64_t bytes = block_type_info(t).block_bytes;
  switch (t) {
    case BlockType::Q8_0:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 32) {
        a[i] = f16_at(src);
        std::memcpy(q, src + 2, 32);
      }
      return;
    case BlockType::Q4_0:
    case BlockType::IQ4_NL:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 32) {
        a[i] = f16_at(src);
        nibbles32(src + 2, q, t == BlockType::Q4_0 ? 8 : 0);
        if (t == BlockType::IQ4_NL)
          for (int j = 0; j < 32; ++j) q[j] = kIQ4Levels[q[j]];
      }
      return;
    case BlockType::Q4_1:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 32) {
        a[i] = f16_at(src);
        b[i] = f16_at(src + 2);
        nibbles32(src + 4, q, 0);
      }
      return;
    case BlockType::Q5_0:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 32) {
        a[i] = f16_at(src);
        q5_32(src + 2, src + 6, q, 16);
      }
      return;
    case BlockType::Q5_1:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 32) {
        a[i] = f16_at(src);
        b[i] = f16_at(src + 2);
        q5_32(src + 4, src + 8, q, 0);
      }
      return;
    case BlockType::Q2_K:
    case BlockType::Q3_K:
      return split_q2_q3_k(src, nblocks, q, a, b, t == BlockType::Q3_K);
    case BlockType::Q4_K:
    case BlockType::Q5_K:
      return split_k45(src, nblocks, q, a, b, t == BlockType::Q5_K);
    case BlockType::Q6_K:
      return split_q6_k(src, nblocks, q, a);
    case BlockType::Q8_K:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 256, a += 8) {
        float d;
        std::memcpy(&d, src, 4);
        for (int g = 0; g < 8; ++g) a[g] = d;
        std::memcpy(q, src + 4, 256);
      }
      return;
    case BlockType::IQ4_XS:
      for (int64_t i = 0; i < nblocks; ++i, src += bytes, q += 256, a += 8) {
        const float d = f16_at(src);
        uint16_t sh;
        std::memcpy(&sh, src + 2, 2);
        for (int g = 0; g < 8; ++g) {
          const int lo = (src[4 + (g >> 1)] >> (4 * (g & 1))) & 0x0F;
          const int hi = (sh >> (2 * g)) & 3;
          a[g] = d * float((lo | hi << 4) - 32);
          nibbles32(src + 8 + g * 16, q + g * 32, 0);
          for (int j = 0; j < 32; ++j) q[g * 32 + j] = kIQ4Levels[q[g * 32 + j]];
        }
      }
      return;
  }
}

bool block_scales_finite(BlockType t, const uint8_t* src, int64_t nblocks) {
  // Where each type keeps its f16 (or Q8_K's float32) scales.
  int off0 = 0, nscales = 1;
  switch (t) {
    case BlockType::Q4_1:
    case BlockType::Q5_1:
    case BlockType::Q4_K:
    case BlockType::Q5_K:
      nscales = 2;
      break;
    case BlockType::Q2_K:
      off0 = 80, nscales = 2;
      break;
    case BlockType::Q3_K:
      off0 = 108;
      break;
    case BlockType::Q6_K:
      off0 = 208;
      break;
    case BlockType::Q8_K:
      for (int64_t i = 0; i < nblocks; ++i) {
        float d;
        std::memcpy(&d, src + i * 292, 4);
        if (!std::isfinite(d)) return false;
      }
      return true;
    default:
      break;
  }
  const int64_t bytes = block_type_info(t).block_bytes;
  uint16_t all = 0;  // f16 exponent all ones: inf or NaN
  for (int64_t i = 0; i < nblocks; ++i)
    for (int s = 0; s < nscales; ++s) {
      uint16_t h;
      std::memcpy(&h, src + i * bytes + off0 + 2 * s, 2);
      all |= uint16_t((h & 0x7C00) == 0x7C00);
    }
  return all == 0;
}

}  // namespace kiln::cpu
