// The SIMD body of the matrix-vector kernels (see gemv.h), compiled once per
// Highway target by each gemv_<type>.cc. A tile is R weight rows x MT
// activation rows: every widened weight vector is used MT times and every
// activation vector R times, with R * MT independent FMA chains.
//
// Widening (the bottleneck on few cores, not the FMA):
//   bf16  -> f32: a u32 lane holds two weights: shift left 16 / mask the low half;
//   f16   -> f32: vcvtph2ps (F16C);
//   e5m2  -> f16 bits: the byte in the top of a u16 (exact, inf/NaN included),
//            then vcvtph2ps;
//   e4m3fn-> f16 bits: the byte moved so its 4-bit exponent and 3-bit mantissa
//            sit in f16's fields; that f16 is the value times 2^-8 exactly,
//            subnormals included, and the 2^8 is folded into the row scale.
//            S.1111.111 (NaN) reads as 480: HasNanCode below.
// The bf16 and FP8 loaders widen two / four vectors at once with no lane
// shuffles; the activations are permuted once per call to match.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_GEMV_INL_H_
#undef KILN_CPU_GEMV_INL_H_
#else
#define KILN_CPU_GEMV_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/gemv.h"
#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace gemv {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// ---- widening loaders --------------------------------------------------------
//
// Each loader widens kChunk * Lanes(DF) consecutive weights into kChunk f32
// vectors. For kChunk > 1 the lanes come out in a fixed order: within a chunk
// first the even-indexed weights, then the odd ones (what a u16 -> u32 or
// u8 -> u16 split gives without any shuffle); the activations are permuted the
// same way once per call (PermuteX), so the dot product is unchanged.

struct WidenF32 {
  using T = float;
  static constexpr int kChunk = 1;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) { out[0] = hn::LoadU(DF(), p); }
  static float One(T v) { return v; }
};
struct WidenF16 {
  using T = half;
  static constexpr int kChunk = 1;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    out[0] = hn::PromoteTo(DF(), hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  }
  static float One(T v) { return float(v); }
};
#if HWY_TARGET == HWY_SCALAR
// One lane: plain scalar decodes.
template <typename TT, int kM>
struct WidenScalar {
  using T = TT;
  static constexpr int kChunk = 1;
  static constexpr float kMult = float(kM);
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) { out[0] = hn::Set(DF(), One(*p)); }
  static float One(T v) { return float(v) / kMult; }
};
using WidenBF16 = WidenScalar<bfloat16, 1>;
using WidenE5M2 = WidenScalar<float8_e5m2, 1>;
using WidenE4M3 = WidenScalar<float8_e4m3fn, 256>;
#else
// bf16: one full vector of u32 holds 2L weights; the even weight is the low
// half of each u32 (shift it up), the odd one the high half (mask the low off).
struct WidenBF16 {
  using T = bfloat16;
  static constexpr int kChunk = 2;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) {
    const hn::RebindToUnsigned<DF> du;
    const auto v = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    out[0] = hn::BitCast(DF(), hn::ShiftLeft<16>(v));
    out[1] = hn::BitCast(DF(), hn::And(v, hn::Set(du, 0xFFFF0000u)));
  }
  static float One(T v) { return float(v); }
};
// FP8: one full vector of u16 holds 4L weights (even byte low, odd byte high).
// Both bytes become f16 bit patterns in u16 lanes, and each half of those
// vectors widens to f32 with vcvtph2ps.
template <class Derived>
struct WidenFP8Base {
  static constexpr int kChunk = 4;
  static HWY_INLINE void Load(const void* HWY_RESTRICT p, VF* out) {
    const DF df;
    const hn::Repartition<int16_t, DF> d16;
    const hn::Half<hn::Repartition<hwy::float16_t, DF> > dh;
    const auto v = hn::LoadU(d16, static_cast<const int16_t*>(p));
    const auto even = Derived::Even(v), odd = Derived::Odd(v);
    out[0] = hn::PromoteTo(df, hn::BitCast(dh, hn::LowerHalf(even)));
    out[1] = hn::PromoteTo(df, hn::BitCast(dh, hn::UpperHalf(hn::Half<decltype(d16)>(), even)));
    out[2] = hn::PromoteTo(df, hn::BitCast(dh, hn::LowerHalf(odd)));
    out[3] = hn::PromoteTo(df, hn::BitCast(dh, hn::UpperHalf(hn::Half<decltype(d16)>(), odd)));
  }
};
// e5m2 is the top byte of an f16: exact, inf/NaN included.
struct WidenE5M2 : WidenFP8Base<WidenE5M2> {
  using T = float8_e5m2;
  static constexpr float kMult = 1.0f;
  template <class V>
  static HWY_INLINE V Even(V v) {
    return hn::ShiftLeft<8>(v);
  }
  template <class V>
  static HWY_INLINE V Odd(V v) {
    return hn::And(v, hn::Set(hn::DFromV<V>(), int16_t(-256)));
  }
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) { WidenFP8Base::Load(p, out); }
  static float One(T v) { return float(v); }
};
// e4m3fn S.EEEE.MMM in the top byte -> S.0EEEE.MMM0000000 (f16, value / 2^8):
// an arithmetic shift right by 1 copies S into bit 14 and the mask clears it.
struct WidenE4M3 : WidenFP8Base<WidenE4M3> {
  using T = float8_e4m3fn;
  static constexpr float kMult = 256.0f;
  template <class V>
  static HWY_INLINE V Fix(V top) {
    return hn::And(hn::ShiftRight<1>(top), hn::Set(hn::DFromV<V>(), int16_t(0xBF80)));
  }
  template <class V>
  static HWY_INLINE V Even(V v) {
    return Fix(hn::ShiftLeft<8>(v));
  }
  template <class V>
  static HWY_INLINE V Odd(V v) {
    return Fix(v);
  }
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) { WidenFP8Base::Load(p, out); }
  static float One(T v) { return float(v) / kMult; }
};
#endif  // HWY_TARGET == HWY_SCALAR

