// The block kernels of gemv_blocks.h. Every activation row sums
//   y = sum_g a_g * sum_{i in g} q_i x_i  +  sum_g b_g * xs_g
// with xs_g = sum_{i in g} x_i computed once per call. Q4_0, Q4_1, Q4_K and
// Q8_0 read q in place from the blocks, with the f16 scales of a ~4 KiB tile
// of rows converted first; the other types split each row into q [K] int8
// and a, b [K / G] in thread-local buffers that stay in L1. q widens to
// float32 exactly; the products and sums are float32 as in the FMA kernels.
// With x in float32 the vector ports bound these kernels (widen, nibble,
// convert, FMA: ~1.75 cycles per 16 weights), not the memory bus.
#include "cpu/gemv_blocks.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/ggml_blocks.h"
#include "core/scratch.h"
#include "cpu/block_split.h"
#include "cpu/gemm.h"
#include "kiln/float_types.h"
#include "kiln/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemv_blocks.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// sum_i q_i x_i per group, scaled by a_g, over `groups` groups of G; four
// groups at a time so the scaled sums run in four independent chains.
// Group g's q at q + g * qs (qs = G for a split row, the block size in
// bytes where q is read in place, as for Q8_0).
template <int G>
float ScaledGroupDot(const int8_t* q, int64_t qs, const float* a, const float* x, int64_t groups) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  auto widen = [&](const int8_t* p) { return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, p))); };
  auto t0 = hn::Zero(df), t1 = hn::Zero(df), t2 = hn::Zero(df), t3 = hn::Zero(df);
  int64_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    const int8_t* qg = q + g * qs;
    const float* xg = x + g * G;
    auto p0 = hn::Zero(df), p1 = hn::Zero(df), p2 = hn::Zero(df), p3 = hn::Zero(df);
    for (int64_t k = 0; k < G; k += L) {
      p0 = hn::MulAdd(widen(qg + k), hn::LoadU(df, xg + k), p0);
      p1 = hn::MulAdd(widen(qg + qs + k), hn::LoadU(df, xg + G + k), p1);
      p2 = hn::MulAdd(widen(qg + 2 * qs + k), hn::LoadU(df, xg + 2 * G + k), p2);
      p3 = hn::MulAdd(widen(qg + 3 * qs + k), hn::LoadU(df, xg + 3 * G + k), p3);
    }
    t0 = hn::MulAdd(p0, hn::Set(df, a[g]), t0);
    t1 = hn::MulAdd(p1, hn::Set(df, a[g + 1]), t1);
    t2 = hn::MulAdd(p2, hn::Set(df, a[g + 2]), t2);
    t3 = hn::MulAdd(p3, hn::Set(df, a[g + 3]), t3);
  }
  for (; g < groups; ++g) {
    auto p = hn::Zero(df);
    for (int64_t k = 0; k < G; k += L) p = hn::MulAdd(widen(q + g * qs + k), hn::LoadU(df, x + g * G + k), p);
    t0 = hn::MulAdd(p, hn::Set(df, a[g]), t0);
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(t0, t1), hn::Add(t2, t3))));
}

// sum_i u_i v_i over n floats.
float Dot(const float* u, const float* v, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    s0 = hn::MulAdd(hn::LoadU(df, u + i), hn::LoadU(df, v + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, u + i + L), hn::LoadU(df, v + i + L), s1);
  }
  float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) s += u[i] * v[i];
  return s;
}

// xs[m * groups + g] = sum of x row m's group g (G elements).
void GroupSums(const float* x, int64_t ldx, int64_t M, int64_t K, int64_t G, float* xs) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t groups = K / G;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g = 0; g < groups; ++g) {
      const float* p = x + m * ldx + g * G;
      auto s = hn::Zero(df);
      for (int64_t k = 0; k < G; k += L) s = hn::Add(s, hn::LoadU(df, p + k));
      xs[m * groups + g] = hn::GetLane(hn::SumOfLanes(df, s));
    }
}

