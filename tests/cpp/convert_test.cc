// Narrow-float conversions: every code of every narrow format decoded and
// checked against an independent double-precision decoder written from the
// format definitions; round trips; the named special values; sampled float32
// encodes on every compiled SIMD target; Tensor::to over layouts; float64 and
// integer sources rounding once, through every path that narrows them.
// (tests/cpp/exhaustive/ covers all 2^32 float32 patterns and a float64 /
// integer sweep around every midpoint.)
#include "core/convert.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cast.h"
#include "kiln/kiln.h"
#include "kiln/sysinfo.h"

using namespace kiln;

namespace {

struct Format {
  const char* name;
  DType dtype;
  int exp_bits, man_bits;
  bool ieee_specials;        // all-ones exponent is inf / NaN; else (e4m3fn) only S.1111.111 is NaN
  uint32_t canonical_nan;    // magnitude code every NaN encodes to
  uint32_t (*encode)(float);  // the scalar reference
  float (*decode)(uint32_t);
  uint32_t (*encode64)(double);  // the scalar reference from a double
  int bits() const { return 1 + exp_bits + man_bits; }
  uint32_t codes() const { return 1u << bits(); }
};

const Format kFormats[] = {
    {"bfloat16", DType::BFloat16, 8, 7, true, 0x7FC0,
     [](float f) -> uint32_t { return float_to_bf16_bits(f); },
     [](uint32_t c) { return bf16_bits_to_float(uint16_t(c)); },
     [](double d) -> uint32_t { return double_to_bf16_bits(d); }},
    {"float16", DType::Float16, 5, 10, true, 0x7E00, [](float f) -> uint32_t { return float_to_f16_bits(f); },
     [](uint32_t c) { return f16_bits_to_float(uint16_t(c)); },
     [](double d) -> uint32_t { return double_to_f16_bits(d); }},
    {"float8_e4m3fn", DType::Float8_e4m3fn, 4, 3, false, 0x7F,
     [](float f) -> uint32_t { return float_to_e4m3fn_bits(f); },
     [](uint32_t c) { return e4m3fn_bits_to_float(uint8_t(c)); },
     [](double d) -> uint32_t { return double_to_e4m3fn_bits(d); }},
    {"float8_e5m2", DType::Float8_e5m2, 5, 2, true, 0x7E,
     [](float f) -> uint32_t { return float_to_e5m2_bits(f); },
     [](uint32_t c) { return e5m2_bits_to_float(uint8_t(c)); },
     [](double d) -> uint32_t { return double_to_e5m2_bits(d); }},
};

// Independent decoder: sign * 2^(e - bias) * (1 + m / 2^M), subnormals
// sign * 2^(1 - bias) * (m / 2^M), and the format's inf / NaN codes.
double independent_decode(const Format& f, uint32_t code) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint32_t e_max = (1u << f.exp_bits) - 1, m_max = (1u << f.man_bits) - 1;
  const bool neg = (code >> (f.exp_bits + f.man_bits)) & 1;
  const uint32_t e = (code >> f.man_bits) & e_max, m = code & m_max;
  double v;
  if (f.ieee_specials && e == e_max) v = m == 0 ? std::numeric_limits<double>::infinity() : std::nan("");
  else if (!f.ieee_specials && e == e_max && m == m_max) v = std::nan("");
  else if (e == 0) v = std::ldexp(double(m) / double(m_max + 1), 1 - bias);
  else v = std::ldexp(1.0 + double(m) / double(m_max + 1), int(e) - bias);
  return neg ? -v : v;
}