#undef KILN_GEMV_E4M3_TINY  // set per target: this file is read once per target
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define KILN_GEMV_E4M3_TINY 1
// e4m3fn straight to float32 bits with integer ops only, for AVX-512, where
// vcvtph2ps (two uops per 16 weights, on the ports the shifts and FMAs need)
// made the f16 route compute-bound near 12 GB/s per core. S.EEEE.MMM becomes
// S.0000EEEE.MMM0...0: a "tiny" float equal to the weight times 2^-120, exact
// for normal codes (E >= 1) and zero. The activations are scaled by 2^k per row
// (PermuteX) so tiny * x' stays normal; the sums are scaled back once per row.
// Subnormal codes (E = 0, M != 0) would be float32 denormals, which cost ~70x
// per FMA on Intel: a 4L-byte step that holds one (rare: ~2e-5 of real model
// weights) is detected with two mask tests and done exactly in scalar instead.
// Lanes come out as weights 4i+0, 4i+1, 4i+2, 4i+3 of lane i (x permuted to match).
struct WidenE4M3Tiny {
  using T = float8_e4m3fn;
  static constexpr int kChunk = 4;
  static constexpr float kMult = 1.0f;
  // One bit per byte of the step that is a subnormal code (E = 0, M != 0).
  static HWY_INLINE uint64_t Subnormals(const T* HWY_RESTRICT p) {
    const __m512i v = _mm512_loadu_si512(p);
    const __mmask64 mant = _mm512_test_epi8_mask(v, _mm512_set1_epi8(0x07));
    return _mm512_mask_testn_epi8_mask(mant, v, _mm512_set1_epi8(0x78));
  }
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) {
    const hn::Repartition<int16_t, DF> d16;
    Widen(hn::LoadU(d16, reinterpret_cast<const int16_t*>(p)), out);
  }
  // The step with the codes marked in `skip` read as zero.
  static HWY_INLINE void LoadSkipping(const T* HWY_RESTRICT p, uint64_t skip, VF* out) {
    const hn::Repartition<int16_t, DF> d16;
    Widen(hn::Vec<decltype(d16)>{_mm512_maskz_loadu_epi8(~skip, p)}, out);
  }
  template <class V16>
  static HWY_INLINE void Widen(V16 v, VF* out) {
    const DF df;
    const hn::Repartition<int16_t, DF> d16;
    const hn::RebindToUnsigned<DF> du;
    // In each u16 lane: the high byte, shifted right 4 (arithmetic: the sign
    // stays in bit 15) and masked to S.000.0EEEE.MMM.0000 (bf16 of the tiny
    // float); the low byte first moved up by 8.
    const auto m = hn::Set(d16, int16_t(0x87F0));
    const auto hi = hn::BitCast(du, hn::And(hn::ShiftRight<4>(v), m));
    const auto lo = hn::BitCast(du, hn::And(hn::ShiftRight<4>(hn::ShiftLeft<8>(v)), m));
    const auto top = hn::Set(du, 0xFFFF0000u);
    out[0] = hn::BitCast(df, hn::ShiftLeft<16>(lo));  // byte 0 of each u32
    out[1] = hn::BitCast(df, hn::ShiftLeft<16>(hi));  // byte 1
    out[2] = hn::BitCast(df, hn::And(lo, top));       // byte 2
    out[3] = hn::BitCast(df, hn::And(hi, top));       // byte 3
  }
  static float One(T v) { return float(v); }
};
#endif

