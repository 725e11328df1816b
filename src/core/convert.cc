// Contiguous conversions among float32, float64 and the narrow floats (bfloat16,
// float16, float8_e4m3fn, float8_e5m2), dispatched to the best SIMD target at
// run time and bit-identical to the scalar reference in kiln/float_types.h.
//
// Every pair goes through float32 in registers, so a pair is one decode into a
// small f32 block plus one encode of that block. Narrow -> narrow is exact that
// way (narrow values are exact in f32). f64 -> narrow must round once: the f64
// is first rounded to odd in f32 (truncated, lowest bit set when inexact), which
// keeps every tie and every side of a tie of the narrow format (f32 has at least
// 2 more significant bits than each, in every range), so the f32 encoder then
// rounds as the double itself would.
//
// The encoders are integer formulations of the reference: round to nearest
// even by adding (half - 1) + the lowest kept bit and shifting; target
// subnormals by scaling by a power of two in float and rounding to an integer
// (both exact). The decoders rebias the exponent with an integer add and build
// subnormals as m * 2^k from an exact int -> float conversion, which also
// avoids float32 denormal operands (slow microcode assists on x86).
#include "core/convert.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/convert.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

// ---- float32 -> narrow: codes in int32 lanes -------------------------------

// |x| bits (not NaN) -> code of a format with kExp exponent and kMan mantissa
// bits, rounded to nearest even; like detail::encode_magnitude, the code may
// run past the largest finite one on overflow (callers select inf / NaN).
template <int kExp, int kMan>
HWY_INLINE VI EncodeMagnitude(VI abs) {
  const DF df;
  const DI di;
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr int kShift = 23 - kMan;
  constexpr int32_t kMinNormalBits = int32_t(127 + 1 - kBias) << 23;
  // Normal: round the mantissa to kMan bits (a carry bumps the exponent), rebias.
  const VI odd = hn::And(hn::ShiftRight<kShift>(abs), hn::Set(di, 1));
  const VI bias = hn::Add(hn::Set(di, (1 << (kShift - 1)) - 1), odd);
  const VI normal = hn::Sub(hn::ShiftRight<kShift>(hn::Add(abs, bias)), hn::Set(di, (127 - kBias) << kMan));
  // Subnormal: |x| * 2^(bias - 1 + kMan) rounded to an integer (ties to even).
  // float32 denormals all round to code 0; lifting them to the smallest normal
  // keeps that result and keeps denormal operands out of the multiply.
  const VF lifted = hn::BitCast(df, hn::Max(abs, hn::Set(di, 0x00800000)));
  const VI sub = hn::NearestInt(hn::Mul(lifted, hn::Set(df, float(1 << (kBias - 1 + kMan)))));
  return hn::IfThenElse(hn::Lt(abs, hn::Set(di, kMinNormalBits)), sub, normal);
}

HWY_INLINE VI EncodeBF16(VF v) {
  const DI di;
  const VI u = hn::BitCast(di, v);
  const VI sign = hn::And(hn::ShiftRight<16>(u), hn::Set(di, 0x8000));
  const VI abs = hn::And(u, hn::Set(di, 0x7FFFFFFF));
  // Same exponent range as float32: rounding the mantissa covers subnormals,
  // overflow to inf and inf itself.
  const VI odd = hn::And(hn::ShiftRight<16>(abs), hn::Set(di, 1));
  const VI code = hn::ShiftRight<16>(hn::Add(abs, hn::Add(hn::Set(di, 0x7FFF), odd)));
  const auto is_nan = hn::Gt(abs, hn::Set(di, 0x7F800000));
  return hn::Or(sign, hn::IfThenElse(is_nan, hn::Set(di, 0x7FC0), code));
}

HWY_INLINE VI EncodeF16(VF v) {
  const DI di;
  const VI u = hn::BitCast(di, v);
  const VI sign = hn::And(hn::ShiftRight<16>(u), hn::Set(di, 0x8000));
  const VI abs = hn::And(u, hn::Set(di, 0x7FFFFFFF));
  VI code = EncodeMagnitude<5, 10>(abs);
  code = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x477FFFFF)), hn::Set(di, 0x7C00), code);  // >= 65536
  code = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7F800000)), hn::Set(di, 0x7E00), code);  // NaN
  return hn::Or(sign, code);
}