// Codes as a byte buffer of the format's storage width.
std::vector<char> pack(const Format& f, const std::vector<uint32_t>& codes) {
  const size_t w = itemsize(f.dtype);
  std::vector<char> out(codes.size() * w);
  for (size_t i = 0; i < codes.size(); ++i) {
    if (w == 2) {
      const uint16_t c = uint16_t(codes[i]);
      std::memcpy(&out[i * 2], &c, 2);
    } else {
      out[i] = char(uint8_t(codes[i]));
    }
  }
  return out;
}
uint32_t unpack(const Format& f, const std::vector<char>& buf, size_t i) {
  if (itemsize(f.dtype) == 2) {
    uint16_t c;
    std::memcpy(&c, &buf[i * 2], 2);
    return c;
  }
  return uint8_t(buf[i]);
}

// SIMD encode of xs; the batch is long enough for the vector loop to see every
// value (not only the scalar tail).
std::vector<uint32_t> simd_encode(const Format& f, const std::vector<float>& xs) {
  std::vector<float> src = xs;
  while (src.size() < 200) src.insert(src.end(), xs.begin(), xs.end());
  std::vector<char> out(src.size() * itemsize(f.dtype));
  EXPECT_TRUE(convert_contiguous(src.data(), DType::Float32, out.data(), f.dtype, int64_t(src.size())));
  std::vector<uint32_t> codes(xs.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const uint32_t c = unpack(f, out, i);
    if (i < xs.size()) {
      codes[i] = c;
    } else {
      EXPECT_EQ(c, codes[i % xs.size()]) << f.name << ": vector lanes and scalar tail disagree at " << i;
    }
  }
  return codes;
}

std::vector<float> simd_decode(const Format& f, const std::vector<uint32_t>& codes) {
  const std::vector<char> in = pack(f, codes);
  std::vector<float> out(codes.size());
  EXPECT_TRUE(convert_contiguous(in.data(), f.dtype, out.data(), DType::Float32, int64_t(codes.size())));
  return out;
}

std::vector<uint32_t> all_codes(const Format& f) {
  std::vector<uint32_t> c(f.codes());
  for (uint32_t i = 0; i < f.codes(); ++i) c[i] = i;
  return c;
}

// Checks decode of every code (SIMD and reference) against the independent decoder.
void check_all_codes_decode(const Format& f) {
  const std::vector<uint32_t> codes = all_codes(f);
  const std::vector<float> simd = simd_decode(f, codes);
  int bad = 0;
  for (uint32_t c : codes) {
    const double want = independent_decode(f, c);
    const float ref = f.decode(c);
    const float got = simd[c];
    const bool neg = (c >> (f.bits() - 1)) & 1;
    // NaN keeps its sign (the payload convention is checked through SIMD ==
    // reference, bit for bit); anything else is exactly its value.
    const bool ok = (std::isnan(want) ? std::isnan(ref) : double(ref) == want) && std::signbit(ref) == neg &&
                    f32_to_bits(got) == f32_to_bits(ref);
    if (!ok && ++bad < 4)
      ADD_FAILURE() << f.name << " code " << c << ": want " << want << ", reference " << ref << ", SIMD "
                    << got << " (target " << sys::simd_target_name() << ")";
  }
  EXPECT_EQ(bad, 0) << f.name;
}

// code -> float -> code is the identity for every non-NaN code; NaN codes go
// to the canonical NaN with their sign.
void check_round_trip(const Format& f) {
  const std::vector<uint32_t> codes = all_codes(f);
  const std::vector<float> as_float = simd_decode(f, codes);
  const std::vector<uint32_t> back = simd_encode(f, as_float);
  int bad = 0;
  for (uint32_t c : codes) {
    const uint32_t sign = c & (1u << (f.bits() - 1));
    const uint32_t want = std::isnan(independent_decode(f, c)) ? (sign | f.canonical_nan) : c;
    if ((back[c] != want || f.encode(as_float[c]) != want) && ++bad < 4) ADD_FAILURE() << f.name << " code " << c << " came back as " << back[c];
  }
  EXPECT_EQ(bad, 0) << f.name;
}