// e4m3fn has no infinities: S.1111.111 is NaN, and both vector routes widen
// it to a finite number (480, or 1.875 * 2^-112 for the tiny floats). The
// kernels that use them find those codes per step (2 ops per vector of
// bytes: v | 0x80 is 0xFF exactly for them) and give the row its NaN.
template <class W>
constexpr bool HasNanCode() {
  return std::is_same_v<typename W::T, float8_e4m3fn> && W::kChunk == 4;
}
// Steps of codes seen so far: Add(p) takes the step at p (4 * Lanes(DF)
// bytes); Any() says whether one held a NaN code.
#if HWY_TARGET == HWY_SCALAR
struct NanCodeSteps {
  HWY_INLINE void Add(const void*) {}
  HWY_INLINE bool Any() const { return false; }
};
#else
struct NanCodeSteps {
  using DU8 = hn::Repartition<uint8_t, DF>;
  hn::Vec<DU8> seen;  // max over the steps of (code | 0x80)
  HWY_INLINE NanCodeSteps() : seen(hn::Zero(DU8())) {}
  HWY_INLINE void Add(const void* HWY_RESTRICT p) {
    const DU8 du8;
    seen = hn::Max(seen, hn::Or(hn::LoadU(du8, static_cast<const uint8_t*>(p)), hn::Set(du8, uint8_t(0x80))));
  }
  HWY_INLINE bool Any() const {
    const DU8 du8;
    return !hn::AllFalse(du8, hn::Eq(seen, hn::Set(du8, uint8_t(0xFF))));
  }
};
#endif
inline bool RowHasNanCode(const float8_e4m3fn* HWY_RESTRICT w, int64_t K) {
  const uint8_t* b = reinterpret_cast<const uint8_t*>(w);
  for (int64_t k = 0; k < K; ++k)
    if ((b[k] & 0x7F) == 0x7F) return true;
  return false;
}

template <class W>
constexpr bool IsTiny() {
#ifdef KILN_GEMV_E4M3_TINY
  return std::is_same_v<W, WidenE4M3Tiny>;
#else
  return false;
#endif
}

// A read prefetch into L2 (not L1: the line is used a whole tile later).
HWY_INLINE void PrefetchL2(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 2);
#else
  (void)p;
#endif
}

HWY_INLINE float row_scale(const GemvArgs& a, int64_t n) {
  switch (a.scale_kind) {
    case ScaleKind::Tensor:
      return a.scale[0];
    case ScaleKind::Row:
      return a.scale[n];
    default:
      return 1.0f;
  }
}

HWY_INLINE void store_out(const GemvArgs& a, int64_t m, int64_t n, float v) {
  char* row = static_cast<char*>(a.y) + m * a.ldy * int64_t(itemsize(a.y_dtype));
  switch (a.y_dtype) {
    case DType::BFloat16:
      reinterpret_cast<uint16_t*>(row)[n] = float_to_bf16_bits(v);
      break;
    case DType::Float16:
      reinterpret_cast<uint16_t*>(row)[n] = float_to_f16_bits(v);
      break;
    default: {
      float* o = reinterpret_cast<float*>(row) + n;
      *o = a.accumulate ? *o + v : v;
    }
  }
}

