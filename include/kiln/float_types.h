// Scalar storage types narrower than float32: bfloat16, float16 and the two FP8
// formats, with exact round-to-nearest-even conversions. These are the scalar
// reference every SIMD conversion kernel is tested against.
//
// Conventions (bit-compatible with ml_dtypes for every non-NaN value):
//   - float, double and integer -> narrow round once, to nearest, ties to even,
//     from the exact source value (a double or an int64 never passes through a
//     rounded float32 first); subnormals are exact.
//   - float8_e4m3fn has no infinity: max 448, NaN = S.1111.111. Any value that
//     rounds past 448 (and +-inf) becomes NaN; saturation is the quantizer's job.
//   - float8_e5m2 overflows to +-inf.
//   - NaN stays NaN with its sign: bf16 -> S|0x7FC0, f16 -> S|0x7E00,
//     e4m3fn -> S|0x7F, e5m2 -> S|0x7E.
// Conversions (to, copy_, fill_/full, Scalar, tensor from numbers) round once.
// Ops that compute in float32 round their float32 result: arithmetic with a
// narrow result, and quantize_fp8, which scales w (widened to float32) in float32.
#pragma once

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln {

inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace detail {

// 2^e as a constant expression (std::ldexp is a library call in hot loops).
constexpr double pow2(int e) {
  double r = 1.0;
  for (; e > 0; --e) r *= 2.0;
  for (; e < 0; ++e) r *= 0.5;
  return r;
}

// Encodes |x| (x not NaN) into a binary format with kExp exponent bits and
// kMan mantissa bits, rounding to nearest even. Returns the unsigned code, which
// may exceed the largest finite code when the value overflows (the caller maps
// overflow to inf or NaN). Works for any format with kExp <= 8, kMan <= 22.
template <int kExp, int kMan>
inline uint32_t encode_magnitude(uint32_t abs_bits) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr int kShift = 23 - kMan;
  // Smallest normal of the target, as float32 bits: exponent field 127 + 1 - bias.
  constexpr uint32_t kMinNormalBits = uint32_t(127 + 1 - kBias) << 23;
  if constexpr (kBias != 127) {
    if (abs_bits < kMinNormalBits) {
      // Subnormal in the target: the code is |x| / 2^(1 - bias - kMan) rounded
      // to an integer. With |x| = m * 2^(max(e, 1) - 150) that is m shifted
      // right by `shift` (>= 24 - kMan >= 1), rounded to nearest even like the
      // normal path below. A result of 2^kMan is the smallest normal and
      // encodes correctly as is. Integer-only: no libm call, no FP environment.
      const uint32_t e = abs_bits >> 23;
      const uint32_t m = (abs_bits & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0u);
      const int shift = 150 - int(e != 0 ? e : 1) - (kBias - 1 + kMan);
      if (shift >= 25) return 0;  // m < 2^24 <= 2^(shift - 1): below half the smallest subnormal
      const uint32_t odd = (m >> shift) & 1u;
      return (m + ((1u << (shift - 1)) - 1u) + odd) >> shift;
    }
  }
  // Normal: round the 23-bit mantissa to kMan bits (a carry correctly bumps the
  // exponent), then re-bias the exponent.
  const uint32_t odd = (abs_bits >> kShift) & 1u;
  const uint32_t rounded = (abs_bits + ((1u << (kShift - 1)) - 1u) + odd) >> kShift;
  return rounded - (uint32_t(127 - kBias) << kMan);
}

// Decodes a code of a format with an IEEE-style exponent (all-ones = inf/NaN when
// kHasInf; for e4m3fn only S.1111.111 is NaN) into float32.
template <int kExp, int kMan, bool kHasInf>
inline float decode(uint32_t code) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr uint32_t kExpMask = (1u << kExp) - 1u;
  const uint32_t sign = (code >> (kExp + kMan)) & 1u;
  const uint32_t e = (code >> kMan) & kExpMask;
  const uint32_t m = code & ((1u << kMan) - 1u);
  uint32_t bits;
  if (e == 0) {
    // Subnormal (or zero): m * 2^(1 - bias - kMan), exact in float32.
    constexpr float kScale = float(pow2(1 - kBias - kMan));
    const float v = float(m) * kScale;
    return sign ? -v : v;
  } else if (kHasInf && e == kExpMask) {
    bits = m == 0 ? 0x7F800000u : (0x7F800000u | (m << (23 - kMan)) | 0x00400000u);
  } else if (!kHasInf && e == kExpMask && m == ((1u << kMan) - 1u)) {
    bits = 0x7FC00000u;
  } else {
    bits = ((e + 127 - kBias) << 23) | (m << (23 - kMan));
  }
  return bits_to_f32(bits | (sign << 31));
}

