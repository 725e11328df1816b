// Contiguous float32 / bfloat16 / float16 add, sub, mul, div, compiled for every Highway
// target and chosen at run time. Outputs may alias an input exactly (in-place),
// so no pointer is declared restrict.
#include "cpu/binary.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/binary.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

template <int OP, class V>
HWY_INLINE V Apply(V a, V b) {
  if constexpr (OP == 0) return hn::Add(a, b);
  else if constexpr (OP == 1) return hn::Sub(a, b);
  else if constexpr (OP == 2) return hn::Mul(a, b);
  else return hn::Div(a, b);
}
template <int OP>
HWY_INLINE float ApplyScalar(float a, float b) {
  if constexpr (OP == 0) return a + b;
  else if constexpr (OP == 1) return a - b;
  else if constexpr (OP == 2) return a * b;
  else return a / b;
}

// bfloat16 bits -> float32: the 16 bits become the high half.
HWY_INLINE VF LoadBF16(DF df, const uint16_t* p) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::Rebind<uint16_t, DF> du16;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
}
// float32 -> bfloat16 bits, round to nearest even; NaN -> sign | 0x7FC0 (as
// float_to_bf16_bits).
HWY_INLINE void StoreBF16(DF df, VF v, uint16_t* p) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> du16;
  const auto u = hn::BitCast(du32, v);
  const auto hi = hn::ShiftRight<16>(u);
  const auto lsb = hn::And(hi, hn::Set(du32, 1u));
  auto r = hn::ShiftRight<16>(hn::Add(u, hn::Add(hn::Set(du32, 0x7FFFu), lsb)));
  const auto nan_bits = hn::Or(hn::And(hi, hn::Set(du32, 0x8000u)), hn::Set(du32, 0x7FC0u));
  r = hn::IfThenElse(hn::RebindMask(du32, hn::Ne(v, v)), nan_bits, r);
  hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, r)), du16, p);
}

// float16 <-> float32 through the hardware conversions (F16C: exact, round to
// nearest even, overflow to inf). Targets without them (SSE4, emulated) take
// the scalar reference path instead: Highway's emulated DemoteTo truncates.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define KILN_SIMD_F16 1
HWY_INLINE VF LoadF16(DF df, const uint16_t* p) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}
HWY_INLINE void StoreF16(DF df, VF v, uint16_t* p) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p));
}
#else
#define KILN_SIMD_F16 0
#endif

template <int OP>
void F32TT(float* out, const float* a, const float* b, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const VF x0 = hn::LoadU(d, a + i), x1 = hn::LoadU(d, a + i + N);
    const VF y0 = hn::LoadU(d, b + i), y1 = hn::LoadU(d, b + i + N);
    hn::StoreU(Apply<OP>(x0, y0), d, out + i);
    hn::StoreU(Apply<OP>(x1, y1), d, out + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(Apply<OP>(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  for (; i < n; ++i) out[i] = ApplyScalar<OP>(a[i], b[i]);
}

template <int OP, bool kScalarFirst>
void F32TS(float* out, const float* a, float s, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vs = hn::Set(d, s);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const VF x = hn::LoadU(d, a + i);
    hn::StoreU(kScalarFirst ? Apply<OP>(vs, x) : Apply<OP>(x, vs), d, out + i);
  }
  for (; i < n; ++i) out[i] = kScalarFirst ? ApplyScalar<OP>(s, a[i]) : ApplyScalar<OP>(a[i], s);
}

template <int OP>
void BF16TT(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) StoreBF16(d, Apply<OP>(LoadBF16(d, a + i), LoadBF16(d, b + i)), out + i);
  for (; i < n; ++i)
    out[i] = float_to_bf16_bits(ApplyScalar<OP>(bf16_bits_to_float(a[i]), bf16_bits_to_float(b[i])));
}

template <int OP, bool kScalarFirst>
void BF16TS(uint16_t* out, const uint16_t* a, float s, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vs = hn::Set(d, s);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const VF x = LoadBF16(d, a + i);
    StoreBF16(d, kScalarFirst ? Apply<OP>(vs, x) : Apply<OP>(x, vs), out + i);
  }
  for (; i < n; ++i) {
    const float x = bf16_bits_to_float(a[i]);
    out[i] = float_to_bf16_bits(kScalarFirst ? ApplyScalar<OP>(s, x) : ApplyScalar<OP>(x, s));
  }
}

template <int OP>
void F16TT(uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  int64_t i = 0;
#if KILN_SIMD_F16
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  for (; i + N <= n; i += N) StoreF16(d, Apply<OP>(LoadF16(d, a + i), LoadF16(d, b + i)), out + i);
#endif
  for (; i < n; ++i)
    out[i] = float_to_f16_bits(ApplyScalar<OP>(f16_bits_to_float(a[i]), f16_bits_to_float(b[i])));
}