// Full unrolling of the loops over a tile's rows and accumulators: an
// accumulator array indexed by a run-time loop variable anywhere in Tile is
// kept in memory by the compiler, and every FMA then round-trips the stack
// (measured: the tiny-float FP8 tile ran at ~1.3 instructions per cycle).
#define KILN_UNROLL _Pragma("GCC unroll 64")

// The exact scalar terms of the codes flagged in `sub` (bit j: weight k + j)
// of one weight row, into tail[0 .. MT).
template <class W, int MT>
HWY_NOINLINE void AddFlaggedTerms(const typename W::T* HWY_RESTRICT wr, int64_t k, uint64_t sub,
                                  const float* HWY_RESTRICT const* x, float* HWY_RESTRICT tail) {
  for (uint64_t b = sub; b != 0; b &= b - 1) {
    const int64_t j = k + __builtin_ctzll(b);
    const float wj = W::One(wr[j]);
    for (int m = 0; m < MT; ++m) tail[m] += wj * x[m][j];
  }
}

// y[m0 .. m0+MT, n0 .. n0+R] for one tile. xp: activations in the loaders'
// chunk order (rows ldxp apart), used for the vector part; a.x for the tail.
// vfac (or null for 1): per activation row, what the vector sums are
// multiplied by to undo the scaling of xp (the tiny-float loader's).
template <class W, int R, int MT, bool kBlock>
HWY_NOINLINE void Tile(const GemvArgs& a, const float* HWY_RESTRICT xp, int64_t ldxp, const double* vfac,
                       int64_t n0, int64_t m0) {
  using T = typename W::T;
  constexpr int C = W::kChunk;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t CL = C * L;
  const int64_t K = a.K;
  const T* HWY_RESTRICT w[R];
  KILN_UNROLL
  for (int r = 0; r < R; ++r) w[r] = static_cast<const T*>(a.w) + (n0 + r) * a.ldw;
  const float* HWY_RESTRICT x[MT];
  const float* HWY_RESTRICT xq[MT];
  KILN_UNROLL
  for (int m = 0; m < MT; ++m) {
    x[m] = a.x + (m0 + m) * a.ldx;
    xq[m] = xp + (m0 + m) * ldxp;
  }
  // Rows shorter than a page put several read streams in one 4 KiB page,
  // which the hardware prefetcher follows poorly (FP8 rows of 2-2.5 KiB ran
  // at ~0.6 of the roof, 4 KiB rows at ~1.2): each step also prefetches the
  // same line of the next tile's rows into L2, one tile ahead.
  const bool prefetch = n0 + 2 * R <= a.N;

  VF tot[R * MT];      // block kind: scaled sums of finished blocks
  float stot[R * MT];  // scalar tails (scaled like tot)
  KILN_UNROLL
  for (int i = 0; i < R * MT; ++i) {
    tot[i] = hn::Zero(df);
    stot[i] = 0.0f;
  }
  [[maybe_unused]] NanCodeSteps nan_codes;
  const int64_t block = kBlock ? kScaleBlock : K;
  for (int64_t kb = 0; kb < K; kb += block) {
    const int64_t ke = kb + block < K ? kb + block : K;
    VF acc[R * MT];
    float tail[R * MT];  // scalar terms: the K tail and, for the tiny loader, skipped steps
    KILN_UNROLL
    for (int i = 0; i < R * MT; ++i) {
      acc[i] = hn::Zero(df);
      tail[i] = 0.0f;
    }
    int64_t k = kb;
    for (; k + CL <= ke; k += CL) {
      if (prefetch) {
        KILN_UNROLL
        for (int r = 0; r < R; ++r) PrefetchL2(w[r] + R * a.ldw + k);
      }
      if constexpr (HasNanCode<W>()) {
        KILN_UNROLL
        for (int r = 0; r < R; ++r) nan_codes.Add(w[r] + k);
      }
      VF xv[MT * C];
      KILN_UNROLL
      for (int m = 0; m < MT; ++m)
        KILN_UNROLL
        for (int c = 0; c < C; ++c) xv[m * C + c] = hn::LoadU(df, xq[m] + k + c * L);
      if constexpr (IsTiny<W>()) {
        // One test per step for all R rows; in a row whose step holds
        // subnormal codes, those read as zero in the vector part and their
        // terms are added exactly in scalar.
        uint64_t sub[R], any = 0;
        KILN_UNROLL
        for (int r = 0; r < R; ++r) {
          sub[r] = W::Subnormals(w[r] + k);
          any |= sub[r];
        }
        if (HWY_UNLIKELY(any != 0)) {
          KILN_UNROLL
          for (int r = 0; r < R; ++r) {
            if (sub[r] != 0) AddFlaggedTerms<W, MT>(w[r], k, sub[r], x, tail + r * MT);
            VF wv[C];
            W::LoadSkipping(w[r] + k, sub[r], wv);
            KILN_UNROLL
            for (int c = 0; c < C; ++c)
              KILN_UNROLL
              for (int m = 0; m < MT; ++m)
                acc[r * MT + m] = hn::MulAdd(wv[c], xv[m * C + c], acc[r * MT + m]);
          }
          continue;
        }
      }
      KILN_UNROLL
      for (int r = 0; r < R; ++r) {
        VF wv[C];
        W::Load(w[r] + k, wv);
        KILN_UNROLL
        for (int c = 0; c < C; ++c)
          KILN_UNROLL
          for (int m = 0; m < MT; ++m) acc[r * MT + m] = hn::MulAdd(wv[c], xv[m * C + c], acc[r * MT + m]);
      }
    }
    for (; k < ke; ++k) {
      KILN_UNROLL
      for (int r = 0; r < R; ++r) {
        const float wv = W::One(w[r][k]);
        KILN_UNROLL
        for (int m = 0; m < MT; ++m) tail[r * MT + m] += wv * x[m][k];
      }
    }
    if constexpr (kBlock) {
      const float* srow = a.scale + (n0 / kScaleBlock) * a.scale_ld + kb / kScaleBlock;
      KILN_UNROLL
      for (int r = 0; r < R; ++r) {
        // Rows of a tile may straddle a 128-row block boundary.
        const float s = (n0 + r) / kScaleBlock == n0 / kScaleBlock ? srow[0] : srow[a.scale_ld];
        KILN_UNROLL
        for (int m = 0; m < MT; ++m) {
          tot[r * MT + m] = hn::MulAdd(acc[r * MT + m], hn::Set(df, s), tot[r * MT + m]);
          stot[r * MT + m] += tail[r * MT + m] * s;
        }
      }
    } else {
      KILN_UNROLL
      for (int i = 0; i < R * MT; ++i) {
        tot[i] = acc[i];
        stot[i] = tail[i];
      }
    }
  }
  bool nan_row[R] = {};
  if constexpr (HasNanCode<W>()) {
    if (HWY_UNLIKELY(nan_codes.Any())) {
      KILN_UNROLL
      for (int r = 0; r < R; ++r) nan_row[r] = RowHasNanCode(w[r], K);
    }
  }
  KILN_UNROLL
  for (int r = 0; r < R; ++r) {
    const float mult = W::kMult * (kBlock ? 1.0f : row_scale(a, n0 + r));
    const float b = a.bias ? a.bias[n0 + r] : 0.0f;
    KILN_UNROLL
    for (int m = 0; m < MT; ++m) {
      const double v = double(hn::GetLane(hn::SumOfLanes(df, tot[r * MT + m])));
      const double sum = (vfac ? v * vfac[m0 + m] : v) + double(stot[r * MT + m]);
      store_out(a, m0 + m, n0 + r, nan_row[r] ? NAN : float(sum * double(mult) + double(b)));
    }
  }
}

