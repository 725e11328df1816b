// The proof for float32 -> {bfloat16, float16, float8_e4m3fn, float8_e5m2}:
// every one of the 2^32 float32 bit patterns is encoded by the SIMD kernels
// (kiln::convert_contiguous) and by the scalar reference
// (kiln/float_types.h), and the two must agree bit for bit. In the same pass the
// scalar reference itself is checked against an independent oracle built from
// the formats' definitions: a sorted table of the representable magnitudes and
// the midpoints between neighbours, where a value below a midpoint takes the
// lower code, above it the upper one, and a tie the even code. The code one
// past the largest finite one is the overflow code (inf for f16/bf16/e5m2, NaN
// S.1111.111 for e4m3fn), and its "value" is max + ulp, which places the last
// midpoint at the overflow threshold (464 for e4m3fn, 61440 for e5m2, 65520 for
// f16). The oracle covers all 2^32 patterns for all four formats.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/convert.h"
#include "kiln/float_types.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"

using namespace kiln;

namespace {

// The magnitude of a non-negative code of a format with kExp exponent and kMan
// mantissa bits, from the definition: 2^(e - bias) * (1 + m / 2^kMan), or
// 2^(1 - bias) * (m / 2^kMan) for e == 0. Exact in double.
double format_value(int exp_bits, int man_bits, uint32_t code) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t e = code >> man_bits, m = code & ((1u << man_bits) - 1u);
  const double frac = double(m) / double(1u << man_bits);
  if (e == 0) return std::ldexp(frac, 1 - bias);
  return std::ldexp(1.0 + frac, int(e) - bias);
}

struct Oracle {
  const char* name;
  DType dtype;
  int sign_shift;     // the code's sign bit: 15 or 7
  uint32_t nan_code;  // magnitude code of NaN
  // mid[k]: float32 bit pattern of the midpoint between the values of codes k
  // and k + 1, for k = 0 .. max_finite (code max_finite + 1 is the overflow
  // code). Every midpoint has one more significant bit than the format, so it
  // is a float32 exactly, and for non-negative floats the bit patterns order
  // like the values: the oracle is a step function of the pattern.
  std::vector<uint32_t> mid;

  Oracle(const char* n, DType d, int exp_bits, int man_bits, uint32_t max_finite, uint32_t nan)
      : name(n), dtype(d), sign_shift(exp_bits + man_bits), nan_code(nan) {
    std::vector<double> value(max_finite + 2);
    for (uint32_t c = 0; c <= max_finite; ++c) value[c] = format_value(exp_bits, man_bits, c);
    // max + one ulp of the top binade: the next value if the format went on.
    value[max_finite + 1] = value[max_finite] + std::ldexp(1.0, std::ilogb(value[max_finite]) - man_bits);
    for (uint32_t c = 0; c <= max_finite; ++c) {
      const double m = (value[c] + value[c + 1]) / 2;  // exact in double
      if (!(value[c] < m && m < value[c + 1]) || double(float(m)) != m)
        throw std::logic_error(std::string(n) + ": midpoint not an exact float32");
      mid.push_back(f32_to_bits(float(m)));
    }
  }

  // Fills out[0, n) with the expected codes of the float32 patterns
  // first_pattern + i (all of one sign): runs of one code between midpoints,
  // the even neighbour at a midpoint, NaN for NaN patterns.
  template <typename Bits>
  void expect(uint32_t first_pattern, int64_t n, Bits* out) const {
    const uint32_t sign = (first_pattern >> 31) << sign_shift;
    const uint32_t lo = first_pattern & 0x7FFFFFFFu;
    const uint64_t hi = uint64_t(lo) + uint64_t(n);
    const uint64_t finite_end = std::min<uint64_t>(hi, 0x7F800001u);  // +inf steps like a finite value
    size_t k = size_t(std::lower_bound(mid.begin(), mid.end(), lo) - mid.begin());
    uint64_t p = lo;
    while (p < finite_end) {
      const uint64_t run_end = k < mid.size() ? std::min<uint64_t>(mid[k], finite_end) : finite_end;
      std::fill(out + (p - lo), out + (run_end - lo), Bits(sign | uint32_t(k)));
      p = run_end;
      if (p < finite_end) {  // p is midpoint k: a tie goes to the even code
        out[p - lo] = Bits(sign | uint32_t((k & 1) ? k + 1 : k));
        ++p;
        ++k;
      }
    }
    if (p < hi) std::fill(out + (p - lo), out + (hi - lo), Bits(sign | nan_code));
  }
};

struct Failure {
  std::atomic<uint64_t> count{0};
  std::mutex mu;
  std::vector<std::string> first;
  void add(const std::string& what) {
    if (count.fetch_add(1) < 8) {
      std::lock_guard<std::mutex> lock(mu);
      first.push_back(what);
    }
  }
};

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