// Rounds the exact magnitude m * 2^e (any m < 2^64, any e) once to nearest
// even in a format with kExp exponent and kMan mantissa bits, subnormals
// included. Returns the unsigned code, which like encode_magnitude runs past
// the largest finite code on overflow. The code counts quanta of the binade the
// value lies in (the lowest normal one for subnormals) plus kMan codes per
// binade above the lowest, so a carry out of the mantissa bumps the exponent.
template <int kExp, int kMan>
inline uint32_t round_magnitude(uint64_t m, int e) {
  if (m == 0) return 0;
  constexpr int kMinExp = 2 - (1 << (kExp - 1));   // exponent of the smallest normal: 1 - bias
  const int top = int(std::bit_width(m)) - 1 + e;  // m * 2^e lies in [2^top, 2^(top + 1))
  const int exp = top > kMinExp ? top : kMinExp;
  const int shift = exp - kMan - e;  // the code is m / 2^shift, rounded
  uint64_t n;
  if (shift <= 0) {
    n = m << -shift;  // exact, at most 2^(kMan + 1)
  } else if (shift > 64) {
    n = 0;  // m < 2^64 < 2^(shift - 1): below half a quantum
  } else {
    const uint64_t kept = shift < 64 ? m >> shift : 0;
    const uint64_t rest = shift < 64 ? m & ((uint64_t(1) << shift) - 1) : m;
    const uint64_t half = uint64_t(1) << (shift - 1);
    n = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
  }
  return uint32_t(n) + (uint32_t(exp - kMinExp) << kMan);
}

// The four formats for round_to_format: field widths, the largest finite
// magnitude code, the code a value past it takes (inf, or NaN for e4m3fn) and
// the canonical NaN.
template <typename B, int E, int M, uint32_t MaxFinite, uint32_t Overflow, uint32_t NaN>
struct Format {
  using Bits = B;
  static constexpr int kExp = E, kMan = M;
  static constexpr uint32_t kMaxFinite = MaxFinite, kOverflow = Overflow, kNaN = NaN;
  static constexpr uint32_t kSign = uint32_t(1) << (E + M);
};
using BF16Format = Format<uint16_t, 8, 7, 0x7F7F, 0x7F80, 0x7FC0>;
using F16Format = Format<uint16_t, 5, 10, 0x7BFF, 0x7C00, 0x7E00>;
using E4M3FNFormat = Format<uint8_t, 4, 3, 0x7E, 0x7F, 0x7F>;
using E5M2Format = Format<uint8_t, 5, 2, 0x7B, 0x7C, 0x7E>;

// The code of the exact value (-1)^neg * m * 2^e, rounded once.
template <class F>
inline typename F::Bits round_to_format(bool neg, uint64_t m, int e) {
  uint32_t code = round_magnitude<F::kExp, F::kMan>(m, e);
  if (code > F::kMaxFinite) code = F::kOverflow;
  return typename F::Bits(code | (neg ? F::kSign : 0u));
}

// double -> code, rounded once from the double's own 53-bit significand (a
// float32 intermediate would round twice: 1.0625 + 2^-40 is 1.125 in e4m3fn,
// but in float32 it is 1.0625, a tie that goes to 1.0).
template <class F>
inline typename F::Bits round_to_format(double d) {
  const uint64_t u = std::bit_cast<uint64_t>(d);
  const bool neg = (u >> 63) != 0;
  const uint32_t e = uint32_t(u >> 52) & 0x7FFu;
  const uint64_t frac = u & ((uint64_t(1) << 52) - 1);
  if (e == 0x7FF) return typename F::Bits((frac != 0 ? F::kNaN : F::kOverflow) | (neg ? F::kSign : 0u));
  return round_to_format<F>(neg, e != 0 ? frac | (uint64_t(1) << 52) : frac, int(e != 0 ? e : 1) - 1075);
}