// All M rows for weight rows [n0, n0 + R): activation rows in tiles of MT.
template <class W, int R, int MT, bool kBlock>
HWY_INLINE void RowGroup(const GemvArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0) {
  int64_t m = 0;
  for (; m + MT <= a.M; m += MT) Tile<W, R, MT, kBlock>(a, xp, ldxp, vfac, n0, m);
  if constexpr (MT > 1) {
    for (; m < a.M; ++m) Tile<W, R, 1, kBlock>(a, xp, ldxp, vfac, n0, m);
  }
}

template <class W, int R, int MT, bool kBlock>
HWY_INLINE void RowsFixed(const GemvArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0,
                          int64_t n1) {
  int64_t n = n0;
  for (; n + R <= n1; n += R) RowGroup<W, R, MT, kBlock>(a, xp, ldxp, vfac, n);
  for (; n < n1; ++n) RowGroup<W, 1, MT, kBlock>(a, xp, ldxp, vfac, n);
}

#ifdef KILN_GEMV_E4M3_TINY
// For the tiny-float loader: x rows in lane order (weight 4i+j of a chunk at
// j * L + i), each row scaled by 2^k so its largest |x| lands in [2^119, 2^120):
// tiny weights are >= 2^-126 (normal codes), so every product of a term that
// matters stays a normal float, and no sum can overflow. vfac[m] = 2^(120-k).
// Null when a row is not finite or its largest |x| is below 2^-60 (the f16
// route handles those exactly).
inline const float* PermuteScaleX(const GemvArgs& a, int64_t& ldxp, const double*& vfac) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df)), CL = 4 * L;
  const int64_t kv = a.K / CL * CL, kl = a.K / L * L;
  thread_local std::vector<float> buf;
  thread_local std::vector<double> fac;
  if (buf.size() < size_t(a.M * kv)) buf.resize(size_t(a.M * kv));
  if (fac.size() < size_t(a.M)) fac.resize(size_t(a.M));
  for (int64_t m = 0; m < a.M; ++m) {
    const float* HWY_RESTRICT src = a.x + m * a.ldx;
    // The largest |x|, and x * 0 summed: NaN exactly when some x is not finite.
    VF vmax = hn::Zero(df), vnan = hn::Zero(df);
    for (int64_t k = 0; k < kl; k += L) {
      const VF v = hn::LoadU(df, src + k);
      vmax = hn::Max(vmax, hn::Abs(v));
      vnan = hn::MulAdd(v, hn::Zero(df), vnan);
    }
    float amax = hn::GetLane(hn::MaxOfLanes(df, vmax)), zsum = hn::GetLane(hn::SumOfLanes(df, vnan));
    for (int64_t k = kl; k < a.K; ++k) {
      amax = std::max(amax, std::fabs(src[k]));
      zsum += src[k] * 0.0f;
    }
    if (std::isnan(zsum) || (amax != 0.0f && amax < 0x1p-60f)) return nullptr;
    const int e = amax == 0.0f ? 0 : std::ilogb(amax);  // amax in [2^e, 2^(e+1))
    // x * 2^(119 - e) in one or two exact power-of-two steps (2^(119 - e)
    // itself can pass float's range; every product stays below 2^120).
    const int up = 119 - e, up1 = std::min(up, 100);
    const VF s1 = hn::Set(df, std::ldexp(1.0f, up1)), s2 = hn::Set(df, std::ldexp(1.0f, up - up1));
    fac[size_t(m)] = std::ldexp(1.0, e + 1);
    float* HWY_RESTRICT dst = buf.data() + m * kv;
    for (int64_t c = 0; c < kv; c += CL) {
      VF v0, v1, v2, v3;  // v_j[i] = x[c + 4i + j]: the loader's lane order
      hn::LoadInterleaved4(df, src + c, v0, v1, v2, v3);
      hn::StoreU(hn::Mul(hn::Mul(v0, s1), s2), df, dst + c);
      hn::StoreU(hn::Mul(hn::Mul(v1, s1), s2), df, dst + c + L);
      hn::StoreU(hn::Mul(hn::Mul(v2, s1), s2), df, dst + c + 2 * L);
      hn::StoreU(hn::Mul(hn::Mul(v3, s1), s2), df, dst + c + 3 * L);
    }
  }
  ldxp = kv;
  vfac = fac.data();
  return buf.data();
}
#endif

