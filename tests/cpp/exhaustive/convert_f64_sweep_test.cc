// The proof for float64 and integer sources -> {bfloat16, float16,
// float8_e4m3fn, float8_e5m2}: a value reaches the narrow format rounded once,
// from its exact value. For every pair of neighbouring magnitudes of each
// format (all finite codes, subnormals included, and the largest finite one
// with the overflow threshold above it), doubles at the midpoint, a few ulps of
// the double either side, +-2^-40 relative, the neighbours themselves and
// random doubles in between, both signs, plus the far ranges (below the
// smallest subnormal, past float32's range, inf, NaN) are converted by
//   - the SIMD kernels (kiln::convert_contiguous) on every SIMD target,
//   - the scalar reference (To(double)) and cast<To>, Scalar::to<To>,
//   - Tensor::to from a strided float64 view (the generic element loop),
// and integers at and around every integer midpoint (int64, uint64, int32,
// uint32; every integer up to 70000) by cast<To>, Scalar::to<To> and
// Tensor::to from int64. Each result must equal an oracle built from the
// format's definition: a value below the midpoint of its neighbours takes the
// lower code, above it the upper one, a tie the even one; the code past the
// largest finite one is the overflow code (inf, or NaN for e4m3fn). The oracle
// compares exactly: doubles with doubles, integers with doubles by their
// integer and fractional parts.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cast.h"
#include "core/convert.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

struct Fmt {
  const char* name;
  DType dtype;
  int exp_bits, man_bits;
  uint32_t max_finite;  // largest finite magnitude code
  uint32_t nan_code;    // magnitude code every NaN encodes to
  // value[k]: the magnitude of code k for k <= max_finite; value[max_finite + 1]
  // is max + one ulp of the top binade, the value the overflow code stands for.
  std::vector<double> value;

  Fmt(const char* n, DType d, int e, int m, uint32_t max, uint32_t nan)
      : name(n), dtype(d), exp_bits(e), man_bits(m), max_finite(max), nan_code(nan) {
    const int bias = (1 << (e - 1)) - 1;
    for (uint32_t c = 0; c <= max; ++c) {
      const uint32_t ex = c >> m, mant = c & ((1u << m) - 1u);
      const double frac = double(mant) / double(1u << m);
      value.push_back(ex == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, int(ex) - bias));
    }
    value.push_back(value[max] + std::ldexp(1.0, std::ilogb(value[max]) - m));
  }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  double mid(uint32_t k) const { return (value[k] + value[k + 1]) / 2; }  // exact in double

  // The expected magnitude code of a non-negative magnitude, given cmp(d) =
  // -1, 0, 1 as the magnitude is below, at, above the double d.
  template <typename Cmp>
  uint32_t expect(Cmp cmp) const {
    const uint32_t over = max_finite + 1;
    if (cmp(value[over]) >= 0) return over;
    // Largest k with value[k] <= magnitude.
    uint32_t lo = 0, hi = over;  // value[lo] <= magnitude < value[hi]
    while (hi - lo > 1) {
      const uint32_t m = lo + (hi - lo) / 2;
      (cmp(value[m]) >= 0 ? lo : hi) = m;
    }
    const int c = cmp(mid(lo));
    if (c < 0) return lo;
    if (c > 0) return lo + 1;
    return (lo & 1) ? lo + 1 : lo;
  }
  uint32_t expect_double(double x) const {
    if (std::isnan(x)) return (std::signbit(x) ? sign_bit() : 0) | nan_code;
    const double a = std::fabs(x);
    const uint32_t k =
        std::isinf(a) ? max_finite + 1 : expect([a](double d) { return a < d ? -1 : (a > d ? 1 : 0); });
    return (std::signbit(x) ? sign_bit() : 0) | k;
  }
  uint32_t expect_int(bool neg, uint64_t a) const {
    // a vs a double d >= 0: integer parts first, then d's fraction.
    const auto cmp = [a](double d) {
      if (d >= 0x1p64) return -1;
      const uint64_t whole = uint64_t(d);  // exact: d < 2^64
      if (a != whole) return a < whole ? -1 : 1;
      return d > std::floor(d) ? -1 : 0;
    };
    return (neg ? sign_bit() : 0) | expect(cmp);
  }
};

struct Mismatches {
  uint64_t count = 0;
  std::vector<std::string> first;
  void add(const std::string& what) {
    if (count++ < 6) first.push_back(what);
  }
};

std::string hex64(double x) {
  uint64_t u;
  std::memcpy(&u, &x, 8);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a (0x%016llX)", x, (unsigned long long)u);
  return buf;
}

