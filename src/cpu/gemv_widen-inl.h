// The widening loaders of the matrix-vector and packed GEMM kernels
// (gemv-inl.h, gemm_packed.cc): each turns a step of bf16, f16 or FP8 weights
// into f32 vectors in registers. Compiled once per Highway target.
//
// Widening (the bottleneck on few cores, not the FMA):
//   bf16  -> f32: a u32 lane holds two weights: shift left 16 / mask the low half;
//   f16   -> f32: vcvtph2ps (F16C);
//   e5m2  -> f16 bits: the byte in the top of a u16 (exact, inf/NaN included),
//            then vcvtph2ps;
//   e4m3fn-> f16 bits: the byte moved so its 4-bit exponent and 3-bit mantissa
//            sit in f16's fields; that f16 is the value times 2^-8 exactly,
//            subnormals included, and the 2^8 is folded into the row scale.
//            S.1111.111 (NaN) reads as 480: HasNanCode.
// The bf16 and FP8 loaders widen two / four vectors at once with no lane
// shuffles; the activations are permuted once per call to match.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_GEMV_WIDEN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_GEMV_WIDEN_INL_H_
#undef KILN_CPU_GEMV_WIDEN_INL_H_
#else
#define KILN_CPU_GEMV_WIDEN_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

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

// v as a double, exactly, even under DAZ (which reads a denormal float as
// zero in every conversion too): a denormal is built from its integer bits.
HWY_INLINE double ExactDouble(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7F800000u) != 0) return double(v);
  const double m = double(int32_t(u & 0x007FFFFFu)) * 0x1p-149;
  return (u >> 31) ? -m : m;
}

#undef KILN_GEMV_E4M3_TINY  // set per target: this file is read once per target
#undef KILN_GEMV_E4M3_TINY_TEST
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define KILN_GEMV_E4M3_TINY 1
// e4m3fn straight to float32 bits with integer ops only, where the f16 route's
// vcvtph2ps is the bottleneck: on AVX-512 (two uops per 16 weights, on the
// ports the shifts and FMAs need) it was compute-bound near 12 GB/s per core;
// on AVX2 (Zen 3) near 9 GB/s per core. S.EEEE.MMM becomes
// S.0000EEEE.MMM0...0: a "tiny" float equal to the weight times 2^-120, exact
// for normal codes (E >= 1) and zero. The activations are scaled by 2^k per row
// (PermuteScaleX) so tiny * x' stays normal; the sums are scaled back once per
// row. Subnormal codes (E = 0, M != 0) become float32 denormals, exact as they
// are where FMAs take denormals at full speed (AMD: cpu::E4M3Subnormals::Fma);
// elsewhere they cost ~70x per FMA (Intel), see WidenE4M3Tiny.
// Lanes come out as weights 4i+0, 4i+1, 4i+2, 4i+3 of lane i (x permuted to match).
struct WidenE4M3TinyFma {
  using T = float8_e4m3fn;
  static constexpr int kChunk = 4;
  static constexpr float kMult = 1.0f;
  static constexpr bool kTestSubnormals = false;
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* out) {
    const hn::Repartition<int16_t, DF> d16;
    Widen(hn::LoadU(d16, reinterpret_cast<const int16_t*>(p)), out);
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
// The tiny loader for cores where denormal FMAs are slow, over a weight whose
// subnormal codes the caller listed (GemvArgs::sub_row_start): Rows runs it
// with MXCSR.DAZ set, so the FMAs read those codes' denormals as zero at full
// speed, and Tile adds their terms from the list. No per-step test, which
// also lets AVX2 keep the tiny route.
struct WidenE4M3TinyListed : WidenE4M3TinyFma {};
// Denormal float inputs read as zero (MXCSR.DAZ) while it lives, on this thread.
class DenormalsAreZero {
 public:
  DenormalsAreZero() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x0040u); }
  ~DenormalsAreZero() { _mm_setcsr(saved_); }
  DenormalsAreZero(const DenormalsAreZero&) = delete;
  DenormalsAreZero& operator=(const DenormalsAreZero&) = delete;

 private:
  unsigned saved_;
};
#if HWY_TARGET <= HWY_AVX3
#define KILN_GEMV_E4M3_TINY_TEST 1
// The tiny loader for cores where denormal FMAs are slow (Intel): a 4L-byte
// step that holds a subnormal code (rare: ~2e-5 of real model weights) is
// detected with AVX-512 mask tests and done exactly in scalar instead.
// (AVX2 has no such cheap test; there the Test mode takes the f16 route.)
struct WidenE4M3Tiny : WidenE4M3TinyFma {
  static constexpr bool kTestSubnormals = true;
  // One bit per byte of the step whose code has E = 0 (zero or subnormal).
  static HWY_INLINE uint64_t ZeroExponents(const T* HWY_RESTRICT p) {
    return _mm512_testn_epi8_mask(_mm512_loadu_si512(p), _mm512_set1_epi8(0x78));
  }
  // One bit per byte of the step that is a subnormal code (E = 0, M != 0).
  static HWY_INLINE uint64_t Subnormals(const T* HWY_RESTRICT p) {
    const __m512i v = _mm512_loadu_si512(p);
    const __mmask64 mant = _mm512_test_epi8_mask(v, _mm512_set1_epi8(0x07));
    return _mm512_mask_testn_epi8_mask(mant, v, _mm512_set1_epi8(0x78));
  }
  // The step with the codes marked in `skip` read as zero.
  static HWY_INLINE void LoadSkipping(const T* HWY_RESTRICT p, uint64_t skip, VF* out) {
    const hn::Repartition<int16_t, DF> d16;
    Widen(hn::Vec<decltype(d16)>{_mm512_maskz_loadu_epi8(~skip, p)}, out);
  }
};
#endif
#endif

// e4m3fn has no infinities: S.1111.111 is NaN, and both vector routes widen
// it to a finite number (480, or 1.875 * 2^-112 for the tiny floats). The
// kernels that use them find those codes per step (2 ops per vector of
// bytes: v | 0x80 is 0xFF exactly for them) and give the row its NaN.
// A loader over weights the caller has scanned for NaN codes and found none
// (GemvArgs::w_no_nan): the kernels skip the per-step test, ~10-20% of an e4m3
// matrix-vector product wherever widening, not memory, is the limit.
struct NanCheckedTag {};
template <class W>
struct NanChecked : W, NanCheckedTag {};
template <class W>
constexpr bool HasNanCode() {
  return std::is_same_v<typename W::T, float8_e4m3fn> && W::kChunk == 4 &&
         !std::is_base_of_v<NanCheckedTag, W>;
}
// Loader B, carrying W's NaN-checked mark (the tiny route's f16 fallback).
template <class W, class B>
using LikeChecked = std::conditional_t<std::is_base_of_v<NanCheckedTag, W>, NanChecked<B>, B>;
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
  return std::is_base_of_v<WidenE4M3TinyFma, W>;
#else
  return false;
#endif
}
// The tiny loader that takes its subnormal codes from a list (DAZ set).
template <class W>
constexpr bool ListsSubnormals() {
#ifdef KILN_GEMV_E4M3_TINY
  return std::is_base_of_v<WidenE4M3TinyListed, W>;
#else
  return false;
#endif
}
// The tiny loader that wants its subnormal codes found per step (Test mode).
template <class W>
constexpr bool TestsSubnormals() {
  if constexpr (IsTiny<W>()) {
    return W::kTestSubnormals;
  } else {
    return false;
  }
}

}  // namespace gemv
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_GEMV_WIDEN_INL_H_