HWY_INLINE VI EncodeE4M3FN(VF v) {
  const DI di;
  const VI u = hn::BitCast(di, v);
  const VI sign = hn::And(hn::ShiftRight<24>(u), hn::Set(di, 0x80));
  const VI abs = hn::And(u, hn::Set(di, 0x7FFFFFFF));
  const VI code = EncodeMagnitude<4, 3>(abs);
  // Past 464 rounds beyond 448: NaN, as are inf and NaN.
  return hn::Or(sign, hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x43E80000)), hn::Set(di, 0x7F), code));
}

HWY_INLINE VI EncodeE5M2(VF v) {
  const DI di;
  const VI u = hn::BitCast(di, v);
  const VI sign = hn::And(hn::ShiftRight<24>(u), hn::Set(di, 0x80));
  const VI abs = hn::And(u, hn::Set(di, 0x7FFFFFFF));
  VI code = EncodeMagnitude<5, 2>(abs);  // [61440, 65536) already rounds to inf
  code = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x477FFFFF)), hn::Set(di, 0x7C), code);
  code = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7F800000)), hn::Set(di, 0x7E), code);
  return hn::Or(sign, code);
}

// ---- narrow -> float32 ----------------------------------------------------

// Code (in int32 lanes) of a format with an IEEE-style exponent -> float32.
// kHasInf: all-ones exponent is inf/NaN (NaN made quiet, payload kept);
// otherwise (e4m3fn) only S.1111.111 is NaN.
template <int kExp, int kMan, bool kHasInf>
HWY_INLINE VF Decode(VI code) {
  const DF df;
  const DI di;
  constexpr int kBits = kExp + kMan;
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr int32_t kInfCode = ((1 << kExp) - 1) << kMan;
  const VI mag = hn::And(code, hn::Set(di, (1 << kBits) - 1));
  const VI sign = hn::ShiftLeft<31 - kBits>(hn::And(code, hn::Set(di, 1 << kBits)));
  const VI shifted = hn::ShiftLeft<23 - kMan>(mag);
  const VI normal = hn::Add(shifted, hn::Set(di, (127 - kBias) << 23));
  const VF sub = hn::Mul(hn::ConvertTo(df, mag), hn::Set(df, 1.0f / float(1 << (kBias - 1 + kMan))));
  VI r = hn::IfThenElse(hn::Lt(mag, hn::Set(di, 1 << kMan)), hn::BitCast(di, sub), normal);
  if constexpr (kHasInf) {
    const VI quiet = hn::IfThenElseZero(hn::Gt(mag, hn::Set(di, kInfCode)), hn::Set(di, 0x00400000));
    const VI special = hn::Or(hn::Or(shifted, hn::Set(di, 0x7F800000)), quiet);
    r = hn::IfThenElse(hn::Gt(mag, hn::Set(di, kInfCode - 1)), special, r);
  } else {
    r = hn::IfThenElse(hn::Eq(mag, hn::Set(di, (1 << kBits) - 1)), hn::Set(di, 0x7FC00000), r);
  }
  return hn::BitCast(df, hn::Or(r, sign));
}

// ---- per-format load / store of one f32 vector's worth ------------------------