#if HWY_TARGET != HWY_SCALAR
// n f16 scales, one every `stride` bytes from src, widened to float32 (exact):
// gathered as 32-bit words a vector at a time (the word from the scale on, or
// for a scale in its block's last 2 bytes the word that ends with it, so no
// read leaves the blocks), then converted by F16C / AVX-512.
void F16Scales(const uint8_t* src, int64_t stride, int64_t n, float* out, bool at_block_end = false) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(di)> du;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int64_t L = int64_t(hn::Lanes(df));
  const uint8_t* base = src - (at_block_end ? 2 : 0);
  auto convert = [&](const uint8_t* p, hn::Vec<decltype(di)> offsets) {
    const auto w = hn::GatherOffset(di, reinterpret_cast<const int32_t*>(p), offsets);
    const auto h = at_block_end ? hn::BitCast(di, hn::ShiftRight<16>(hn::BitCast(du, w)))
                                : hn::And(w, hn::Set(di, 0xFFFF));
    return hn::PromoteTo(df, hn::BitCast(dh, hn::DemoteTo(du16, h)));
  };
  const auto lanes = hn::Iota(di, 0);
  const auto step = hn::Mul(lanes, hn::Set(di, int32_t(stride)));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(convert(base + i * stride, step), df, out + i);
  if (i < n) {  // the last few: lanes past n re-read the last scale
    HWY_ALIGN float tail[hn::MaxLanes(df)];
    const auto last = hn::Min(lanes, hn::Set(di, int32_t(n - i - 1)));
    hn::Store(convert(base + i * stride, hn::Mul(last, hn::Set(di, int32_t(stride)))), df, tail);
    std::memcpy(out + i, tail, size_t(n - i) * sizeof(float));
  }
}