// src[0..n) into dst in the loaders' chunk order: within each chunk of cl
// elements (a multiple of 2L; n a multiple of cl) the even-indexed ones, then
// the odd. FromChunkOrder undoes it.
HWY_INLINE void ToChunkOrder(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n, int64_t cl) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  for (int64_t c = 0; c < n; c += cl)
    for (int64_t j = 0; j < cl / 2; j += L) {
      VF ev, od;
      hn::LoadInterleaved2(df, src + c + 2 * j, ev, od);
      hn::StoreU(ev, df, dst + c + j);
      hn::StoreU(od, df, dst + c + cl / 2 + j);
    }
}
HWY_INLINE void FromChunkOrder(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n, int64_t cl) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  for (int64_t c = 0; c < n; c += cl)
    for (int64_t j = 0; j < cl / 2; j += L)
      hn::StoreInterleaved2(hn::LoadU(df, src + c + j), hn::LoadU(df, src + c + cl / 2 + j), df, dst + c + 2 * j);
}

// x rows in the loader's chunk order (evens, then odds, per chunk of
// kChunk * L); only whole chunks are used, the tail reads x itself.
template <class W>
const float* PermuteX(const GemvArgs& a, int64_t& ldxp) {
  if constexpr (W::kChunk == 1) {
    ldxp = a.ldx;
    return a.x;
  } else {
    const DF df;
    const int64_t L = int64_t(hn::Lanes(df));
    const int64_t CL = W::kChunk * L;
    const int64_t kv = a.K / CL * CL;
    thread_local std::vector<float> buf;
    if (buf.size() < size_t(a.M * kv)) buf.resize(size_t(a.M * kv));
    ldxp = kv;
    for (int64_t m = 0; m < a.M; ++m) ToChunkOrder(a.x + m * a.ldx, buf.data() + m * kv, kv, CL);
    return buf.data();
  }
}