// Format tags: the storage type, vector Store (encode N floats to N codes) and
// Load (N codes to N floats), and the scalar reference for array tails.
template <class Derived, typename BitsT>
struct IntCodec {
  using Bits = BitsT;
  static void Store(VF v, Bits* HWY_RESTRICT p) {
    const hn::Rebind<Bits, DF> dn;
    hn::StoreU(hn::DemoteTo(dn, Derived::Encode(v)), dn, p);
  }
  static VF Load(const Bits* HWY_RESTRICT p) {
    const hn::Rebind<Bits, DF> dn;
    return Derived::Decode(hn::PromoteTo(DI(), hn::LoadU(dn, p)));
  }
};
struct BF16Fmt : IntCodec<BF16Fmt, uint16_t> {
  static VI Encode(VF v) { return EncodeBF16(v); }
  static VF Decode(VI c) { return hn::BitCast(DF(), hn::ShiftLeft<16>(c)); }
  static Bits EncodeOne(float f) { return float_to_bf16_bits(f); }
  static float DecodeOne(Bits b) { return bf16_bits_to_float(b); }
};
struct F16Fmt : IntCodec<F16Fmt, uint16_t> {
  static VI Encode(VF v) { return EncodeF16(v); }
  static VF Decode(VI c) { return HWY_NAMESPACE::Decode<5, 10, true>(c); }
  static Bits EncodeOne(float f) { return float_to_f16_bits(f); }
  static float DecodeOne(Bits b) { return f16_bits_to_float(b); }
#if HWY_ARCH_X86 && HWY_TARGET < HWY_SSE4 && !defined(HWY_DISABLE_F16C)
  // AVX2 / AVX-512 have F16C: vcvtps2ph with an immediate round-to-nearest-even
  // (Highway passes _MM_FROUND_NO_EXC) gives the reference's bits for every
  // non-NaN input, subnormals and overflow included; NaN keeps part of its
  // payload, so NaN lanes are first replaced by the sign-preserving quiet NaN,
  // which converts to S|0x7E00. vcvtph2ps quiets NaN keeping the payload,
  // exactly as the reference decoder does.
  static void Store(VF v, Bits* HWY_RESTRICT p) {
    const DI di;
    const hn::Rebind<hwy::float16_t, DF> dh;
    const hn::RebindToUnsigned<decltype(dh)> du16;
    const VI sign = hn::And(hn::BitCast(di, v), hn::Set(di, int32_t(0x80000000u)));
    const VF qnan = hn::BitCast(DF(), hn::Or(sign, hn::Set(di, 0x7FC00000)));
    hn::StoreU(hn::BitCast(du16, hn::DemoteTo(dh, hn::IfThenElse(hn::IsNaN(v), qnan, v))), du16, p);
  }
  static VF Load(const Bits* HWY_RESTRICT p) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    const hn::RebindToUnsigned<decltype(dh)> du16;
    return hn::PromoteTo(DF(), hn::BitCast(dh, hn::LoadU(du16, p)));
  }
#endif
};
struct E4M3Fmt : IntCodec<E4M3Fmt, uint8_t> {
  static VI Encode(VF v) { return EncodeE4M3FN(v); }
  static VF Decode(VI c) { return HWY_NAMESPACE::Decode<4, 3, false>(c); }
  static Bits EncodeOne(float f) { return float_to_e4m3fn_bits(f); }
  static float DecodeOne(Bits b) { return e4m3fn_bits_to_float(b); }
};
struct E5M2Fmt : IntCodec<E5M2Fmt, uint8_t> {
  static VI Encode(VF v) { return EncodeE5M2(v); }
  static VF Decode(VI c) { return HWY_NAMESPACE::Decode<5, 2, true>(c); }
  static Bits EncodeOne(float f) { return float_to_e5m2_bits(f); }
  static float DecodeOne(Bits b) { return e5m2_bits_to_float(b); }
};

// Values ahead of the loads that the conversion loops prefetch. One core keeps
// too few cache lines in flight for the memory bus otherwise: the encoders hold
// a dozen instructions per line waiting on its load (f32 -> bf16 of 64M values on
// one AVX-512 core: 65 ms without, 29 ms with; f16's one-instruction encode ran
// at 34 ms already).
constexpr int64_t kAhead = 512;