// Float32 patterns near every rounding boundary of the format (the midpoints
// between neighbouring values, +-64 patterns for FP8, +-3 for the 16-bit
// formats), both signs, plus a strided sweep of all patterns.
std::vector<float> boundary_sample(const Format& f) {
  std::vector<float> xs;
  const uint32_t max_mag = (f.codes() >> 1) - 1;
  const int radius = f.bits() == 8 ? 64 : 3;
  for (uint32_t c = 0; c < max_mag; ++c) {
    const double a = independent_decode(f, c);
    double b = independent_decode(f, c + 1);
    if (!std::isfinite(a)) continue;
    // Past the largest finite value the boundary is the overflow threshold:
    // the midpoint to max + one ulp (464 for e4m3fn, 61440 for e5m2, 65520 for f16).
    if (!std::isfinite(b)) b = a + std::ldexp(1.0, std::ilogb(a) - f.man_bits);
    const uint32_t mid = f32_to_bits(float((a + b) / 2));
    for (int d = -radius; d <= radius; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) xs.push_back(bits_to_f32(sign | uint32_t(int64_t(mid) + d)));
  }
  for (uint64_t p = 0; p < (uint64_t(1) << 32); p += 65521) xs.push_back(bits_to_f32(uint32_t(p)));
  return xs;
}

void check_encode_sample(const Format& f) {
  const std::vector<float> xs = boundary_sample(f);
  const std::vector<uint32_t> got = simd_encode(f, xs);
  int bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const uint32_t want = f.encode(xs[i]);
    if (got[i] != want && ++bad < 4)
      ADD_FAILURE() << f.name << " float bits " << std::hex << f32_to_bits(xs[i]) << ": SIMD " << got[i]
                    << ", reference " << want << std::dec << " (target " << sys::simd_target_name() << ")";
  }
  EXPECT_EQ(bad, 0) << f.name;
}

// Runs fn once per SIMD target compiled in and supported here, then restores
// the normal choice.
void for_each_target(const std::function<void()>& fn) {
  // What was allowed before (KILN_SIMD_TARGET's cap, which scripts/test sets):
  // restored after, so later tests of a capped run stay capped.
  const int64_t before = hwy::SupportedTargets();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    SCOPED_TRACE(hwy::TargetName(target));
    fn();
  }
  hwy::SetSupportedTargetsForTest(before);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

TEST(Convert, EveryCodeDecodesToItsValueOnEveryTarget) {
  for_each_target([] {
    for (const Format& f : kFormats) check_all_codes_decode(f);
  });
}

TEST(Convert, RoundTripEveryCodeOnEveryTarget) {
  for_each_target([] {
    for (const Format& f : kFormats) check_round_trip(f);
  });
}

TEST(Convert, EncodeNearEveryBoundaryOnEveryTarget) {
  for_each_target([] {
    for (const Format& f : kFormats) check_encode_sample(f);
  });
}

