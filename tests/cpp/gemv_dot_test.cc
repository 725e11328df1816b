// The dot-product GEMV (gemv_dot.cc, AVX512-BF16) for bf16 and FP8 weights
// against the double-precision reference: its documented rounding of x into
// two bf16 parts, K tails, scale layouts, bias and output dtypes, the one-part
// path for an x of bf16 values, every FP8 code (subnormals, NaN, inf),
// infinite weights, and the exact kernel it hands over to. On CPUs without the instruction (or with dispatch
// capped below AVX-512) the tests that need it skip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cpu/gemv.h"
#include "kiln/float_types.h"

namespace kiln {
namespace {

// Deterministic values in about [-2, 2).
float value(uint64_t i, uint64_t seed) {
  uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  return float(int64_t(h % 4000001) - 2000000) * 1e-6f;
}

// One activation row x [K] against W [N, K] (rows K apart) into y [N].
cpu::GemvArgs one_row(const void* w, int64_t N, int64_t K, const float* x, void* y, DType y_dtype,
                      cpu::ScaleKind sk, const float* scale, const float* bias) {
  cpu::GemvArgs a;
  a.w = w;
  a.ldw = K;
  a.N = N;
  a.K = K;
  a.x = x;
  a.ldx = K;
  a.M = 1;
  a.y = y;
  a.ldy = N;
  a.y_dtype = y_dtype;
  a.scale_kind = sk;
  a.scale = sk == cpu::ScaleKind::None ? nullptr : scale;
  a.bias = bias;
  return a;
}

struct Problem {
  int64_t N, K;
  std::vector<uint16_t> w;  // bf16 bits, [N, K]
  std::vector<float> x;     // [K]
  std::vector<float> scale, bias;
  cpu::GemvArgs args(void* y, DType y_dtype, cpu::ScaleKind sk) const {
    return one_row(w.data(), N, K, x.data(), y, y_dtype, sk, scale.data(),
                   bias.empty() ? nullptr : bias.data());
  }
};

Problem make(int64_t N, int64_t K, uint64_t seed) {
  Problem p{N, K, {}, {}, {}, {}};
  for (int64_t i = 0; i < N * K; ++i) p.w.push_back(float_to_bf16_bits(value(uint64_t(i), seed)));
  for (int64_t k = 0; k < K; ++k) p.x.push_back(value(uint64_t(k), seed + 1));
  for (int64_t n = 0; n < N; ++n) {
    p.scale.push_back(0.5f + std::fabs(value(uint64_t(n), seed + 2)));
    p.bias.push_back(value(uint64_t(n), seed + 3));
  }
  return p;
}

// Runs body with the dot kernel allowed, restoring the setting; skips where
// this CPU or the dispatched target has no dot kernel.
template <class F>
void with_dot(F&& body) {
  const bool saved = cpu::bf16_dot();
  cpu::set_bf16_dot(true);
  if (!cpu::bf16_dot_active()) {
    cpu::set_bf16_dot(saved);
    GTEST_SKIP() << "no AVX512-BF16 dot kernel on this CPU or dispatch target";
  }
  body();
  cpu::set_bf16_dot(saved);
}

// x rounded as the kernel documents: x_hi = bf16(x), x_lo = bf16(x - x_hi).
double two_parts(float x) {
  const float hi = bf16_bits_to_float(float_to_bf16_bits(x));
  const float lo = bf16_bits_to_float(float_to_bf16_bits(x - hi));
  return double(hi) + double(lo);
}

TEST(GemvDot, MatchesTheTwoPartReferenceForEveryTailScaleAndOutput) {
  with_dot([] {
    for (int64_t K : {1, 7, 31, 32, 33, 64, 300, 1000, 4096, 4097, 8192})
      for (auto sk : {cpu::ScaleKind::None, cpu::ScaleKind::Tensor, cpu::ScaleKind::Row})
        for (bool bias : {false, true}) {
          SCOPED_TRACE("K " + std::to_string(K) + " scale " + std::to_string(int(sk)) + " bias " +
                       std::to_string(bias));
          Problem p = make(37, K, uint64_t(K));
          if (!bias) p.bias.clear();
          std::vector<float> y(size_t(p.N), -1.0f);
          const cpu::GemvArgs a = p.args(y.data(), DType::Float32, sk);
          ASSERT_TRUE(cpu::gemv_rows_dot(DType::BFloat16, a, 0, p.N, cpu::gemv_rows_bf16_exact));
          for (int64_t n = 0; n < p.N; ++n) {
            double s = 0, mag = 0, s_exact = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double w = bf16_bits_to_float(p.w[size_t(n * K + k)]);
              s += w * two_parts(p.x[size_t(k)]);
              s_exact += w * double(p.x[size_t(k)]);
              mag += std::fabs(w * double(p.x[size_t(k)]));
            }
            const double sc = sk == cpu::ScaleKind::Tensor ? p.scale[0]
                              : sk == cpu::ScaleKind::Row  ? p.scale[size_t(n)]
                                                           : 1.0;
            const double b = bias ? p.bias[size_t(n)] : 0.0;
            // float32 sums of exact products, and the two-part x within 2^-17
            // of each term of the exact sum.
            EXPECT_NEAR(y[size_t(n)], s * sc + b, (mag * sc + std::fabs(b)) * 2e-6) << "row " << n;
            EXPECT_NEAR(y[size_t(n)], s_exact * sc + b, (mag * sc + std::fabs(b)) * 1e-5) << "row " << n;
          }
        }
  });
}

TEST(GemvDot, RoundsXToSixteenSignificantBits) {
  with_dot([] {
    // 1 + 2^-9 + 2^-17 + 2^-23: x_hi = 1, x_lo = bf16(2^-9 + 2^-17 + 2^-23) = 2^-9 + 2^-16.
    Problem p{1, 1, {float_to_bf16_bits(1.0f)}, {1.0f + 0x1p-9f + 0x1p-17f + 0x1p-23f}, {}, {}};
    float y = 0;
    ASSERT_TRUE(cpu::gemv_rows_dot(DType::BFloat16, p.args(&y, DType::Float32, cpu::ScaleKind::None), 0, 1,
                                   cpu::gemv_rows_bf16_exact));
    EXPECT_EQ(y, 1.0f + 0x1p-9f + 0x1p-16f);
    // With the dot kernel off, the same row is exact.
    cpu::set_bf16_dot(false);
    cpu::gemv_rows_bf16(p.args(&y, DType::Float32, cpu::ScaleKind::None), 0, 1);
    EXPECT_EQ(y, p.x[0]);
  });
}

TEST(GemvDot, AnXOfBF16ValuesIsExactInOnePart) {
  with_dot([] {
    for (int64_t K : {257, 8200}) {  // 8200: one part beyond 16 KiB, rows two at a time
      SCOPED_TRACE("K " + std::to_string(K));
      Problem p = make(19, K, 5);
      for (float& v : p.x) v = bf16_bits_to_float(float_to_bf16_bits(v));
      std::vector<float> y(size_t(p.N)), y_off(size_t(p.N));
      ASSERT_TRUE(cpu::gemv_rows_dot(DType::BFloat16, p.args(y.data(), DType::BFloat16, cpu::ScaleKind::Row),
                                     0, p.N, cpu::gemv_rows_bf16_exact));
      for (int64_t n = 0; n < p.N; ++n) {
        double s = 0, mag = 0;
        for (int64_t k = 0; k < p.K; ++k) {
          const double t = double(bf16_bits_to_float(p.w[size_t(n * p.K + k)])) * p.x[size_t(k)];
          s += t;
          mag += std::fabs(t);
        }
        const double want = s * p.scale[size_t(n)] + p.bias[size_t(n)];
        // bf16 output: the stored value is the float32 result rounded once.
        const float got = bf16_bits_to_float(reinterpret_cast<const uint16_t*>(y.data())[n]);
        EXPECT_NEAR(got, want, std::fabs(want) / 256 + mag * p.scale[size_t(n)] * 1e-6) << "row " << n;
      }
    }
  });
}

TEST(GemvDot, InfiniteWeightsAndNonFiniteXFollowIEEE) {
  with_dot([] {
    const float inf = std::numeric_limits<float>::infinity();
    // Row 0 holds +inf where x = 2 (x_lo = 0) beside an x that needs two parts:
    // the sum is +inf, not the NaN of inf * 0. Row 1: inf * 0 is NaN.
    Problem p = make(2, 40, 9);
    p.x[3] = 2.0f;
    p.x[5] = 1.0f + 0x1p-12f;
    p.w[3] = float_to_bf16_bits(inf);
    p.x[7] = 0.0f;
    p.w[40 + 7] = float_to_bf16_bits(inf);
    p.bias.clear();
    std::vector<float> y(2);
    ASSERT_TRUE(cpu::gemv_rows_dot(DType::BFloat16, p.args(y.data(), DType::Float32, cpu::ScaleKind::None), 0,
                                   2, cpu::gemv_rows_bf16_exact));
    EXPECT_EQ(y[0], inf);
    EXPECT_TRUE(std::isnan(y[1]));
    // An x holding inf or NaN is left to the exact kernel.
    for (float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
      Problem q = make(3, 50, 11);
      q.x[17] = bad;
      EXPECT_FALSE(cpu::gemv_rows_dot(DType::BFloat16, q.args(y.data(), DType::Float32, cpu::ScaleKind::None),
                                      0, 3, cpu::gemv_rows_bf16_exact));
    }
  });
}

// Every code of an FP8 format (but NaN: row 1 holds it) in a row against
// two-part x, with tails: the codes decode exactly, the sign included.
template <class F8>
void check_fp8_codes(DType wd, void (*exact)(const cpu::GemvArgs&, int64_t, int64_t)) {
  // Past 4096: two parts of x beyond 16 KiB, rows read two at a time.
  for (int64_t K : {1, 63, 64, 65, 255, 256, 1000, 3072, 4096, 4097, 8197}) {
    SCOPED_TRACE(std::string(name(wd)) + " K " + std::to_string(K));
    const int64_t N = 3;
    std::vector<uint8_t> w(size_t(N * K));
    std::vector<float> x(static_cast<size_t>(K)), scale(static_cast<size_t>(N)), y(static_cast<size_t>(N));
    for (int64_t k = 0; k < K; ++k) {
      x[size_t(k)] = value(uint64_t(k), uint64_t(K));
      for (int64_t n = 0; n < N; ++n) {
        uint8_t c = uint8_t((k * 37 + n * 101) % 256);
        if (std::isnan(float(F8::from_bits(c))) || std::isinf(float(F8::from_bits(c)))) c = uint8_t(c & 0x81);
        w[size_t(n * K + k)] = c;
      }
    }
    for (int64_t n = 0; n < N; ++n) scale[size_t(n)] = 0.25f * float(n + 1);
    if (K > 10) w[size_t(K + 10)] = 0x7F;  // a NaN code in row 1 (e4m3fn; e5m2: NaN as well)
    const cpu::GemvArgs a = one_row(w.data(), N, K, x.data(), y.data(), DType::Float32, cpu::ScaleKind::Row,
                                    scale.data(), nullptr);
    ASSERT_TRUE(cpu::gemv_rows_dot(wd, a, 0, N, exact));
    for (int64_t n = 0; n < N; ++n) {
      if (n == 1 && K > 10) {
        EXPECT_TRUE(std::isnan(y[1]));
        continue;
      }
      double s = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double wv = double(float(F8::from_bits(w[size_t(n * K + k)])));
        s += wv * two_parts(x[size_t(k)]);
        mag += std::fabs(wv * x[size_t(k)]);
      }
      EXPECT_NEAR(y[size_t(n)], s * scale[size_t(n)], mag * scale[size_t(n)] * 2e-6) << "row " << n;
    }
  }
}