// Encodes one chunk of patterns (one sign) three ways: the SIMD kernel, the
// scalar reference, the oracle; all three must agree bit for bit.
template <typename Bits, typename Ref>
void check_chunk(const Oracle& o, const std::vector<float>& src, std::vector<Bits> (&buf)[3], Failure& simd_vs_ref,
                 Failure& ref_vs_oracle, Ref ref_fn) {
  const int64_t n = int64_t(src.size());
  Bits* simd = buf[0].data();
  Bits* ref = buf[1].data();
  Bits* want = buf[2].data();
  if (!convert_contiguous(src.data(), DType::Float32, simd, o.dtype, n)) {
    simd_vs_ref.add("no SIMD kernel");
    return;
  }
  for (int64_t i = 0; i < n; ++i) ref[i] = ref_fn(src[i]);
  o.expect(f32_to_bits(src[0]), n, want);
  if (std::memcmp(simd, ref, size_t(n) * sizeof(Bits)) != 0) {
    for (int64_t i = 0; i < n; ++i)
      if (simd[i] != ref[i])
        simd_vs_ref.add(hex(f32_to_bits(src[i])) + ": SIMD " + hex(simd[i]) + ", reference " + hex(ref[i]));
  }
  if (std::memcmp(ref, want, size_t(n) * sizeof(Bits)) != 0) {
    for (int64_t i = 0; i < n; ++i)
      if (ref[i] != want[i])
        ref_vs_oracle.add(hex(f32_to_bits(src[i])) + ": reference " + hex(ref[i]) + ", oracle " + hex(want[i]));
  }
}

TEST(ConvertExhaustive, AllFloat32PatternsToNarrowFloats) {
  const auto t0 = std::chrono::steady_clock::now();
  const Oracle oracles[4] = {
      {"bfloat16", DType::BFloat16, 8, 7, 0x7F7F, 0x7FC0},
      {"float16", DType::Float16, 5, 10, 0x7BFF, 0x7E00},
      {"float8_e4m3fn", DType::Float8_e4m3fn, 4, 3, 0x7E, 0x7F},
      {"float8_e5m2", DType::Float8_e5m2, 5, 2, 0x7B, 0x7E},
  };
  constexpr int64_t kChunk = int64_t(1) << 16;  // patterns per chunk: hi 16 bits fixed
  Failure simd_vs_ref[4], ref_vs_oracle[4];
  std::atomic<uint64_t> checked{0};

  parallel_for(0, int64_t(1) << 16, 1, [&](int64_t chunk_begin, int64_t chunk_end) {
    std::vector<float> src(kChunk);
    std::vector<uint16_t> out16[3] = {std::vector<uint16_t>(kChunk), std::vector<uint16_t>(kChunk),
                                      std::vector<uint16_t>(kChunk)};
    std::vector<uint8_t> out8[3] = {std::vector<uint8_t>(kChunk), std::vector<uint8_t>(kChunk),
                                    std::vector<uint8_t>(kChunk)};
    for (int64_t chunk = chunk_begin; chunk < chunk_end; ++chunk) {
      const uint32_t hi = uint32_t(chunk) << 16;
      for (int64_t i = 0; i < kChunk; ++i) src[i] = bits_to_f32(hi | uint32_t(i));
      check_chunk<uint16_t>(oracles[0], src, out16, simd_vs_ref[0], ref_vs_oracle[0], [](float x) { return float_to_bf16_bits(x); });
      check_chunk<uint16_t>(oracles[1], src, out16, simd_vs_ref[1], ref_vs_oracle[1], [](float x) { return float_to_f16_bits(x); });
      check_chunk<uint8_t>(oracles[2], src, out8, simd_vs_ref[2], ref_vs_oracle[2], [](float x) { return float_to_e4m3fn_bits(x); });
      check_chunk<uint8_t>(oracles[3], src, out8, simd_vs_ref[3], ref_vs_oracle[3], [](float x) { return float_to_e5m2_bits(x); });
      checked.fetch_add(kChunk);
    }
  });

  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("SIMD target %s, %d threads, %.1f s\n", sys::simd_target_name(), num_threads(), secs);
  EXPECT_EQ(checked.load(), uint64_t(1) << 32);
  for (int f = 0; f < 4; ++f) {
    std::printf("%-14s %llu float32 patterns: SIMD vs reference %llu mismatches, reference vs oracle %llu mismatches\n",
                oracles[f].name, (unsigned long long)checked.load(),
                (unsigned long long)simd_vs_ref[f].count.load(), (unsigned long long)ref_vs_oracle[f].count.load());
    EXPECT_EQ(simd_vs_ref[f].count.load(), 0u) << oracles[f].name << ", first: "
                                               << (simd_vs_ref[f].first.empty() ? "" : simd_vs_ref[f].first[0]);
    EXPECT_EQ(ref_vs_oracle[f].count.load(), 0u) << oracles[f].name << ", first: "
                                                 << (ref_vs_oracle[f].first.empty() ? "" : ref_vs_oracle[f].first[0]);
    for (const auto& s : simd_vs_ref[f].first) std::printf("  %s\n", s.c_str());
    for (const auto& s : ref_vs_oracle[f].first) std::printf("  %s\n", s.c_str());
  }
}

}  // namespace