TEST(Convert, NamedValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float p = std::nextafter(1.0f, 2.0f) - 1.0f;  // 2^-23: nudges a tie either way
  struct Case {
    const Format& f;
    float x;
    uint32_t code;
  };
  const Format &bf = kFormats[0], &h = kFormats[1], &e4 = kFormats[2], &e5 = kFormats[3];
  const Case cases[] = {
      // float8_e4m3fn: max 448; (448, 464] rounds to 448; past 464 (and inf) is NaN.
      {e4, 448.0f, 0x7E}, {e4, 464.0f, 0x7E}, {e4, 464.0f * (1 + p), 0x7F}, {e4, 465.0f, 0x7F},
      {e4, -465.0f, 0xFF}, {e4, inf, 0x7F}, {e4, -inf, 0xFF}, {e4, nan, 0x7F}, {e4, -nan, 0xFF},
      {e4, 416.0f, 0x7D}, {e4, 432.0f, 0x7E},  // 432 ties between 416 (0x7D) and 448 (0x7E)
      {e4, std::ldexp(1.0f, -9), 0x01}, {e4, std::ldexp(1.0f, -10), 0x00},  // smallest subnormal; its half ties to 0
      {e4, std::ldexp(1.0f, -10) * (1 + p), 0x01}, {e4, 3 * std::ldexp(1.0f, -10), 0x02},  // 1.5 ulp ties to 2
      {e4, std::ldexp(1.0f, -6), 0x08}, {e4, -0.0f, 0x80}, {e4, 1.0f, 0x38}, {e4, 1.0625f, 0x38}, {e4, 1.1875f, 0x3A},
      // float8_e5m2: max 57344; from 61440 (a tie, to the even code) it is inf.
      {e5, 57344.0f, 0x7B}, {e5, 61440.0f * (1 - p), 0x7B}, {e5, 61440.0f, 0x7C}, {e5, 1e30f, 0x7C},
      {e5, inf, 0x7C}, {e5, -inf, 0xFC}, {e5, nan, 0x7E}, {e5, -nan, 0xFE}, {e5, std::ldexp(1.0f, -16), 0x01},
      {e5, std::ldexp(1.0f, -17), 0x00}, {e5, 3 * std::ldexp(1.0f, -17), 0x02}, {e5, -0.0f, 0x80}, {e5, 1.0f, 0x3C},
      // float16: max 65504; 65520 ties to inf.
      {h, 65504.0f, 0x7BFF}, {h, 65520.0f, 0x7C00}, {h, 65520.0f * (1 - p), 0x7BFF}, {h, inf, 0x7C00},
      {h, nan, 0x7E00}, {h, -nan, 0xFE00}, {h, std::ldexp(1.0f, -24), 0x0001}, {h, std::ldexp(1.0f, -25), 0x0000},
      {h, 3 * std::ldexp(1.0f, -25), 0x0002}, {h, std::ldexp(1.0f, -14), 0x0400}, {h, -0.0f, 0x8000},
      {h, 1.0f + std::ldexp(1.0f, -11), 0x3C00}, {h, 1.0f + 3 * std::ldexp(1.0f, -11), 0x3C02},
      // bfloat16: halfway cases tie to even; FLT_MAX rounds to inf.
      {bf, 1.0f + std::ldexp(1.0f, -8), 0x3F80}, {bf, 1.0f + 3 * std::ldexp(1.0f, -8), 0x3F82},
      {bf, std::numeric_limits<float>::max(), 0x7F80}, {bf, inf, 0x7F80}, {bf, nan, 0x7FC0}, {bf, -nan, 0xFFC0},
      {bf, bits_to_f32(0x7F800001), 0x7FC0}, {bf, -0.0f, 0x8000}, {bf, std::numeric_limits<float>::denorm_min(), 0x0000},
      {bf, bits_to_f32(0x00008000), 0x0000}, {bf, bits_to_f32(0x00018000), 0x0002},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.f.encode(c.x), c.code) << c.f.name << " reference, x = " << c.x;
    EXPECT_EQ(simd_encode(c.f, {c.x})[0], c.code) << c.f.name << " SIMD, x = " << c.x;
  }
  // Decoding the extremes.
  EXPECT_EQ(e4m3fn_bits_to_float(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(e4m3fn_bits_to_float(0x7F)));
  EXPECT_EQ(e4m3fn_bits_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e5m2_bits_to_float(0x7B), 57344.0f);
  EXPECT_EQ(e5m2_bits_to_float(0x7C), inf);
  EXPECT_EQ(e5m2_bits_to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(f32_to_bits(f16_bits_to_float(0x7C01)), 0x7FC02000u);  // NaN made quiet, payload kept
}

TEST(Convert, Float64AndNarrowToNarrowPairs) {
  std::mt19937 rng(7);
  std::vector<double> d(1000);
  for (auto& v : d) v = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), int(rng() % 40) - 20);
  d[0] = std::nan("");
  d[1] = -std::numeric_limits<double>::infinity();
  d[2] = 1e300;
  d[3] = 1e-300;
  d[4] = -0.0;
  std::vector<float> f(d.size());
  ASSERT_TRUE(convert_contiguous(d.data(), DType::Float64, f.data(), DType::Float32, int64_t(d.size())));
  for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(f32_to_bits(f[i]), f32_to_bits(static_cast<float>(d[i]))) << i;
  std::vector<double> back(d.size());
  ASSERT_TRUE(convert_contiguous(f.data(), DType::Float32, back.data(), DType::Float64, int64_t(d.size())));
  for (size_t i = 0; i < d.size(); ++i) {
    const double want = f[i];
    EXPECT_EQ(std::memcmp(&back[i], &want, 8), 0) << i;
  }
  // f64 -> narrow rounds once from the double (as the scalar cast<> does);
  // narrow -> narrow goes through float32, which is exact.
  for (const Format& to : kFormats) {
    std::vector<char> out(d.size() * itemsize(to.dtype));
    ASSERT_TRUE(convert_contiguous(d.data(), DType::Float64, out.data(), to.dtype, int64_t(d.size())));
    for (size_t i = 0; i < d.size(); ++i)
      EXPECT_EQ(unpack(to, out, i), to.encode64(d[i])) << to.name << " " << i;
    for (const Format& from : kFormats) {
      if (&from == &to) continue;
      const std::vector<uint32_t> codes = all_codes(from);
      const std::vector<char> in = pack(from, codes);
      std::vector<char> res(codes.size() * itemsize(to.dtype));
      ASSERT_TRUE(convert_contiguous(in.data(), from.dtype, res.data(), to.dtype, int64_t(codes.size())));
      int bad = 0;
      for (uint32_t c : codes) bad += unpack(to, res, c) != to.encode(from.decode(c));
      EXPECT_EQ(bad, 0) << from.name << " -> " << to.name;
    }
  }
  // Pairs without a kernel are left to the generic loop.
  int32_t i32[4] = {};
  float f32[4] = {};
  EXPECT_FALSE(convert_contiguous(i32, DType::Int32, f32, DType::Float32, 4));
  EXPECT_FALSE(convert_contiguous(f32, DType::Float32, f32, DType::Float32, 4));
  EXPECT_NE(std::string(sys::simd_target_name()), "");
}