// R * MT accumulators (and as many running totals for block scales) must fit
// the 16 vector registers of AVX2 beside the loaded vectors.
template <class W>
void Rows(const GemvArgs& a, int64_t n0, int64_t n1) {
  int64_t ldxp = 0;
  const double* vfac = nullptr;
  const float* xp = nullptr;
#ifdef KILN_GEMV_E4M3_TINY
  if constexpr (IsTiny<W>()) {
    xp = PermuteScaleX(a, ldxp, vfac);
    if (!xp) return Rows<WidenE4M3>(a, n0, n1);
  } else {
    xp = PermuteX<W>(a, ldxp);
  }
#else
  xp = PermuteX<W>(a, ldxp);
#endif
  if (a.scale_kind == ScaleKind::Block) {
    if (a.M == 1) return RowsFixed<W, 4, 1, true>(a, xp, ldxp, vfac, n0, n1);
    if (a.M == 2) return RowsFixed<W, 2, 2, true>(a, xp, ldxp, vfac, n0, n1);
    return RowsFixed<W, 1, 4, true>(a, xp, ldxp, vfac, n0, n1);
  }
  // Six FP8 rows per tile, not eight: rows of 0.5-2.3 KiB (SmolLM2, Qwen3
  // experts) ran at 0.62 of the roof with eight read streams per thread and
  // 0.66 with six (kiln bench linear, A/B interleaved); longer rows and bf16
  // showed no difference.
  if constexpr (IsTiny<W>()) {
    if (a.M == 1) return RowsFixed<W, 6, 1, false>(a, xp, ldxp, vfac, n0, n1);
  }
  if (a.M == 1) return RowsFixed<W, 8, 1, false>(a, xp, ldxp, vfac, n0, n1);
  if (a.M == 2) return RowsFixed<W, 4, 2, false>(a, xp, ldxp, vfac, n0, n1);
  if (a.M == 3) return RowsFixed<W, 2, 3, false>(a, xp, ldxp, vfac, n0, n1);
  return RowsFixed<W, 2, 4, false>(a, xp, ldxp, vfac, n0, n1);
}

}  // namespace gemv
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_GEMV_INL_H_