uint32_t code_at(const void* p, size_t itemsz, size_t i) {
  uint32_t c = 0;
  std::memcpy(&c, static_cast<const char*>(p) + i * itemsz, itemsz);
  return c;
}

// Runs fn once per SIMD target compiled in and supported here, then restores
// the choice made before.
template <typename F>
void for_each_target(F&& fn) {
  const int64_t before = hwy::SupportedTargets();
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    fn(hwy::TargetName(target));
  }
  hwy::SetSupportedTargetsForTest(before);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

// The doubles of the sweep for one format (both signs).
std::vector<double> double_sweep(const Fmt& f, std::mt19937_64& rng) {
  std::vector<double> xs;
  const auto both = [&xs](double a) {
    xs.push_back(a);
    xs.push_back(-a);
  };
  const auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
  };
  const auto from_bits = [](uint64_t u) {
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (uint32_t k = 0; k <= f.max_finite; ++k) {
    const double lo = f.value[k], hi = f.value[k + 1], m = f.mid(k);
    both(lo);
    both(std::nextafter(lo, inf));
    both(m);
    double up = m, down = m;
    for (int i = 0; i < 3; ++i) {
      up = std::nextafter(up, inf);
      down = std::nextafter(down, 0.0);
      both(up);
      both(down);
    }
    both(m * (1 + 0x1p-40));
    both(m * (1 - 0x1p-40));
    both(m + (hi - lo) * 0x1p-30);
    both(m - (hi - lo) * 0x1p-30);
    // Random doubles between the neighbours, and close to the midpoint.
    const uint64_t blo = bits(lo), bhi = bits(hi), bm = bits(m);
    for (int i = 0; i < 6; ++i) both(from_bits(blo + rng() % (bhi - blo)));
    for (int i = 0; i < 4; ++i) both(from_bits(bm - (uint64_t(1) << 24) + rng() % (uint64_t(1) << 25)));
  }
  // Far ranges: past the overflow threshold and float32's range, below half the
  // smallest subnormal and float32's subnormals, and the specials.
  const double top = f.value[f.max_finite + 1];
  for (double x : {top, std::nextafter(top, inf), 2 * top, 0x1p64, double(std::numeric_limits<float>::max()),
                   std::nextafter(double(std::numeric_limits<float>::max()), inf), 0x1p128, 1e300,
                   std::numeric_limits<double>::max(), inf, 0.0, std::numeric_limits<double>::denorm_min(),
                   std::numeric_limits<double>::min(), 1e-300, 0x1p-150, 0x1p-149, 0x1.8p-149, 0x1p-127})
    both(x);
  both(std::numeric_limits<double>::quiet_NaN());
  both(std::numeric_limits<double>::signaling_NaN());
  both(from_bits(0x7FF0000000000001ull));
  return xs;
}

template <typename T>
void check_doubles(const Fmt& f, const std::vector<double>& xs, Mismatches (&bad)[4]) {
  const size_t n = xs.size(), w = sizeof(T);
  std::vector<uint32_t> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = f.expect_double(xs[i]);
  // [0] SIMD on every target.
  std::vector<T> out(n);
  for_each_target([&](const char* target) {
    // The whole array (vector loops), then runs of 3 (mostly the scalar tails).
    for (size_t run : {n, size_t(3)}) {
      for (size_t b = 0; b < n; b += run) {
        const size_t len = std::min(run, n - b);
        if (!convert_contiguous(xs.data() + b, DType::Float64, out.data() + b, f.dtype, int64_t(len))) {
          bad[0].add("no SIMD kernel");
          return;
        }
      }
      for (size_t i = 0; i < n; ++i)
        if (code_at(out.data(), w, i) != want[i])
          bad[0].add(std::string(target) + (run == n ? " " : " tail ") + hex64(xs[i]) + ": got " +
                     std::to_string(code_at(out.data(), w, i)) + ", want " + std::to_string(want[i]));
    }
  });
  // [1] the scalar reference and cast<>, [2] Scalar::to.
  for (size_t i = 0; i < n; ++i) {
    const uint32_t ref = T(xs[i]).bits, c = cast<T>(xs[i]).bits, s = Scalar(xs[i]).to<T>().bits;
    if (ref != want[i] || c != want[i])
      bad[1].add(hex64(xs[i]) + ": reference " + std::to_string(ref) + ", cast " + std::to_string(c) +
                 ", want " + std::to_string(want[i]));
    if (s != want[i])
      bad[2].add(hex64(xs[i]) + ": Scalar " + std::to_string(s) + ", want " + std::to_string(want[i]));
  }
  // [3] Tensor::to from a strided view: the generic element loop.
  Tensor buf = empty({int64_t(n), 2}, DType::Float64);
  buf.select(1, 0).copy_(from_buffer_copy(xs.data(), {int64_t(n)}, DType::Float64));
  const Tensor y = buf.select(1, 0).to(f.dtype).contiguous();
  for (size_t i = 0; i < n; ++i)
    if (code_at(y.data_ptr(), w, i) != want[i])
      bad[3].add(hex64(xs[i]) + ": strided Tensor::to " + std::to_string(code_at(y.data_ptr(), w, i)) +
                 ", want " + std::to_string(want[i]));
}

