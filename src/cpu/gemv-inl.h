// The SIMD body of the matrix-vector kernels (see gemv.h), compiled once per
// Highway target by each gemv_<type>.cc. A tile is R weight rows x MT
// activation rows: every widened weight vector is used MT times and every
// activation vector R times, with R * MT independent FMA chains.
//
// Widening (the bottleneck on few cores, not the FMA):
//   bf16  -> f32: zero-extend, shift left 16;
//   f16   -> f32: vcvtph2ps (F16C);
//   e5m2  -> f16 bits: shift left 8 (exact, inf/NaN included), then vcvtph2ps;
//   e4m3fn-> f16 bits: the byte moved so its 4-bit exponent and 3-bit mantissa
//            sit in f16's fields; that f16 is the value times 2^-8 exactly,
//            subnormals included, and the 2^8 is folded into the row scale.
//            S.1111.111 (NaN) reads as 480; FP8 weights must hold no NaN.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_GEMV_INL_H_
#undef KILN_CPU_GEMV_INL_H_
#else
#define KILN_CPU_GEMV_INL_H_
#endif

#include <hwy/highway.h>

#include "cpu/gemv.h"
#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace gemv {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// ---- widening loaders: Lanes(DF) weights at p -> f32 (times 1 / kMult) ----

struct WidenF32 {
  using T = float;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) { return hn::LoadU(DF(), p); }
  static float One(T v) { return v; }
};
struct WidenBF16 {
  using T = bfloat16;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    const hn::Rebind<hwy::bfloat16_t, DF> db;
    return hn::PromoteTo(DF(), hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(p)));
  }
  static float One(T v) { return float(v); }
};
struct WidenF16 {
  using T = half;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(DF(), hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  }
  static float One(T v) { return float(v); }
};
struct WidenE5M2 {
  using T = float8_e5m2;
  static constexpr float kMult = 1.0f;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    const hn::Rebind<uint8_t, DF> d8;
    const hn::Rebind<uint16_t, DF> d16;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto b = hn::PromoteTo(d16, hn::LoadU(d8, reinterpret_cast<const uint8_t*>(p)));
    return hn::PromoteTo(DF(), hn::BitCast(dh, hn::ShiftLeft<8>(b)));
  }
  static float One(T v) { return float(v); }
};
struct WidenE4M3 {
  using T = float8_e4m3fn;
  static constexpr float kMult = 256.0f;
  static HWY_INLINE VF Load(const T* HWY_RESTRICT p) {
    const hn::Rebind<uint8_t, DF> d8;
    const hn::Rebind<int16_t, DF> d16;
    const hn::Rebind<hwy::float16_t, DF> dh;
    // S.EEEE.MMM -> S.0EEEE.MMM0000000 (f16): shift the byte to the top, an
    // arithmetic shift right by 1 copies S into bit 14, the mask clears it.
    const auto b = hn::BitCast(d16, hn::PromoteTo(hn::RebindToUnsigned<decltype(d16)>(),
                                                  hn::LoadU(d8, reinterpret_cast<const uint8_t*>(p))));
    const auto h = hn::And(hn::ShiftRight<1>(hn::ShiftLeft<8>(b)), hn::Set(d16, int16_t(0xBF80)));
    return hn::PromoteTo(DF(), hn::BitCast(dh, h));
  }
  static float One(T v) { return float(v) / kMult; }
};

HWY_INLINE float row_scale(const GemvArgs& a, int64_t n) {
  switch (a.scale_kind) {
    case ScaleKind::Tensor: return a.scale[0];
    case ScaleKind::Row: return a.scale[n];
    default: return 1.0f;
  }
}

HWY_INLINE void store_out(const GemvArgs& a, int64_t m, int64_t n, float v) {
  char* row = static_cast<char*>(a.y) + m * a.ldy * int64_t(itemsize(a.y_dtype));
  switch (a.y_dtype) {
    case DType::BFloat16: reinterpret_cast<uint16_t*>(row)[n] = float_to_bf16_bits(v); break;
    case DType::Float16: reinterpret_cast<uint16_t*>(row)[n] = float_to_f16_bits(v); break;
    default: {
      float* o = reinterpret_cast<float*>(row) + n;
      *o = a.accumulate ? *o + v : v;
    }
  }
}