// Q4_K / Q5_K: a = d * sc and b = -(dmin * m) of each block's 8 groups.
void K45Scales(const uint8_t* src, int64_t bytes, int64_t nb, float* a, float* b) {
  HWY_ALIGN float d[64], dmin[64];
  for (int64_t i0 = 0; i0 < nb; i0 += 64) {
    const int64_t c = std::min<int64_t>(64, nb - i0);
    F16Scales(src + i0 * bytes, bytes, c, d);
    F16Scales(src + i0 * bytes + 2, bytes, c, dmin);
    for (int64_t i = 0; i < c; ++i)
      for (int g = 0; g < 8; ++g) {
        int sc, m;
        ggml::k4_scale_min(src + (i0 + i) * bytes + 4, g, sc, m);
        a[(i0 + i) * 8 + g] = d[i] * float(sc);
        b[(i0 + i) * 8 + g] = -(dmin[i] * float(m));
      }
  }
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
        F16Scales(src + i0 * bytes + (three ? 108 : 80), bytes, c, d, three);
        if (!three) F16Scales(src + i0 * bytes + 82, bytes, c, dmin, true);
        for (int64_t i = 0; i < c; ++i) {
          const uint8_t* blk = src + (i0 + i) * bytes;
          float* ag = a + (i0 + i) * 16;
          if (three) {
            const uint8_t* sc = blk + 96;
            for (int g = 0; g < 16; ++g) {
              const int lo = (sc[g & 7] >> (4 * (g >> 3))) & 0x0F,
                        hi = (sc[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
              ag[g] = d[i] * float((lo | hi << 4) - 32);
            }
          } else {
            float* bg = b + (i0 + i) * 16;
            for (int g = 0; g < 16; ++g) {
              ag[g] = d[i] * float(blk[g] & 0x0F);
              bg[g] = -(dmin[i] * float(blk[g] >> 4));
            }
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
        F16Scales(src + i0 * bytes + 208, bytes, c, d, true);
        for (int64_t i = 0; i < c; ++i) {
          const uint8_t* blk = src + (i0 + i) * bytes;
          const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
          for (int g = 0; g < 16; ++g) a[(i0 + i) * 16 + g] = d[i] * float(sc[g]);
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

#if HWY_TARGET != HWY_SCALAR
// Q4_0, Q4_1 and Q4_K: the matrix-vector kernel reads the nibbles straight
// from the blocks (widen, mask or shift, convert: ~2x faster than splitting
// them into q first); only the scales are split. Q4_0's q - 8 is summed as
// q with the offset b = -8a.
bool NibbleDirect(BlockType t) {
  return t == BlockType::Q4_0 || t == BlockType::Q4_1 || t == BlockType::Q4_K;
}

void NibbleScales(BlockType t, const uint8_t* src, int64_t nb, float* a, float* b) {
  const int64_t bytes = block_type_info(t).block_bytes;
  if (t == BlockType::Q4_K) return K45Scales(src, bytes, nb, a, b);
  F16Scales(src, bytes, nb, a);
  if (t == BlockType::Q4_1) return F16Scales(src + 2, bytes, nb, b);
  for (int64_t i = 0; i < nb; ++i) b[i] = -8.0f * a[i];
}

// sum_g a_g * sum_{i in g} q_i x_i with q the blocks' nibbles.
float NibbleDot(BlockType t, const uint8_t* row, int64_t nb, const float* a, const float* x) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  const auto lo4 = hn::Set(di, 15);
  auto t0 = hn::Zero(df), t1 = hn::Zero(df), t2 = hn::Zero(df), t3 = hn::Zero(df);
  // 16 * r bytes at p: low nibbles against x[0, 16r), high ones against xh.
#if HWY_TARGET <= HWY_AVX3
  // vpermps from the float table 0..15 reads only an index's low 4 bits: one
  // uop for mask-and-convert (~10% of the kernel, which the vector ports bound).
  const auto iota = hn::Iota(df, 0.0f);
  auto low = [&](hn::Vec<decltype(di)> v) {
    return hn::Vec<decltype(df)>{_mm512_permutexvar_ps(v.raw, iota.raw)};
  };
  auto high = [&](hn::Vec<decltype(di)> v) { return low(hn::ShiftRight<4>(v)); };
#else
  auto low = [&](hn::Vec<decltype(di)> v) { return hn::ConvertTo(df, hn::And(v, lo4)); };
  auto high = [&](hn::Vec<decltype(di)> v) { return hn::ConvertTo(df, hn::ShiftRight<4>(v)); };
#endif
  auto run = [&](const uint8_t* p, const float* xl, const float* xh, int64_t n, auto& plo, auto& phi) {
    for (int64_t k = 0; k < n; k += L) {
      const auto v = hn::PromoteTo(di, hn::LoadU(d8, p + k));
      plo = hn::MulAdd(low(v), hn::LoadU(df, xl + k), plo);
      phi = hn::MulAdd(high(v), hn::LoadU(df, xh + k), phi);
    }
  };
  if (t == BlockType::Q4_K) {
    // Chunk c of a super-block: 32 bytes, low nibbles group 2c, high 2c + 1.
    for (int64_t blk = 0; blk < nb; ++blk)
      for (int c = 0; c < 4; c += 2) {
        const uint8_t* p = row + blk * 144 + 16 + c * 32;
        const float* xg = x + blk * 256 + c * 64;
        auto p0 = hn::Zero(df), p1 = hn::Zero(df), p2 = hn::Zero(df), p3 = hn::Zero(df);
        run(p, xg, xg + 32, 32, p0, p1);
        run(p + 32, xg + 64, xg + 96, 32, p2, p3);
        const float* ag = a + blk * 8 + c * 2;
        t0 = hn::MulAdd(p0, hn::Set(df, ag[0]), t0);
        t1 = hn::MulAdd(p1, hn::Set(df, ag[1]), t1);
        t2 = hn::MulAdd(p2, hn::Set(df, ag[2]), t2);
        t3 = hn::MulAdd(p3, hn::Set(df, ag[3]), t3);
      }
  } else {
    // A block: 16 bytes, low nibbles elements 0-15, high ones 16-31.
    const int64_t bytes = block_type_info(t).block_bytes, off = t == BlockType::Q4_0 ? 2 : 4;
    int64_t blk = 0;
    // One sum per block (low and high nibbles into the same accumulator),
    // so each block costs one scaling FMA; two blocks in flight.
    for (; blk + 2 <= nb; blk += 2) {
      auto p0 = hn::Zero(df), p1 = hn::Zero(df);
      run(row + blk * bytes + off, x + blk * 32, x + blk * 32 + 16, 16, p0, p0);
      run(row + (blk + 1) * bytes + off, x + blk * 32 + 32, x + blk * 32 + 48, 16, p1, p1);
      if (blk & 2) {
        t0 = hn::MulAdd(p0, hn::Set(df, a[blk]), t0);
        t1 = hn::MulAdd(p1, hn::Set(df, a[blk + 1]), t1);
      } else {
        t2 = hn::MulAdd(p0, hn::Set(df, a[blk]), t2);
        t3 = hn::MulAdd(p1, hn::Set(df, a[blk + 1]), t3);
      }
    }
    if (blk < nb) {
      auto p0 = hn::Zero(df), p1 = hn::Zero(df);
      run(row + blk * bytes + off, x + blk * 32, x + blk * 32 + 16, 16, p0, p1);
      t0 = hn::MulAdd(hn::Add(p0, p1), hn::Set(df, a[blk]), t0);
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(t0, t1), hn::Add(t2, t3))));
}
#endif

void Split(BlockType t, const uint8_t* src, int64_t nb, int8_t* q, float* a, float* b) {
#if HWY_TARGET != HWY_SCALAR
  if (SplitFast(t, src, nb, q, a, b)) return;
#endif
  split_blocks(t, src, nb, q, a, b);
}

// Buffers for one split row, grown as needed and kept by the thread.
struct SplitRow {
  std::vector<int8_t> q;
  std::vector<float> a, b;
  // q for K elements; a and b for `groups` groups.
  void fit(int64_t K, int64_t groups) {
    if (int64_t(q.size()) < K) q.resize(size_t(K));
    if (int64_t(a.size()) < groups) {
      a.resize(size_t(groups));
      b.resize(size_t(groups));
    }
  }
};

void BlockGemvRows(const BlockGemvArgs& a, const float* xs, int64_t n0, int64_t n1) {
  thread_local SplitRow row;
  const int64_t G = split_group(a.type), groups = a.K / G;
  const int64_t nblocks = a.K / block_type_info(a.type).block_size;
  const int64_t row_bytes = nblocks * block_type_info(a.type).block_bytes;
  const bool offset = split_has_offset(a.type);
#if HWY_TARGET != HWY_SCALAR
  if (a.type == BlockType::Q8_0 || NibbleDirect(a.type)) {
    // The scales of a tile of rows in one pass where rows follow each other
    // (a small model's rows of 576 elements are 18 blocks: per-row calls cost
    // nearly as much as the sums), then the rows' sums from them.
    // ~4 KiB of blocks a tile. In-process A/B (Emerald Rapids, 2 threads):
    // 576-element Q4_1 rows 1.2x per-row scales; 16-32 KiB tiles lost 1.35x
    // on 4096-element Q4_K rows (the sums re-read the tile from L2).
    const int64_t tile = a.ldw == row_bytes ? std::max<int64_t>(1, 4096 / row_bytes) : 1;
    row.fit(0, tile * groups);
    for (int64_t n = n0; n < n1; n += tile) {
      const int64_t rows = std::min(tile, n1 - n);
      const uint8_t* w0 = a.w + n * a.ldw;
      if (a.type == BlockType::Q8_0)
        F16Scales(w0, 34, rows * nblocks, row.a.data());
      else
        NibbleScales(a.type, w0, rows * nblocks, row.a.data(), row.b.data());
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* wr = w0 + r * a.ldw;
        const float* ar = row.a.data() + r * groups;
        for (int64_t m = 0; m < a.M; ++m) {
          const float* x = a.x + m * a.ldx;
          float s;
          if (a.type == BlockType::Q8_0) {  // int8 q read in place, 2 bytes into each 34-byte block
            s = ScaledGroupDot<32>(reinterpret_cast<const int8_t*>(wr + 2), 34, ar, x, nblocks);
          } else {
            s = NibbleDot(a.type, wr, nblocks, ar, x);
            s += Dot(row.b.data() + r * groups, xs + m * groups, groups);
          }
          a.y[m * a.ldy + n + r] = a.bias ? s + a.bias[n + r] : s;
        }
      }
    }
    return;
  }
#endif
  row.fit(a.K, groups);
  for (int64_t n = n0; n < n1; ++n) {
    Split(a.type, a.w + n * a.ldw, nblocks, row.q.data(), row.a.data(), row.b.data());
    for (int64_t m = 0; m < a.M; ++m) {
      const float* x = a.x + m * a.ldx;
      float s = G == 16 ? ScaledGroupDot<16>(row.q.data(), 16, row.a.data(), x, groups)
                        : ScaledGroupDot<32>(row.q.data(), 32, row.a.data(), x, groups);
      if (offset) s += Dot(row.b.data(), xs + m * groups, groups);
      a.y[m * a.ldy + n] = a.bias ? s + a.bias[n] : s;
    }
  }
}

// out[n * K + i] = a[i / G] * q[i] (+ b[i / G]): two roundings, as the reference.
void WidenRows(BlockType t, const uint8_t* w, int64_t ldw, int64_t K, int64_t n0, int64_t n1, float* out) {
  thread_local SplitRow row;
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t G = split_group(t), nblocks = K / block_type_info(t).block_size;
  const bool offset = split_has_offset(t);
  row.fit(K, K / G);
  for (int64_t n = n0; n < n1; ++n) {
    Split(t, w + n * ldw, nblocks, row.q.data(), row.a.data(), row.b.data());
    float* o = out + (n - n0) * K;
    for (int64_t g = 0; g < K / G; ++g) {
      const auto sa = hn::Set(df, row.a[size_t(g)]);
      const auto sb = hn::Set(df, offset ? row.b[size_t(g)] : 0.0f);
      for (int64_t k = g * G; k < (g + 1) * G; k += L) {
        auto v = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, row.q.data() + k))), sa);
        if (offset) v = hn::Add(v, sb);
        hn::StoreU(v, df, o + k);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(BlockGemvRows);
HWY_EXPORT(GroupSums);
HWY_EXPORT(WidenRows);

void block_gemv(const BlockGemvArgs& a) {
  if (a.N <= 0 || a.M <= 0) return;
  thread_local std::vector<float> xs_buf;
  const int64_t G = split_group(a.type);
  const float* xs = nullptr;
  if (split_has_offset(a.type) || a.type == BlockType::Q4_0) {  // Q4_0: the nibble kernel's offset
    if (int64_t(xs_buf.size()) < a.M * (a.K / G)) xs_buf.resize(size_t(a.M * (a.K / G)));
    HWY_DYNAMIC_DISPATCH(GroupSums)(a.x, a.ldx, a.M, a.K, G, xs_buf.data());
    xs = xs_buf.data();
  }
  // Chunks of at least ~32 KiB of blocks, so a hand-off pays for itself.
  const int64_t grain = std::max<int64_t>(8, (int64_t(32) << 10) / std::max<int64_t>(1, a.ldw));
  parallel_for(0, a.N, grain, [&](int64_t n0, int64_t n1) {
    HWY_DYNAMIC_DISPATCH(BlockGemvRows)(a, xs, n0, n1);
  });
}

void dequantize_block_rows(BlockType t, const uint8_t* w, int64_t ldw, int64_t K, int64_t n0, int64_t n1,
                           float* out) {
  if (n1 <= n0 || K <= 0) return;
  HWY_DYNAMIC_DISPATCH(WidenRows)(t, w, ldw, K, n0, n1, out);
}

void block_gemm(const BlockGemvArgs& a) {
  if (a.N <= 0 || a.M <= 0) return;
  GemvArgs g;
  g.x = a.x;
  g.ldx = a.ldx;
  g.M = a.M;
  g.K = a.K;
  g.ldw = a.K;
  g.ldy = a.ldy;
  g.y_dtype = DType::Float32;
  g.x_exact = true;
  const ScratchBlock xbuf(size_t(gemm_packed_x_floats(DType::Float32, a.M, a.K)) * sizeof(float));
  float* xp = xbuf.as<float>();
  gemm_pack_x(DType::Float32, g, xp);
  // Panels of ~1 MiB of float32 rows, a multiple of 16 rows.
  const int64_t rows = std::max<int64_t>(16, ((int64_t(1) << 18) / std::max<int64_t>(1, a.K)) / 16 * 16);
  const int64_t panels = (a.N + rows - 1) / rows;
  parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> panel;
    if (int64_t(panel.size()) < rows * a.K) panel.resize(size_t(rows * a.K));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * rows, n1 = std::min(a.N, n0 + rows);
      HWY_DYNAMIC_DISPATCH(WidenRows)(a.type, a.w, a.ldw, a.K, n0, n1, panel.data());
      GemvArgs h = g;
      h.w = panel.data();
      h.N = n1 - n0;
      h.y = a.y + n0;
      h.bias = a.bias ? a.bias + n0 : nullptr;
      gemm_packed_rows(DType::Float32, h, xp, 0, n1 - n0);
    }
  });
}

}  // namespace kiln::cpu
#endif