// Magnitudes of the integer sweep for one format: every integer up to 70000,
// then, for each pair of neighbours below 2^64, the integers at and around the
// midpoint and the neighbours, and random ones between; then random integers
// of every width.
std::vector<uint64_t> int_sweep(const Fmt& f, std::mt19937_64& rng) {
  std::vector<uint64_t> as;
  for (uint64_t a = 0; a <= 70000; ++a) as.push_back(a);
  const auto add = [&as](double d, int64_t delta) {
    if (d < 0 || d >= 0x1p64) return;
    const uint64_t base = uint64_t(d);
    if ((delta < 0 && base < uint64_t(-delta)) || (delta > 0 && base > ~uint64_t(0) - uint64_t(delta)))
      return;
    as.push_back(base + uint64_t(delta));
  };
  for (uint32_t k = 0; k <= f.max_finite; ++k) {
    const double lo = f.value[k], hi = f.value[k + 1], m = f.mid(k);
    if (hi < 70000 || lo >= 0x1p64) continue;
    for (int64_t d : {-2, -1, 0, 1, 2}) {
      add(m, d);
      add(lo, d);
    }
    const uint64_t span = hi < 0x1p64 ? uint64_t(hi) - uint64_t(lo) : ~uint64_t(0) - uint64_t(lo);
    for (int i = 0; i < 6; ++i) add(lo, int64_t(rng() % span));
  }
  for (uint64_t a : {uint64_t(INT32_MAX), uint64_t(INT32_MAX) + 1, uint64_t(UINT32_MAX), uint64_t(INT64_MAX),
                     uint64_t(INT64_MAX) + 1, ~uint64_t(0), ~uint64_t(0) - 1})
    as.push_back(a);
  for (int i = 0; i < 4096; ++i) as.push_back(rng() >> (rng() % 64));  // all widths
  return as;
}

template <typename T>
void check_ints(const Fmt& f, const std::vector<uint64_t>& as, Mismatches (&bad)[4]) {
  const auto report = [&](int slot, const char* path, bool neg, uint64_t a, uint32_t got, uint32_t want) {
    bad[slot].add(std::string(path) + " " + (neg ? "-" : "") + std::to_string(a) + ": got " +
                  std::to_string(got) + ", want " + std::to_string(want));
  };
  std::vector<int64_t> i64;
  std::vector<uint32_t> i64_want;
  for (uint64_t a : as) {
    const uint32_t up = f.expect_int(false, a), dn = f.expect_int(true, a);
    uint32_t g;
    if ((g = cast<T>(a).bits) != up) report(0, "uint64 cast", false, a, g, up);
    if ((g = Scalar(a).to<T>().bits) != up) report(1, "uint64 Scalar", false, a, g, up);
    if (a <= uint64_t(INT64_MAX) + 1) {  // -a fits int64
      const int64_t n = int64_t(uint64_t(0) - a);
      if ((g = cast<T>(n).bits) != (a == 0 ? up : dn)) report(0, "int64 cast", a != 0, a, g, dn);
      if ((g = Scalar(n).to<T>().bits) != (a == 0 ? up : dn)) report(1, "int64 Scalar", a != 0, a, g, dn);
      i64.push_back(n);
      i64_want.push_back(a == 0 ? up : dn);
    }
    if (a <= uint64_t(INT64_MAX)) {
      if ((g = cast<T>(int64_t(a)).bits) != up) report(0, "int64 cast", false, a, g, up);
      i64.push_back(int64_t(a));
      i64_want.push_back(up);
    }
    if (a <= uint64_t(UINT32_MAX) && (g = cast<T>(uint32_t(a)).bits) != up)
      report(2, "uint32 cast", false, a, g, up);
    if (a <= uint64_t(INT32_MAX)) {
      if ((g = cast<T>(int32_t(a)).bits) != up) report(2, "int32 cast", false, a, g, up);
      if ((g = cast<T>(int32_t(-int64_t(a))).bits) != (a == 0 ? up : dn))
        report(2, "int32 cast", true, a, g, dn);
    }
  }
  const Tensor y = from_buffer_copy(i64.data(), {int64_t(i64.size())}, DType::Int64).to(f.dtype);
  for (size_t i = 0; i < i64.size(); ++i) {
    const uint32_t got = code_at(y.data_ptr(), sizeof(T), i);
    if (got != i64_want[i]) {
      const bool neg = i64[i] < 0;
      report(3, "int64 Tensor::to", neg, neg ? uint64_t(0) - uint64_t(i64[i]) : uint64_t(i64[i]), got,
             i64_want[i]);
    }
  }
}