// Bits of a (contiguous) tensor's element i.
uint32_t bits_at(const Tensor& t, int64_t i) {
  const char* p = static_cast<const char*>(t.data_ptr()) + i * int64_t(t.itemsize());
  uint32_t v = 0;
  std::memcpy(&v, p, t.itemsize() < 4 ? t.itemsize() : 4);
  return v;
}

TEST(Convert, TensorToOverLayouts) {
  std::mt19937 rng(11);
  // [300, 700] float32: values of all magnitudes, random bit patterns, specials.
  const int64_t rows = 300, cols = 700;
  std::vector<float> v(size_t(rows * cols));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = (i % 3 == 0) ? bits_to_f32(uint32_t(rng()))
                        : std::ldexp(std::normal_distribution<float>()(rng), int(rng() % 60) - 30);
  v[0] = std::numeric_limits<float>::infinity();
  v[1] = -0.0f;
  v[2] = 464.0f;
  const Tensor x = from_buffer_copy(v.data(), {rows, cols}, DType::Float32);
  for (const Format& f : kFormats) {
    SCOPED_TRACE(f.name);
    // Contiguous, large enough to be threaded.
    const Tensor y = x.to(f.dtype);
    ASSERT_EQ(y.dtype(), f.dtype);
    ASSERT_EQ(y.sizes(), x.sizes());
    int bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) bad += bits_at(y, i) != f.encode(v[size_t(i)]);
    EXPECT_EQ(bad, 0);
    // And back to float32.
    const Tensor z = y.to(DType::Float32);
    bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) bad += bits_at(z, i) != f32_to_bits(f.decode(bits_at(y, i)));
    EXPECT_EQ(bad, 0);
    // Transposed: [700, 300] view; element (r, c) is v[c * cols + r].
    const Tensor yt = x.t().to(f.dtype).contiguous();
    ASSERT_EQ(yt.sizes(), (Shape{cols, rows}));
    bad = 0;
    for (int64_t r = 0; r < cols; ++r)
      for (int64_t c = 0; c < rows; ++c) bad += bits_at(yt, r * rows + c) != f.encode(v[size_t(c * cols + r)]);
    EXPECT_EQ(bad, 0);
    // Sliced: rows 5.., every third column.
    const Tensor ys = x.slice(0, 5, rows).slice(1, 1, cols, 3).to(f.dtype).contiguous();
    const int64_t sc = (cols - 1 + 2) / 3;
    ASSERT_EQ(ys.sizes(), (Shape{rows - 5, sc}));
    bad = 0;
    for (int64_t r = 0; r < rows - 5; ++r)
      for (int64_t c = 0; c < sc; ++c) bad += bits_at(ys, r * sc + c) != f.encode(v[size_t((r + 5) * cols + 1 + 3 * c)]);
    EXPECT_EQ(bad, 0);
    // Empty and one-element tensors.
    const Tensor e = empty({0, 5}).to(f.dtype);
    EXPECT_EQ(e.dtype(), f.dtype);
    EXPECT_EQ(e.sizes(), (Shape{0, 5}));
    EXPECT_EQ(e.to(DType::Float32).numel(), 0);
    const Tensor one = x.slice(0, 2, 3).slice(1, 0, 1).to(f.dtype);
    EXPECT_EQ(bits_at(one.contiguous(), 0), f.encode(v[size_t(2 * cols)]));
  }
  // Narrow -> narrow through Tensor::to rounds through float32, as cast<> does.
  const Tensor h = x.to(DType::Float16);
  const Tensor q = h.to(DType::Float8_e4m3fn);
  int bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    bad += bits_at(q, i) != float_to_e4m3fn_bits(f16_bits_to_float(uint16_t(bits_at(h, i))));
  EXPECT_EQ(bad, 0);
}

