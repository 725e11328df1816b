// The vector splits of the block kernels (gemv_blocks.cc): each type's f16 or
// 6-bit scales converted a vector at a time (F16Scales, K45Scales, ScaleInts),
// and a row of blocks split into int8 q [K] and per-group a, b (SplitFast)
// for the types not read in place. Compiled once per Highway
// target; SplitFast returns false where the scalar split_blocks must run.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_BLOCK_SPLIT_VEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_BLOCK_SPLIT_VEC_INL_H_
#undef KILN_CPU_BLOCK_SPLIT_VEC_INL_H_
#else
#define KILN_CPU_BLOCK_SPLIT_VEC_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#include "core/ggml_blocks.h"
#include "cpu/block_split.h"
#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// n f16 scales, one every `stride` bytes from src, widened to float32
// (exact): read as scalars into a vector's worth of halves, then converted by
// F16C / AVX-512. A 32-bit gather of them cost as much as Q4_0's whole dot on
// Zen 3 (its gathers stall on the cold lines they touch first): the scalar
// reads ran Q4_0 / Q4_1 / Q8_0 / IQ4_NL 1.1-1.5x faster there, bit for bit.
void F16Scales(const uint8_t* src, int64_t stride, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int64_t L = int64_t(hn::Lanes(df));
  HWY_ALIGN uint16_t h[hn::MaxLanes(df)];
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int64_t j = 0; j < L; ++j) std::memcpy(&h[j], src + (i + j) * stride, 2);
    hn::StoreU(hn::PromoteTo(df, hn::Load(dh, reinterpret_cast<const hwy::float16_t*>(h))), df, out + i);
  }
  for (; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, src + i * stride, 2);
    out[i] = f16_bits_to_float(v);
  }
}

// Q4_K / Q5_K: a = d * sc and b = -(dmin * m) of each block's 8 groups. The
// 6-bit sc and m (ggml::k4_scale_min) of a block are unpacked in 8 byte
// lanes from its 12 scale bytes s: lane j < 4 takes sc = s[j] & 63,
// m = s[j + 4] & 63; lane j >= 4 sc = s[j + 4] & 15 | (s[j - 4] >> 2) & 0x30,
// m = s[j + 4] >> 4 | (s[j] >> 2) & 0x30. Done per group in scalar code this
// took two thirds as long as Q4_K's dot product itself.
void K45Scales(const uint8_t* src, int64_t bytes, int64_t nb, float* a, float* b) {
  const hn::FixedTag<uint8_t, 16> d8;
  const hn::CappedTag<float, 8> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const int64_t L = int64_t(hn::Lanes(df));
  constexpr uint8_t Z = 0x80;  // a table index that reads 0
  HWY_ALIGN static constexpr uint8_t kLoHi[16] = {0, 1, 2, 3, 8, 9, 10, 11,
                                                  Z, Z, Z, Z, Z, Z, Z,  Z};  // s[j], s[j + 4]
  HWY_ALIGN static constexpr uint8_t kUp[16] = {4, 5, 6, 7, 8, 9, 10, 11,
                                                Z, Z, Z, Z, Z, Z, Z,  Z};  // s[j + 4]
  HWY_ALIGN static constexpr uint8_t kBack4[16] = {Z, Z, Z, Z, 0, 1, 2, 3,
                                                   Z, Z, Z, Z, Z, Z, Z, Z};  // s[j - 4]
  HWY_ALIGN static constexpr uint8_t kSame[16] = {Z, Z, Z, Z, 4, 5, 6, 7, Z, Z, Z, Z, Z, Z, Z, Z};  // s[j]
  HWY_ALIGN static constexpr uint8_t kScMask[16] = {63, 63, 63, 63, 15, 15, 15, 15};
  HWY_ALIGN static constexpr uint8_t kFirst4[16] = {0xFF, 0xFF, 0xFF, 0xFF};
  const auto lo_hi = hn::Load(d8, kLoHi), up = hn::Load(d8, kUp), back4 = hn::Load(d8, kBack4),
             same = hn::Load(d8, kSame), sc_mask = hn::Load(d8, kScMask);
  const auto first4 = hn::MaskFromVec(hn::Load(d8, kFirst4));
  const auto k63 = hn::Set(d8, 63), k30 = hn::Set(d8, 0x30);
  const auto hi2 = [&](hn::Vec<decltype(d8)> v) {
    return hn::And(hn::ShiftRight<2>(v), k30);
  };  // (v >> 2) & 0x30
  HWY_ALIGN float d[64], dmin[64];
  HWY_ALIGN uint8_t sc[16], m[16];
  for (int64_t i0 = 0; i0 < nb; i0 += 64) {
    const int64_t c = std::min<int64_t>(64, nb - i0);
    F16Scales(src + i0 * bytes, bytes, c, d);
    F16Scales(src + i0 * bytes + 2, bytes, c, dmin);
    for (int64_t i = 0; i < c; ++i) {
      // The 12 scale bytes at 4 and the first 4 bytes of qs (unused), inside the block.
      const auto s = hn::LoadU(d8, src + (i0 + i) * bytes + 4);
      const auto sv =
          hn::Or(hn::And(hn::TableLookupBytesOr0(s, lo_hi), sc_mask), hi2(hn::TableLookupBytesOr0(s, back4)));
      const auto u = hn::TableLookupBytesOr0(s, up);
      const auto mv = hn::Or(hn::IfThenElse(first4, hn::And(u, k63), hn::ShiftRight<4>(u)),
                             hi2(hn::TableLookupBytesOr0(s, same)));
      hn::Store(sv, d8, sc);
      hn::Store(mv, d8, m);
      const auto dv = hn::Set(df, d[i]), mn = hn::Set(df, -dmin[i]);
      for (int64_t k = 0; k < 8; k += L) {
        // d * sc, and -(dmin * m) as -dmin * m (the same float).
        hn::StoreU(hn::Mul(dv, hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(du8, sc + k)))), df,
                   a + (i0 + i) * 8 + k);
        hn::StoreU(hn::Mul(mn, hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(du8, m + k)))), df,
                   b + (i0 + i) * 8 + k);
      }
    }
  }
}