// src: [n] float32 -> dst: [n] codes of Fmt.
template <class Fmt>
void EncodeArray(const float* HWY_RESTRICT src, typename Fmt::Bits* HWY_RESTRICT dst, int64_t n) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    __builtin_prefetch(src + i + kAhead);
    __builtin_prefetch(src + i + kAhead + N);
    const VF v0 = hn::LoadU(df, src + i);
    const VF v1 = hn::LoadU(df, src + i + N);
    Fmt::Store(v0, dst + i);
    Fmt::Store(v1, dst + i + N);
  }
  for (; i + N <= n; i += N) Fmt::Store(hn::LoadU(df, src + i), dst + i);
  for (; i < n; ++i) dst[i] = Fmt::EncodeOne(src[i]);
}

// src: [n] codes of Fmt -> dst: [n] float32.
template <class Fmt>
void DecodeArray(const typename Fmt::Bits* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  const DF df;
  const int64_t N = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    __builtin_prefetch(src + i + kAhead);  // one line holds 64 codes or more
    const VF f0 = Fmt::Load(src + i);
    const VF f1 = Fmt::Load(src + i + N);
    hn::StoreU(f0, df, dst + i);
    hn::StoreU(f1, df, dst + i + N);
  }
  for (; i + N <= n; i += N) hn::StoreU(Fmt::Load(src + i), df, dst + i);
  for (; i < n; ++i) dst[i] = Fmt::DecodeOne(src[i]);
}

void F64ToF32(const double* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = int64_t(hn::Lanes(dd));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::DemoteTo(df, hn::LoadU(dd, src + i)), df, dst + i);
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// [n] float64 -> float32 rounded to odd, for a second rounding to a narrow
// format. RNE, then, where inexact: one step toward zero if RNE went away from
// zero (a magnitude in bits), and the lowest bit set. Overflow lands on FLT_MAX
// (odd, rounds to the narrow overflow code); NaN and inf pass through.
void F64ToF32Odd(const double* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::Rebind<int32_t, decltype(dd)> di;
  const int64_t N = int64_t(hn::Lanes(dd));
  const auto one = hn::Set(dd, 1.0);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(dd, src + i);
    const auto r = hn::DemoteTo(df, v);
    const auto back = hn::Abs(hn::PromoteTo(dd, r)), av = hn::Abs(v);
    const auto away = hn::Gt(back, av);
    const auto inexact = hn::Or(away, hn::Lt(back, av));  // false for NaN
    // 0 / 1 per lane as int32 (Highway 1.0 demotes f64 -> i32, not i64 -> i32).
    const auto down = hn::DemoteTo(di, hn::IfThenElseZero(away, one));
    const auto odd = hn::DemoteTo(di, hn::IfThenElseZero(inexact, one));
    hn::StoreU(hn::BitCast(df, hn::Or(hn::Sub(hn::BitCast(di, r), down), odd)), df, dst + i);
  }
  for (; i < n; ++i) {
    const float r = static_cast<float>(src[i]);
    const double back = std::fabs(double(r)), av = std::fabs(src[i]);
    const uint32_t bits = f32_to_bits(r) - (back > av ? 1u : 0u);
    dst[i] = bits_to_f32(bits | (back != av && !std::isnan(av) ? 1u : 0u));
  }
}

void F32ToF64(const float* HWY_RESTRICT src, double* HWY_RESTRICT dst, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = int64_t(hn::Lanes(dd));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::PromoteTo(dd, hn::LoadU(df, src + i)), dd, dst + i);
  for (; i < n; ++i) dst[i] = static_cast<double>(src[i]);
}

// [n] elements of `from` -> float32. from != Float32; the caller checked support.
void ToF32(const void* src, DType from, float* dst, int64_t n) {
  switch (from) {
    case DType::BFloat16: return DecodeArray<BF16Fmt>(static_cast<const uint16_t*>(src), dst, n);
    case DType::Float16: return DecodeArray<F16Fmt>(static_cast<const uint16_t*>(src), dst, n);
    case DType::Float8_e4m3fn: return DecodeArray<E4M3Fmt>(static_cast<const uint8_t*>(src), dst, n);
    case DType::Float8_e5m2: return DecodeArray<E5M2Fmt>(static_cast<const uint8_t*>(src), dst, n);
    case DType::Float64: return F64ToF32(static_cast<const double*>(src), dst, n);
    default: return;
  }
}