TEST(GemvDot, FP8EveryCodeDecodesExactly) {
  with_dot([] {
    check_fp8_codes<float8_e4m3fn>(DType::Float8_e4m3fn, cpu::gemv_rows_e4m3_exact);
    check_fp8_codes<float8_e5m2>(DType::Float8_e5m2, cpu::gemv_rows_e5m2_exact);
  });
}

// A thread's share of the rows: an odd sub-range [1, N - 1) of e4m3fn rows
// ldw = K + 64 apart, one- and two-part x, one row at a time and two at a
// time; rows outside the range stay untouched.
TEST(GemvDot, FP8SubRangeOfStridedRows) {
  with_dot([] {
    for (int64_t K : {100, 4097, 8250})
      for (bool bf16_x : {false, true}) {
        SCOPED_TRACE("K " + std::to_string(K) + (bf16_x ? " one part" : " two parts"));
        const int64_t N = 7, ldw = K + 64;
        std::vector<uint8_t> w(size_t(N * ldw), 0x7F);  // NaN codes in the gaps between rows
        std::vector<float> x(static_cast<size_t>(K)), scale(static_cast<size_t>(N));
        std::vector<float> y(static_cast<size_t>(N), -7.0f);
        for (int64_t k = 0; k < K; ++k) {
          x[size_t(k)] = value(uint64_t(k), uint64_t(K));
          if (bf16_x) x[size_t(k)] = bf16_bits_to_float(float_to_bf16_bits(x[size_t(k)]));
          for (int64_t n = 0; n < N; ++n) w[size_t(n * ldw + k)] = uint8_t((k * 29 + n * 53) % 256 & 0xF7);
        }
        for (int64_t n = 0; n < N; ++n) scale[size_t(n)] = 0.5f + 0.125f * float(n);
        cpu::GemvArgs a = one_row(w.data(), N, K, x.data(), y.data(), DType::Float32, cpu::ScaleKind::Row,
                                  scale.data(), nullptr);
        a.ldw = ldw;
        ASSERT_TRUE(cpu::gemv_rows_dot(DType::Float8_e4m3fn, a, 1, N - 1, cpu::gemv_rows_e4m3_exact));
        EXPECT_EQ(y[0], -7.0f);
        EXPECT_EQ(y[size_t(N - 1)], -7.0f);
        for (int64_t n = 1; n < N - 1; ++n) {
          double s = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double wv = double(float(float8_e4m3fn::from_bits(w[size_t(n * ldw + k)])));
            s += wv * (bf16_x ? double(x[size_t(k)]) : two_parts(x[size_t(k)]));
            mag += std::fabs(wv * x[size_t(k)]);
          }
          EXPECT_NEAR(y[size_t(n)], s * scale[size_t(n)], mag * scale[size_t(n)] * 2e-6) << "row " << n;
        }
      }
  });
}

TEST(GemvDot, LeavesWhatItDoesNotCoverToTheExactKernel) {
  with_dot([] {
    float y[8];
    // Block scales and two activation rows.
    Problem q = make(2, 64, 13);
    cpu::GemvArgs a = q.args(y, DType::Float32, cpu::ScaleKind::Block);
    a.scale_ld = 1;
    EXPECT_FALSE(cpu::gemv_rows_dot(DType::BFloat16, a, 0, 2, cpu::gemv_rows_bf16_exact));
    a = q.args(y, DType::Float32, cpu::ScaleKind::None);
    a.M = 2;
    q.x.resize(128, 0.5f);
    a.x = q.x.data();
    EXPECT_FALSE(cpu::gemv_rows_dot(DType::BFloat16, a, 0, 2, cpu::gemv_rows_bf16_exact));
  });
}

}  // namespace
}  // namespace kiln