// out[k] = s * float(v[k]) for the n (a multiple of 8) int8 values at v:
// a group scale times a block scale, as the scalar split computes it.
void ScaleInts(const int8_t* v, int64_t n, float s, float* out) {
  const hn::CappedTag<float, 8> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  const auto sv = hn::Set(df, s);
  for (int64_t k = 0; k < n; k += L)
    hn::StoreU(hn::Mul(sv, hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, v + k)))), df, out + k);
}

// The split of the commonest types with 16-byte vectors; the others are
// split by the scalar code (block_split.cc), which gives the same q, a, b.
bool SplitFast(BlockType t, const uint8_t* src, int64_t nb, int8_t* q, float* a, float* b) {
  const hn::FixedTag<uint8_t, 16> d8;
  const hn::FixedTag<int8_t, 16> di8;
  const auto lo4 = hn::Set(d8, 0x0F);
  auto nibbles = [&](const uint8_t* p, int8_t* lo, int8_t* hi, int bias) {
    const auto v = hn::LoadU(d8, p);
    const auto bv = hn::Set(di8, int8_t(bias));
    hn::StoreU(hn::Sub(hn::BitCast(di8, hn::And(v, lo4)), bv), di8, lo);
    hn::StoreU(hn::Sub(hn::BitCast(di8, hn::ShiftRight<4>(v)), bv), di8, hi);
  };
  const int64_t bytes = block_type_info(t).block_bytes;
  switch (t) {
    case BlockType::Q8_0:
      F16Scales(src, bytes, nb, a);
      for (int64_t i = 0; i < nb; ++i) std::memcpy(q + 32 * i, src + i * bytes + 2, 32);
      return true;
    case BlockType::Q4_0:
      F16Scales(src, bytes, nb, a);
      for (int64_t i = 0; i < nb; ++i) nibbles(src + i * bytes + 2, q + 32 * i, q + 32 * i + 16, 8);
      return true;
    case BlockType::Q4_1:
      F16Scales(src, bytes, nb, a);
      F16Scales(src + 2, bytes, nb, b);
      for (int64_t i = 0; i < nb; ++i) nibbles(src + i * bytes + 4, q + 32 * i, q + 32 * i + 16, 0);
      return true;
    case BlockType::IQ4_NL: {
      F16Scales(src, bytes, nb, a);
      const auto lv = hn::Load(di8, ggml::kIQ4Levels);
      for (int64_t i = 0; i < nb; ++i) {
        const auto v = hn::LoadU(d8, src + i * bytes + 2);
        hn::StoreU(hn::TableLookupBytes(lv, hn::BitCast(di8, hn::And(v, lo4))), di8, q + 32 * i);
        hn::StoreU(hn::TableLookupBytes(lv, hn::BitCast(di8, hn::ShiftRight<4>(v))), di8, q + 32 * i + 16);
      }
      return true;
    }
    case BlockType::Q4_K:
      K45Scales(src, bytes, nb, a, b);
      for (int64_t i = 0; i < nb; ++i)
        for (int ch = 0; ch < 4; ++ch)
          for (int h = 0; h < 2; ++h) {
            int8_t* qc = q + i * 256 + ch * 64 + h * 16;
            nibbles(src + i * bytes + 16 + ch * 32 + h * 16, qc, qc + 32, 0);
          }
      return true;
    case BlockType::Q5_0:
    case BlockType::Q5_1: {
      // Q4_0's nibbles with bit j of the u32 qh as element j's bit 4: each
      // lane picks its qh byte, then tests its bit.
      const bool one_scale = t == BlockType::Q5_0;
      F16Scales(src, bytes, nb, a);
      if (!one_scale) F16Scales(src + 2, bytes, nb, b);
      HWY_ALIGN static constexpr uint8_t kSelLo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
      HWY_ALIGN static constexpr uint8_t kSelHi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
      HWY_ALIGN static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                                     1, 2, 4, 8, 16, 32, 64, 128};
      const auto sel_lo = hn::Load(d8, kSelLo), sel_hi = hn::Load(d8, kSelHi), bit = hn::Load(d8, kBit);
      const auto b4 = hn::Set(d8, 16);
      const auto bias = hn::Set(di8, int8_t(one_scale ? 16 : 0));
      const int64_t qh_off = one_scale ? 2 : 4;
      for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* blk = src + i * bytes;
        const auto qh = hn::LoadU(d8, blk + qh_off);  // qh in bytes 0-3 (16 bytes stay in the block)
        const auto v = hn::LoadU(d8, blk + qh_off + 4);
        const auto hl = hn::IfThenElseZero(hn::TestBit(hn::TableLookupBytes(qh, sel_lo), bit), b4);
        const auto hh = hn::IfThenElseZero(hn::TestBit(hn::TableLookupBytes(qh, sel_hi), bit), b4);
        hn::StoreU(hn::Sub(hn::BitCast(di8, hn::Or(hn::And(v, lo4), hl)), bias), di8, q + 32 * i);
        hn::StoreU(hn::Sub(hn::BitCast(di8, hn::Or(hn::ShiftRight<4>(v), hh)), bias), di8, q + 32 * i + 16);
      }
      return true;
    }
    case BlockType::Q2_K:
    case BlockType::Q3_K: {
      // Element h*128 + s*32 + l: 2 bits of qs[h*32 + l] at bit 2s; Q3_K
      // subtracts 4 where bit 4h + s of hmask[l] is clear.
      const bool three = t == BlockType::Q3_K;
      const int64_t qs_off = three ? 32 : 16;
      HWY_ALIGN float d[64], dmin[64];
      const auto three_v = hn::Set(d8, 3);
      const auto four = hn::Set(di8, 4);
      for (int64_t i0 = 0; i0 < nb; i0 += 64) {
        const int64_t c = std::min<int64_t>(64, nb - i0);
        F16Scales(src + i0 * bytes + (three ? 108 : 80), bytes, c, d);
        if (!three) F16Scales(src + i0 * bytes + 82, bytes, c, dmin);
        for (int64_t i = 0; i < c; ++i) {
          const uint8_t* blk = src + (i0 + i) * bytes;
          float* ag = a + (i0 + i) * 16;
          if (three) {
            // (Scalar: the 6-bit scales written as bytes and widened as a
            // vector ran 0.8-0.9x, the byte stores forwarding to no load.)
            const uint8_t* sc = blk + 96;
            for (int g = 0; g < 16; ++g) {
              const int lo = (sc[g & 7] >> (4 * (g >> 3))) & 0x0F,
                        hi = (sc[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
              ag[g] = d[i] * float((lo | hi << 4) - 32);
            }
          } else {
            // a = d * (sc & 15), b = -(dmin * (sc >> 4)), computed as -dmin * (sc >> 4).
            HWY_ALIGN int8_t sv[16], mv[16];
            const auto sc = hn::LoadU(d8, blk);
            hn::Store(hn::BitCast(di8, hn::And(sc, lo4)), di8, sv);
            hn::Store(hn::BitCast(di8, hn::ShiftRight<4>(sc)), di8, mv);
            ScaleInts(sv, 16, d[i], ag);
            ScaleInts(mv, 16, -dmin[i], b + (i0 + i) * 16);
          }
          int8_t* qb = q + (i0 + i) * 256;
          for (int h = 0; h < 2; ++h)
            for (int j = 0; j < 2; ++j) {
              auto v = hn::LoadU(d8, blk + qs_off + h * 32 + j * 16);
              const auto hm = three ? hn::LoadU(d8, blk + j * 16) : hn::Zero(d8);
              for (int sh = 0; sh < 4; ++sh, v = hn::ShiftRight<2>(v)) {
                auto qv = hn::BitCast(di8, hn::And(v, three_v));
                if (three) {
                  const auto set = hn::TestBit(hm, hn::Set(d8, uint8_t(1u << (4 * h + sh))));
                  qv = hn::Sub(qv, hn::IfThenZeroElse(hn::RebindMask(di8, set), four));
                }
                hn::StoreU(qv, di8, qb + h * 128 + sh * 32 + j * 16);
              }
            }
        }
      }
      return true;
    }
    case BlockType::IQ4_XS: {
      const auto lv = hn::Load(di8, ggml::kIQ4Levels);
      HWY_ALIGN float d[64];
      for (int64_t i0 = 0; i0 < nb; i0 += 64) {
        const int64_t c = std::min<int64_t>(64, nb - i0);
        F16Scales(src + i0 * bytes, bytes, c, d);
        for (int64_t i = 0; i < c; ++i) {
          const uint8_t* blk = src + (i0 + i) * bytes;
          uint16_t sh;
          std::memcpy(&sh, blk + 2, 2);
          int8_t* qb = q + (i0 + i) * 256;
          for (int g = 0; g < 8; ++g) {
            const int lo = (blk[4 + (g >> 1)] >> (4 * (g & 1))) & 0x0F, hi = (sh >> (2 * g)) & 3;
            a[(i0 + i) * 8 + g] = d[i] * float((lo | hi << 4) - 32);
            const auto v = hn::LoadU(d8, blk + 8 + g * 16);
            hn::StoreU(hn::TableLookupBytes(lv, hn::BitCast(di8, hn::And(v, lo4))), di8, qb + g * 32);
            hn::StoreU(hn::TableLookupBytes(lv, hn::BitCast(di8, hn::ShiftRight<4>(v))), di8,
                       qb + g * 32 + 16);
          }
        }
      }
      return true;
    }
    case BlockType::Q5_K: {
      // Q4_K's nibbles, each with bit g of qh[l] (g: the element's group) as bit 4.
      K45Scales(src, bytes, nb, a, b);
      const auto one = hn::Set(d8, 1);
      for (int64_t i = 0; i < nb; ++i) {
        const uint8_t* blk = src + i * bytes;
        int8_t* qb = q + i * 256;
        for (int h = 0; h < 2; ++h) {
          auto qh = hn::LoadU(d8, blk + 16 + h * 16);
          for (int ch = 0; ch < 4; ++ch, qh = hn::ShiftRight<2>(qh)) {
            const auto v = hn::LoadU(d8, blk + 48 + ch * 32 + h * 16);
            const auto lo = hn::Or(hn::And(v, lo4), hn::ShiftLeft<4>(hn::And(qh, one)));
            const auto hi =
                hn::Or(hn::ShiftRight<4>(v), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<1>(qh), one)));
            hn::StoreU(hn::BitCast(di8, lo), di8, qb + ch * 64 + h * 16);
            hn::StoreU(hn::BitCast(di8, hi), di8, qb + ch * 64 + 32 + h * 16);
          }
        }
      }
      return true;
    }
    case BlockType::Q6_K: {
      HWY_ALIGN float d[64];
      const auto three = hn::Set(d8, 3);
      const auto k32 = hn::Set(di8, 32);
      for (int64_t i0 = 0; i0 < nb; i0 += 64) {
        const int64_t c = std::min<int64_t>(64, nb - i0);
        F16Scales(src + i0 * bytes + 208, bytes, c, d);
        for (int64_t i = 0; i < c; ++i) {
          const uint8_t* blk = src + (i0 + i) * bytes;
          const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
          ScaleInts(sc, 16, d[i], a + (i0 + i) * 16);
          int8_t* qb = q + (i0 + i) * 256;
          for (int half = 0; half < 2; ++half)
            for (int j = 0; j < 2; ++j) {
              const uint8_t* l = blk + half * 64 + j * 16;
              const auto la = hn::LoadU(d8, l), lb = hn::LoadU(d8, l + 32);
              const auto h = hn::LoadU(d8, blk + 128 + half * 32 + j * 16);
              auto put = [&](hn::Vec<decltype(d8)> low, hn::Vec<decltype(d8)> high2, int8_t* o) {
                const auto v = hn::Or(low, hn::ShiftLeft<4>(hn::And(high2, three)));
                hn::StoreU(hn::Sub(hn::BitCast(di8, v), k32), di8, o);
              };
              int8_t* o = qb + half * 128 + j * 16;
              put(hn::And(la, lo4), h, o);
              put(hn::And(lb, lo4), hn::ShiftRight<2>(h), o + 32);
              put(hn::ShiftRight<4>(la), hn::ShiftRight<4>(h), o + 64);
              put(hn::ShiftRight<4>(lb), hn::ShiftRight<6>(h), o + 96);
            }
        }
      }
      return true;
    }
    default:
      return false;
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_BLOCK_SPLIT_VEC_INL_H_