template <int OP, bool kScalarFirst>
void F16TS(uint16_t* out, const uint16_t* a, float s, int64_t n) {
  int64_t i = 0;
#if KILN_SIMD_F16
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vs = hn::Set(d, s);
  for (; i + N <= n; i += N) {
    const VF x = LoadF16(d, a + i);
    StoreF16(d, kScalarFirst ? Apply<OP>(vs, x) : Apply<OP>(x, vs), out + i);
  }
#endif
  for (; i < n; ++i) {
    const float x = f16_bits_to_float(a[i]);
    out[i] = float_to_f16_bits(kScalarFirst ? ApplyScalar<OP>(s, x) : ApplyScalar<OP>(x, s));
  }
}
#undef KILN_SIMD_F16

// Non-template entry points for HWY_EXPORT; `op` is an ArithOp.
void ArithF32(int op, float* out, const float* a, const float* b, int64_t n) {
  switch (op) {
    case 0: return F32TT<0>(out, a, b, n);
    case 1: return F32TT<1>(out, a, b, n);
    case 2: return F32TT<2>(out, a, b, n);
    default: return F32TT<3>(out, a, b, n);
  }
}
void ArithF32S(int op, float* out, const float* a, float s, bool sf, int64_t n) {
  switch (op * 2 + int(sf)) {
    case 0: return F32TS<0, false>(out, a, s, n);
    case 1: return F32TS<0, true>(out, a, s, n);
    case 2: return F32TS<1, false>(out, a, s, n);
    case 3: return F32TS<1, true>(out, a, s, n);
    case 4: return F32TS<2, false>(out, a, s, n);
    case 5: return F32TS<2, true>(out, a, s, n);
    case 6: return F32TS<3, false>(out, a, s, n);
    default: return F32TS<3, true>(out, a, s, n);
  }
}
void ArithBF16(int op, uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  switch (op) {
    case 0: return BF16TT<0>(out, a, b, n);
    case 1: return BF16TT<1>(out, a, b, n);
    case 2: return BF16TT<2>(out, a, b, n);
    default: return BF16TT<3>(out, a, b, n);
  }
}
void ArithBF16S(int op, uint16_t* out, const uint16_t* a, float s, bool sf, int64_t n) {
  switch (op * 2 + int(sf)) {
    case 0: return BF16TS<0, false>(out, a, s, n);
    case 1: return BF16TS<0, true>(out, a, s, n);
    case 2: return BF16TS<1, false>(out, a, s, n);
    case 3: return BF16TS<1, true>(out, a, s, n);
    case 4: return BF16TS<2, false>(out, a, s, n);
    case 5: return BF16TS<2, true>(out, a, s, n);
    case 6: return BF16TS<3, false>(out, a, s, n);
    default: return BF16TS<3, true>(out, a, s, n);
  }
}

void ArithF16(int op, uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  switch (op) {
    case 0: return F16TT<0>(out, a, b, n);
    case 1: return F16TT<1>(out, a, b, n);
    case 2: return F16TT<2>(out, a, b, n);
    default: return F16TT<3>(out, a, b, n);
  }
}
void ArithF16S(int op, uint16_t* out, const uint16_t* a, float s, bool sf, int64_t n) {
  switch (op * 2 + int(sf)) {
    case 0: return F16TS<0, false>(out, a, s, n);
    case 1: return F16TS<0, true>(out, a, s, n);
    case 2: return F16TS<1, false>(out, a, s, n);
    case 3: return F16TS<1, true>(out, a, s, n);
    case 4: return F16TS<2, false>(out, a, s, n);
    case 5: return F16TS<2, true>(out, a, s, n);
    case 6: return F16TS<3, false>(out, a, s, n);
    default: return F16TS<3, true>(out, a, s, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(ArithF32);
HWY_EXPORT(ArithF32S);
HWY_EXPORT(ArithBF16);
HWY_EXPORT(ArithBF16S);
HWY_EXPORT(ArithF16);
HWY_EXPORT(ArithF16S);

void arith_f32(ArithOp op, float* out, const float* a, const float* b, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ArithF32)(int(op), out, a, b, n);
}
void arith_f32_scalar(ArithOp op, float* out, const float* a, float s, bool scalar_first, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ArithF32S)(int(op), out, a, s, scalar_first, n);
}
void arith_bf16(ArithOp op, uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ArithBF16)(int(op), out, a, b, n);
}
void arith_bf16_scalar(ArithOp op, uint16_t* out, const uint16_t* a, float s, bool scalar_first,
                       int64_t n) {
  HWY_DYNAMIC_DISPATCH(ArithBF16S)(int(op), out, a, s, scalar_first, n);
}
void arith_f16(ArithOp op, uint16_t* out, const uint16_t* a, const uint16_t* b, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ArithF16)(int(op), out, a, b, n);
}
void arith_f16_scalar(ArithOp op, uint16_t* out, const uint16_t* a, float s, bool scalar_first,
                      int64_t n) {
  HWY_DYNAMIC_DISPATCH(ArithF16S)(int(op), out, a, s, scalar_first, n);
}
}  // namespace kiln::cpu
#endif