// ---- float64 and integer sources round once -----------------------------------

// The value a code stands for equals `want` (NaN for NaN, signed zeros by sign).
bool decodes_to(const Format& f, uint32_t code, double want) {
  const double got = independent_decode(f, code);
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

template <typename F>
void for_format(DType d, F&& fn) {
  dispatch<kFloatSet | kFp8Set>(d, "test", [&]<typename T>() {
    if constexpr (is_narrow_float_v<T>) fn.template operator()<T>();
  });
}

// x (a double, or a complex128 with x as its real part) narrowed by every path:
// the scalar cast and Scalar, fill, and Tensor::to from contiguous (SIMD) and
// strided float64 and complex128 tensors.
void check_double_narrows_to(const Format& f, double x, double want) {
  SCOPED_TRACE(std::string(f.name) + " from " + std::to_string(x));
  for_format(f.dtype, [&]<typename T>() {
    EXPECT_TRUE(decodes_to(f, cast<T>(x).bits, want)) << "cast<>";
    EXPECT_TRUE(decodes_to(f, f.encode64(x), want)) << "reference";
    EXPECT_TRUE(decodes_to(f, cast<T>(complex128(x, 5.0)).bits, want)) << "cast<> from complex128";
    EXPECT_TRUE(decodes_to(f, Scalar(x).to<T>().bits, want)) << "Scalar::to";
  });
  EXPECT_TRUE(decodes_to(f, bits_at(full({1}, Scalar(x), f.dtype), 0), want)) << "full";
  const int64_t n = 301;  // vector body and scalar tail
  const Tensor x64 = full({n, 2}, Scalar(x), DType::Float64);
  const Tensor c128 = full({n}, Scalar(complex128(x, -3.0)), DType::Complex128);
  const Tensor outs[] = {x64.to(f.dtype), x64.select(1, 0).to(f.dtype).contiguous(), c128.to(f.dtype)};
  for (const Tensor& y : outs) {
    int bad = 0;
    for (int64_t i = 0; i < y.numel(); ++i) bad += !decodes_to(f, bits_at(y, i), want);
    EXPECT_EQ(bad, 0) << "Tensor::to, " << y.numel() << " elements";
  }
}

TEST(Convert, Float64ToNarrowRoundsOnce) {
  const Format &bf = kFormats[0], &h = kFormats[1], &e4 = kFormats[2], &e5 = kFormats[3];
  const double t = std::ldexp(1.0, -40), nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  auto p2 = [](int e) { return std::ldexp(1.0, e); };
  // In each "double rounding" case float32(x) is a tie of the format that goes the other way.
  struct Case {
    const Format& f;
    double x, want;
  };
  const Case cases[] = {
      {e4, 1.0625 + t, 1.125},
      {e4, -(1.0625 + t), -1.125},
      {e4, 1.0625 - t, 1.0},
      {e4, 1.0625, 1.0},
      {e4, 464 + p2(-30), nan},
      {e4, 464, 448},
      {e4, -(464 + p2(-30)), nan},
      {e4, 1e300, nan},
      {e4, inf, nan},
      {e4, p2(-10) + p2(-50), p2(-9)},
      {e4, 3 * p2(-10) - p2(-50), p2(-9)},
      {e4, p2(-10), 0.0},
      {e5, 1.125 + t, 1.25},
      {e5, 61440 - p2(-30), 57344},
      {e5, -(61440 - p2(-30)), -57344},
      {e5, 61440, inf},
      {e5, p2(-17) + p2(-60), p2(-16)},
      {e5, -1e300, -inf},
      {h, 1 + p2(-11) + t, 1 + p2(-10)},
      {h, 65520 - p2(-30), 65504},
      {h, 65520, inf},
      {h, p2(-25) + p2(-70), p2(-24)},
      {h, -(p2(-25) + p2(-70)), -p2(-24)},
      {bf, 1 + p2(-8) + p2(-30), 1 + p2(-7)},
      {bf, (2 - p2(-8)) * p2(127) - p2(100), (2 - p2(-7)) * p2(127)},
      {bf, (2 - p2(-8)) * p2(127), inf},
      {bf, p2(-134) + p2(-170), p2(-133)},
      {bf, 3 * p2(-134) - p2(-170), p2(-133)},
      {bf, 1e300, inf},
      {bf, std::numeric_limits<double>::denorm_min(), 0.0},
  };
  for (const Case& c : cases) check_double_narrows_to(c.f, c.x, c.want);
  for (const Format& f : kFormats) {
    check_double_narrows_to(f, -0.0, -0.0);
    check_double_narrows_to(f, -nan, nan);
    check_double_narrows_to(f, 1e-300, 0.0);
  }
}

// The integer v narrowed by the scalar cast, Scalar, fill and Tensor::to.
template <typename I>
void check_int_narrows_to(const Format& f, I v, double want) {
  SCOPED_TRACE(std::string(f.name) + " from " + std::to_string(v));
  for_format(f.dtype, [&]<typename T>() {
    EXPECT_TRUE(decodes_to(f, cast<T>(v).bits, want)) << "cast<>";
    EXPECT_TRUE(decodes_to(f, Scalar(v).to<T>().bits, want)) << "Scalar::to";
  });
  EXPECT_TRUE(decodes_to(f, bits_at(full({1}, Scalar(v), f.dtype), 0), want)) << "full";
  std::vector<I> buf(37, v);
  const Tensor y = from_buffer_copy(buf.data(), {37}, dtype_of<I>()).to(f.dtype);
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_TRUE(decodes_to(f, bits_at(y, i), want)) << "Tensor::to " << i;
}

TEST(Convert, IntegerToNarrowRoundsOnce) {
  const Format &bf = kFormats[0], &h = kFormats[1], &e4 = kFormats[2], &e5 = kFormats[3];
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  auto p2 = [](int e) { return std::ldexp(1.0, e); };
  auto i2 = [](int e) { return int64_t(1) << e; };
  // bfloat16 keeps 8 bits: past 2^24 float32 (and past 2^53 the double) round
  // the integer first, onto a bfloat16 tie.
  check_int_narrows_to(bf, int32_t(i2(24) + i2(16) + 1), p2(24) + p2(17));
  check_int_narrows_to(bf, int32_t(-(i2(24) + i2(16) + 1)), -(p2(24) + p2(17)));
  check_int_narrows_to(bf, uint32_t((uint32_t(1) << 31) + (1u << 23) + 1), p2(31) + p2(24));
  check_int_narrows_to(bf, i2(60) + i2(52) + 1, p2(60) + p2(53));
  check_int_narrows_to(bf, -(i2(60) + i2(52) + 1), -(p2(60) + p2(53)));
  check_int_narrows_to(bf, i2(60) + i2(53) + i2(52) - 1, p2(60) + p2(53));
  check_int_narrows_to(bf, (uint64_t(1) << 63) + (uint64_t(1) << 55) + 1, p2(63) + p2(56));
  check_int_narrows_to(bf, std::numeric_limits<int64_t>::min(), -p2(63));
  check_int_narrows_to(bf, std::numeric_limits<int64_t>::max(), p2(63));
  check_int_narrows_to(bf, std::numeric_limits<uint64_t>::max(), p2(64));
  check_int_narrows_to(bf, int64_t(257), 256.0);
  check_int_narrows_to(bf, int64_t(0), 0.0);
  check_int_narrows_to(h, int64_t(65519), 65504.0);
  check_int_narrows_to(h, int64_t(65520), inf);
  check_int_narrows_to(h, int32_t(-65520), -inf);
  check_int_narrows_to(h, int64_t(2049), 2048.0);
  check_int_narrows_to(h, int64_t(2051), 2052.0);
  check_int_narrows_to(h, i2(53) + 1, inf);
  check_int_narrows_to(e4, int64_t(464), 448.0);
  check_int_narrows_to(e4, int64_t(465), nan);
  check_int_narrows_to(e4, int16_t(-17), -16.0);
  check_int_narrows_to(e4, i2(62), nan);
  check_int_narrows_to(e5, int64_t(61439), 57344.0);
  check_int_narrows_to(e5, int64_t(61440), inf);
  check_int_narrows_to(e5, uint8_t(9), 8.0);
}

TEST(Convert, IntegerScalarToFloat32RoundsOnce) {
  // A Scalar keeps the integer: float32 and complex64 round it once, as
  // static_cast<float> of the integer does (the double would round first:
  // 2^60 + 2^36 + 1 -> 2^60 + 2^36, a float32 tie, -> 2^60).
  const int64_t big = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
  const uint64_t huge = (uint64_t(1) << 63) + (uint64_t(1) << 39) + 1;
  EXPECT_EQ(Scalar(big).to<float>(), static_cast<float>(big));
  EXPECT_EQ(double(static_cast<float>(big)), std::ldexp(1.0, 60) + std::ldexp(1.0, 37));
  EXPECT_EQ(Scalar(huge).to<float>(), static_cast<float>(huge));
  EXPECT_EQ(Scalar(-big).to<complex64>(), complex64(static_cast<float>(-big), 0.0f));
  EXPECT_EQ(full({1}, Scalar(big), DType::Float32).item<float>(), static_cast<float>(big));
  EXPECT_EQ(Scalar(big).to<double>(), static_cast<double>(big));
}

}  // namespace