template <typename T>
void sweep_format(const Fmt& f, std::mt19937_64& rng) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> xs = double_sweep(f, rng);
  const std::vector<uint64_t> as = int_sweep(f, rng);
  Mismatches dbad[4], ibad[4];
  check_doubles<T>(f, xs, dbad);
  check_ints<T>(f, as, ibad);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "%-14s %zu doubles (SIMD on each target, reference, Scalar, strided), %zu integer magnitudes: %.1f s\n",
      f.name, xs.size(), as.size(), secs);
  const char* dpath[4] = {"float64 SIMD", "float64 reference/cast", "float64 Scalar",
                          "float64 strided Tensor::to"};
  const char* ipath[4] = {"uint64/int64 cast", "uint64/int64 Scalar", "int32/uint32 cast",
                          "int64 Tensor::to"};
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(dbad[p].count, 0u) << f.name << " " << dpath[p]
                                 << ", first: " << (dbad[p].first.empty() ? "" : dbad[p].first[0]);
    EXPECT_EQ(ibad[p].count, 0u) << f.name << " " << ipath[p]
                                 << ", first: " << (ibad[p].first.empty() ? "" : ibad[p].first[0]);
    for (const auto& s : dbad[p].first) std::printf("  %s\n", s.c_str());
    for (const auto& s : ibad[p].first) std::printf("  %s\n", s.c_str());
  }
}

TEST(ConvertF64Sweep, DoublesAndIntegersAroundEveryMidpoint) {
  std::printf("SIMD targets:");
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) std::printf(" %s", hwy::TargetName(t));
  std::printf("\n");
  std::mt19937_64 rng(2024);
  sweep_format<bfloat16>(Fmt("bfloat16", DType::BFloat16, 8, 7, 0x7F7F, 0x7FC0), rng);
  sweep_format<half>(Fmt("float16", DType::Float16, 5, 10, 0x7BFF, 0x7E00), rng);
  sweep_format<float8_e4m3fn>(Fmt("float8_e4m3fn", DType::Float8_e4m3fn, 4, 3, 0x7E, 0x7F), rng);
  sweep_format<float8_e5m2>(Fmt("float8_e5m2", DType::Float8_e5m2, 5, 2, 0x7B, 0x7E), rng);
}

// The oracle itself on hand-checked values, so a wrong oracle cannot pass
// wrong conversions.
TEST(ConvertF64Sweep, OracleKnownValues) {
  const Fmt e4("float8_e4m3fn", DType::Float8_e4m3fn, 4, 3, 0x7E, 0x7F);
  EXPECT_EQ(e4.expect_double(1.0625 + 0x1p-40), 0x39u);  // 1.125
  EXPECT_EQ(e4.expect_double(1.0625), 0x38u);            // tie to even: 1.0
  EXPECT_EQ(e4.expect_double(464), 0x7Eu);               // tie to 448
  EXPECT_EQ(e4.expect_double(464 + 0x1p-30), 0x7Fu);     // NaN
  EXPECT_EQ(e4.expect_double(-0x1p-10), 0x80u);          // -0
  EXPECT_EQ(e4.expect_int(true, 17), 0xD8u);             // -16
  const Fmt bf("bfloat16", DType::BFloat16, 8, 7, 0x7F7F, 0x7FC0);
  EXPECT_EQ(bf.expect_int(false, (uint64_t(1) << 60) + (uint64_t(1) << 52) + 1), 0x5D81u);  // 2^60 + 2^53
  EXPECT_EQ(bf.expect_int(false, (uint64_t(1) << 60) + (uint64_t(1) << 52)), 0x5D80u);      // tie: 2^60
  EXPECT_EQ(bf.expect_int(false, ~uint64_t(0)), 0x5F80u);                                   // 2^64
  EXPECT_EQ(bf.expect_double(0x1p-134 + 0x1p-170), 0x0001u);
  EXPECT_EQ(bf.expect_double(std::numeric_limits<double>::infinity()), 0x7F80u);
  const Fmt h("float16", DType::Float16, 5, 10, 0x7BFF, 0x7E00);
  EXPECT_EQ(h.expect_int(false, 65519), 0x7BFFu);
  EXPECT_EQ(h.expect_int(false, 65520), 0x7C00u);
  EXPECT_EQ(h.expect_double(0.1), 0x2E66u);  // numpy: float16(0.1).view(uint16)
}

}  // namespace