// y[m0 .. m0+MT, n0 .. n0+R] for one tile.
template <class W, int R, int MT, bool kBlock>
HWY_NOINLINE void Tile(const GemvArgs& a, int64_t n0, int64_t m0) {
  using T = typename W::T;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t K = a.K;
  const T* HWY_RESTRICT w[R];
  for (int r = 0; r < R; ++r) w[r] = static_cast<const T*>(a.w) + (n0 + r) * a.ldw;
  const float* HWY_RESTRICT x[MT];
  for (int m = 0; m < MT; ++m) x[m] = a.x + (m0 + m) * a.ldx;

  VF tot[R * MT];       // block kind: scaled sums of finished blocks
  float stot[R * MT];   // scalar tails (scaled like tot)
  for (int i = 0; i < R * MT; ++i) {
    tot[i] = hn::Zero(df);
    stot[i] = 0.0f;
  }
  const int64_t block = kBlock ? kScaleBlock : K;
  for (int64_t kb = 0; kb < K; kb += block) {
    const int64_t ke = kb + block < K ? kb + block : K;
    VF acc[R * MT];
    for (int i = 0; i < R * MT; ++i) acc[i] = hn::Zero(df);
    int64_t k = kb;
    for (; k + L <= ke; k += L) {
      VF xv[MT];
      for (int m = 0; m < MT; ++m) xv[m] = hn::LoadU(df, x[m] + k);
      for (int r = 0; r < R; ++r) {
        const VF wv = W::Load(w[r] + k);
        for (int m = 0; m < MT; ++m) acc[r * MT + m] = hn::MulAdd(wv, xv[m], acc[r * MT + m]);
      }
    }
    float tail[R * MT];
    for (int i = 0; i < R * MT; ++i) tail[i] = 0.0f;
    for (; k < ke; ++k)
      for (int r = 0; r < R; ++r) {
        const float wv = W::One(w[r][k]);
        for (int m = 0; m < MT; ++m) tail[r * MT + m] += wv * x[m][k];
      }
    if constexpr (kBlock) {
      const float* srow = a.scale + ((n0) / kScaleBlock) * a.scale_ld + kb / kScaleBlock;
      for (int r = 0; r < R; ++r) {
        // Rows of a tile may straddle a 128-row block boundary.
        const float s = (n0 + r) / kScaleBlock == n0 / kScaleBlock ? srow[0]
                                                                     : srow[a.scale_ld];
        for (int m = 0; m < MT; ++m) {
          tot[r * MT + m] = hn::MulAdd(acc[r * MT + m], hn::Set(df, s), tot[r * MT + m]);
          stot[r * MT + m] += tail[r * MT + m] * s;
        }
      }
    } else {
      for (int i = 0; i < R * MT; ++i) {
        tot[i] = acc[i];
        stot[i] = tail[i];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const float mult = W::kMult * (kBlock ? 1.0f : row_scale(a, n0 + r));
    const float b = a.bias ? a.bias[n0 + r] : 0.0f;
    for (int m = 0; m < MT; ++m) {
      const float sum = hn::GetLane(hn::SumOfLanes(df, tot[r * MT + m])) + stot[r * MT + m];
      store_out(a, m0 + m, n0 + r, sum * mult + b);
    }
  }
}

// All M rows for weight rows [n0, n0 + R): activation rows in tiles of MT.
template <class W, int R, int MT, bool kBlock>
HWY_INLINE void RowGroup(const GemvArgs& a, int64_t n0) {
  int64_t m = 0;
  for (; m + MT <= a.M; m += MT) Tile<W, R, MT, kBlock>(a, n0, m);
  if constexpr (MT > 1) {
    for (; m < a.M; ++m) Tile<W, R, 1, kBlock>(a, n0, m);
  }
}

template <class W, int R, int MT, bool kBlock>
HWY_INLINE void RowsFixed(const GemvArgs& a, int64_t n0, int64_t n1) {
  int64_t n = n0;
  for (; n + R <= n1; n += R) RowGroup<W, R, MT, kBlock>(a, n);
  for (; n < n1; ++n) RowGroup<W, 1, MT, kBlock>(a, n);
}

// R * MT accumulators (and as many running totals for block scales) must fit
// the 16 vector registers of AVX2 beside the loaded vectors.
template <class W>
void Rows(const GemvArgs& a, int64_t n0, int64_t n1) {
  if (a.scale_kind == ScaleKind::Block) {
    if (a.M == 1) return RowsFixed<W, 4, 1, true>(a, n0, n1);
    if (a.M == 2) return RowsFixed<W, 2, 2, true>(a, n0, n1);
    return RowsFixed<W, 1, 4, true>(a, n0, n1);
  }
  if (a.M == 1) return RowsFixed<W, 8, 1, false>(a, n0, n1);
  if (a.M == 2) return RowsFixed<W, 4, 2, false>(a, n0, n1);
  if (a.M == 3) return RowsFixed<W, 2, 3, false>(a, n0, n1);
  return RowsFixed<W, 2, 4, false>(a, n0, n1);
}

}  // namespace gemv
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_GEMV_INL_H_