// Integer -> code, rounded once from the exact integer (not via a double,
// which rounds integers past 2^53 itself).
template <class F, typename I>
inline typename F::Bits round_int_to_format(I v) {
  static_assert(std::is_integral_v<I> && sizeof(I) <= 8);
  if constexpr (std::is_signed_v<I>) {
    if (v < 0) return round_to_format<F>(true, uint64_t(0) - uint64_t(v), 0);
  }
  return round_to_format<F>(false, uint64_t(v), 0);
}

}  // namespace detail

inline uint16_t double_to_bf16_bits(double d) { return detail::round_to_format<detail::BF16Format>(d); }
inline uint16_t double_to_f16_bits(double d) { return detail::round_to_format<detail::F16Format>(d); }
inline uint8_t double_to_e4m3fn_bits(double d) { return detail::round_to_format<detail::E4M3FNFormat>(d); }
inline uint8_t double_to_e5m2_bits(double d) { return detail::round_to_format<detail::E5M2Format>(d); }

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint16_t(sign | 0x7FC0u);
  return uint16_t(sign | detail::encode_magnitude<8, 7>(abs));
}
inline float bf16_bits_to_float(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

inline uint16_t float_to_f16_bits(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00u);
  if (abs >= 0x47800000u) return uint16_t(sign | 0x7C00u);  // >= 65536: inf either way
  uint32_t code = detail::encode_magnitude<5, 10>(abs);
  if (code > 0x7C00u) code = 0x7C00u;
  return uint16_t(sign | code);
}
inline float f16_bits_to_float(uint16_t h) { return detail::decode<5, 10, true>(h); }

inline uint8_t float_to_e4m3fn_bits(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x43E80000u) return uint8_t(sign | 0x7Fu);  // > 464 rounds past 448; inf, NaN
  return uint8_t(sign | detail::encode_magnitude<4, 3>(abs));
}
inline float e4m3fn_bits_to_float(uint8_t b) { return detail::decode<4, 3, false>(b); }

inline uint8_t float_to_e5m2_bits(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint8_t(sign | 0x7Eu);
  if (abs >= 0x47800000u) return uint8_t(sign | 0x7Cu);  // >= 65536: inf
  uint32_t code = detail::encode_magnitude<5, 2>(abs);
  if (code > 0x7Cu) code = 0x7Cu;
  return uint8_t(sign | code);
}
inline float e5m2_bits_to_float(uint8_t b) { return detail::decode<5, 2, true>(b); }

// The storage types. Each converts implicitly to float (so generic kernels can
// compute in float) and explicitly from float, double and integers, rounding
// once from the exact source value.
#define KILN_NARROW_FLOAT(Name, Bits, Enc, Dec, Fmt)                                                    \
  struct Name {                                                                                         \
    Bits bits;                                                                                          \
    Name() = default;                                                                                   \
    explicit Name(float f) : bits(Enc(f)) {}                                                            \
    explicit Name(double d) : bits(detail::round_to_format<detail::Fmt>(d)) {}                          \
    template <typename I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0> \
    explicit Name(I v) : bits(detail::round_int_to_format<detail::Fmt>(v)) {}                           \
    static Name from_bits(Bits b) {                                                                     \
      Name r;                                                                                           \
      r.bits = b;                                                                                       \
      return r;                                                                                         \
    }                                                                                                   \
    operator float() const { return Dec(bits); }                                                        \
  };                                                                                                    \
  static_assert(sizeof(Name) == sizeof(Bits))

KILN_NARROW_FLOAT(bfloat16, uint16_t, float_to_bf16_bits, bf16_bits_to_float, BF16Format);
KILN_NARROW_FLOAT(half, uint16_t, float_to_f16_bits, f16_bits_to_float, F16Format);
KILN_NARROW_FLOAT(float8_e4m3fn, uint8_t, float_to_e4m3fn_bits, e4m3fn_bits_to_float, E4M3FNFormat);
KILN_NARROW_FLOAT(float8_e5m2, uint8_t, float_to_e5m2_bits, e5m2_bits_to_float, E5M2Format);
#undef KILN_NARROW_FLOAT

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

}  // namespace kiln