// [n] float32 -> elements of `to`. to != Float32; the caller checked support.
void FromF32(const float* src, void* dst, DType to, int64_t n) {
  switch (to) {
    case DType::BFloat16: return EncodeArray<BF16Fmt>(src, static_cast<uint16_t*>(dst), n);
    case DType::Float16: return EncodeArray<F16Fmt>(src, static_cast<uint16_t*>(dst), n);
    case DType::Float8_e4m3fn: return EncodeArray<E4M3Fmt>(src, static_cast<uint8_t*>(dst), n);
    case DType::Float8_e5m2: return EncodeArray<E5M2Fmt>(src, static_cast<uint8_t*>(dst), n);
    case DType::Float64: return F32ToF64(src, static_cast<double*>(dst), n);
    default: return;
  }
}

// [n] `from` -> [n] `to`, through float32 (directly when one side is float32,
// else in blocks that stay in L1; f64 rounded to odd on the way to a narrow type).
void ConvertRange(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == DType::Float32) return FromF32(static_cast<const float*>(src), dst, to, n);
  if (to == DType::Float32) return ToF32(src, from, static_cast<float*>(dst), n);
  constexpr int64_t kBlock = 2048;
  HWY_ALIGN float buf[kBlock];
  const size_t in_size = itemsize(from), out_size = itemsize(to);
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = n - b < kBlock ? n - b : kBlock;
    const char* in = static_cast<const char*>(src) + b * in_size;
    if (from == DType::Float64)
      F64ToF32Odd(reinterpret_cast<const double*>(in), buf, len);
    else
      ToF32(in, from, buf, len);
    FromF32(buf, static_cast<char*>(dst) + b * out_size, to, len);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
namespace kiln {
HWY_EXPORT(ConvertRange);

namespace {
bool has_kernel(DType d) {
  switch (d) {
    case DType::Float32:
    case DType::Float64:
    case DType::BFloat16:
    case DType::Float16:
    case DType::Float8_e4m3fn:
    case DType::Float8_e5m2: return true;
    default: return false;
  }
}
}  // namespace

bool convert_contiguous(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to || !has_kernel(from) || !has_kernel(to)) return false;
  const size_t in_size = itemsize(from), out_size = itemsize(to);
  // Chunks of >= 64K elements: large enough to amortize the hand-off, and the
  // whole array is split so each thread streams one contiguous range.
  parallel_for(0, n, int64_t(1) << 16, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(ConvertRange)(static_cast<const char*>(src) + b * in_size, from,
                                       static_cast<char*>(dst) + b * out_size, to, e - b);
  });
  return true;
}

namespace {
// KILN_SIMD_TARGET=AVX2 (or SSE4, EMU128, AVX3, ...) caps run-time dispatch at
// that target, so every code path can be exercised, and a suspected SIMD bug
// bisected, on one machine. Unknown names are ignored with a warning.
int64_t restrict_targets_from_env() {
  const char* want = std::getenv("KILN_SIMD_TARGET");
  if (want == nullptr || *want == 0) return 0;
  const int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
  for (int64_t rest = supported; rest != 0; rest &= rest - 1) {
    const int64_t t = rest & -rest;  // best first: lower bits are better targets
    if (std::strcmp(hwy::TargetName(t), want) == 0) {
      // Keep t and every lesser target (higher bits).
      hwy::SetSupportedTargetsForTest(supported & ~(t - 1));
      return t;
    }
  }
  std::fprintf(stderr, "kiln: KILN_SIMD_TARGET=%s is not a supported target here; ignored\n", want);
  return 0;
}
const int64_t g_env_target = restrict_targets_from_env();
}  // namespace

// Here, not in a kernel family of its own: this unit is always linked (copy_
// uses it), so KILN_SIMD_TARGET above takes effect in every program.
const char* sys::simd_target_name() {
  // The best target that is both compiled in and supported (and allowed).
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(targets & -targets);
}
}  // namespace kiln
#endif
