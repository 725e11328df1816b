// quantize_fp8 / dequantize and scaled_mm against double references: every
// granularity and scaling scheme, out dtypes, bias, K = 0, and PyTorch's checks.
#include <gtest/gtest.h>

#include <cmath>

#include "core/quant_layout.h"
#include "kiln/kiln.h"
#include "matmul_test_util.h"

namespace kiln {
namespace {

using test::dvals;
using test::randn_as;

TEST(QuantizeFP8, EveryGranularityRoundTrips) {
  for (DType d : {DType::Float8_e4m3fn, DType::Float8_e5m2})
    for (auto g : {QuantGranularity::Tensor, QuantGranularity::Row, QuantGranularity::Block}) {
      const Tensor w = randn_as({3, 200, 150}, DType::Float32, 40);
      auto [q, s] = quantize_fp8(w, g, d);
      EXPECT_EQ(q.dtype(), d);
      if (g == QuantGranularity::Tensor) { EXPECT_EQ(s.dim(), 0); }
      if (g == QuantGranularity::Row) { EXPECT_EQ(s.sizes(), (Shape{3, 200, 1})); }
      if (g == QuantGranularity::Block) { EXPECT_EQ(s.sizes(), (Shape{3, 2, 2})); }
      // Each group's largest magnitude maps to the format's max, and the
      // round trip is within half an FP8 step (relative 2^-4 / 2^-3).
      const auto wv = dvals(w), rv = dvals(dequantize(q, s));
      const double rel = d == DType::Float8_e4m3fn ? 1.0 / 16 : 1.0 / 8;
      const double smax = dvals(s.flatten())[0] * fp8_max(d);
      for (size_t i = 0; i < wv.size(); ++i) {
        ASSERT_LE(std::fabs(rv[i] - wv[i]), rel * std::fabs(wv[i]) + smax * 1e-3) << i;
      }
      // Saturation: every code is finite.
      for (double v : dvals(q)) ASSERT_TRUE(std::isfinite(v));
    }
}

// quantize_fp8_into writes the same codes and scales as quantize_fp8, into
// slices of larger buffers (as the loaders do, chunk by chunk), and touches
// nothing outside them.
TEST(QuantizeFP8, IntoSlicesMatchesQuantize) {
  for (auto g : {QuantGranularity::Tensor, QuantGranularity::Row, QuantGranularity::Block}) {
    const Tensor w = randn_as({130, 150}, DType::Float32, 41).to(DType::BFloat16);
    auto [q, s] = quantize_fp8(w, g);
    if (g == QuantGranularity::Row) {
      Tensor qa = full({200, 150}, Scalar(1.0), DType::Float8_e4m3fn);
      Tensor sa = full({200, 1}, Scalar(-1.0), DType::Float32);
      for (int64_t r0 = 0; r0 < 130; r0 += 48) {  // chunks that do not divide 130
        const int64_t n = std::min<int64_t>(48, 130 - r0);
        quantize_fp8_into(w.narrow(0, r0, n), g, qa.narrow(0, 10 + r0, n), sa.narrow(0, 10 + r0, n));
      }
      EXPECT_EQ(dvals(qa.narrow(0, 10, 130)), dvals(q));
      EXPECT_EQ(dvals(sa.narrow(0, 10, 130)), dvals(s));
      for (double v : dvals(qa.narrow(0, 0, 10))) ASSERT_EQ(v, 1.0);
      for (double v : dvals(qa.narrow(0, 140, 60))) ASSERT_EQ(v, 1.0);
      for (double v : dvals(sa.narrow(0, 0, 10))) ASSERT_EQ(v, -1.0);
    } else {
      Tensor qi = empty({130, 150}, DType::Float8_e4m3fn);
      Tensor si = empty(s.sizes(), DType::Float32);
      quantize_fp8_into(w, g, qi, si);
      EXPECT_EQ(dvals(qi), dvals(q));
      EXPECT_EQ(dvals(si), dvals(s));
    }
  }
  const Tensor w = zeros({4, 8});
  Tensor q = empty({4, 8}, DType::Float8_e4m3fn), s = empty({4, 1}, DType::Float32);
  EXPECT_THROW(quantize_fp8_into(w, QuantGranularity::Row, empty({4, 7}, DType::Float8_e4m3fn), s), ValueError);
  EXPECT_THROW(quantize_fp8_into(w, QuantGranularity::Row, empty({8, 4}, DType::Float8_e4m3fn).t(), s),
               ValueError);
  EXPECT_THROW(quantize_fp8_into(w, QuantGranularity::Row, q, empty({4}, DType::Float32)), ValueError);
  EXPECT_THROW(quantize_fp8_into(w, QuantGranularity::Row, q, empty({4, 1}, DType::BFloat16)), ValueError);
  EXPECT_THROW(quantize_fp8_into(w, QuantGranularity::Row, empty({4, 8}, DType::BFloat16), s), TypeError);
  EXPECT_EQ(quantize_chunk_rows(1 << 20), 2);
  EXPECT_EQ(quantize_chunk_rows(1 << 30), 1);
  EXPECT_EQ(quantize_chunk_rows(0), int64_t(2) << 20);
}

TEST(QuantizeFP8, ZeroGroupsAndErrors) {
  auto [q, s] = quantize_fp8(zeros({4, 4}), QuantGranularity::Row);
  for (double v : dvals(s)) EXPECT_EQ(v, 1.0);
  for (double v : dvals(q)) EXPECT_EQ(v, 0.0);
  Tensor bad = zeros({2, 2});
  bad.data<float>()[1] = NAN;
  EXPECT_THROW(quantize_fp8(bad, QuantGranularity::Tensor), ValueError);
  EXPECT_THROW(quantize_fp8(zeros({4}), QuantGranularity::Block), ValueError);
  EXPECT_THROW(quantize_fp8(zeros({4, 4}), QuantGranularity::Row, DType::BFloat16), TypeError);
  EXPECT_THROW(dequantize(q, zeros({3, 3})), ValueError);
  EXPECT_THROW(granularity_from_name("col"), ValueError);
}

// (A * sa) @ (B * sb) in double, A [M, K], B [K, N], scale layouts by shape.
std::vector<double> ref_scaled(const Tensor& a, const Tensor& b, const Tensor& sa, const Tensor& sb,
                               std::vector<double>& mag) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1), kb = (K + 127) / 128, nb = (N + 127) / 128;
  const auto av = dvals(a), bv = dvals(b), sav = dvals(sa), sbv = dvals(sb);
  std::vector<double> y(size_t(M * N), 0);
  mag.assign(y.size(), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const double s1 = sav.size() == 1            ? sav[0]
                          : int64_t(sav.size()) == M ? sav[size_t(m)]
                                                     : sav[size_t(m * kb + k / 128)];
        const double s2 = sbv.size() == 1   ? sbv[0]
                          : sb.size(0) == 1 ? sbv[size_t(n)]
                                            : sbv[size_t((k / 128) * nb + n / 128)];
        const double t = av[size_t(m * K + k)] * s1 * bv[size_t(k * N + n)] * s2;
        y[size_t(m * N + n)] += t;
        mag[size_t(m * N + n)] += std::fabs(t);
      }
  return y;
}

TEST(ScaledMM, SchemesOutDtypesAndFastPath) {
  const int64_t K = 260, N = 140;
  for (int64_t M : {1, 3, 20})
    for (int scheme = 0; scheme < 3; ++scheme)
      for (DType od : {DType::Float32, DType::BFloat16, DType::Float16}) {
        SCOPED_TRACE("M " + std::to_string(M) + " scheme " + std::to_string(scheme) + " " + name(od));
        const Tensor a = randn_as({M, K}, DType::Float8_e4m3fn, 50);
        const Tensor b = randn_as({N, K}, DType::Float8_e4m3fn, 51).t();  // column-major B
        manual_seed(52);
        Tensor sa, sb;
        if (scheme == 0)
          sa = full({}, Scalar(0.5), DType::Float32), sb = full({}, Scalar(1.5), DType::Float32);
        if (scheme == 1) sa = add(rand({M, 1}), Scalar(0.5)), sb = add(rand({1, N}), Scalar(0.5));
        if (scheme == 2) sa = add(rand({M, 3}), Scalar(0.5)), sb = add(rand({3, 2}), Scalar(0.5));
        std::vector<double> mag;
        std::vector<double> want = ref_scaled(a, b, sa, sb, mag);
        Tensor bias;
        if (od != DType::Float32) {
          bias = randn_as({N}, od, 53);
          const auto bv = dvals(bias);
          for (int64_t i = 0; i < M * N; ++i) want[size_t(i)] += bv[size_t(i % N)];
        }
        const Tensor y = scaled_mm(a, b, sa, sb, bias, Tensor(), od);
        EXPECT_EQ(y.dtype(), od);
        const double rt = od == DType::Float32 ? 0 : od == DType::BFloat16 ? 1.0 / 128 : 1.0 / 1024;
        test::expect_close(y, want, rt, 1e-6, &mag, 1e-5);
        // A row-major B gives the same result.
        test::expect_close(scaled_mm(a, b.contiguous(), sa, sb, bias, Tensor(), od), want, rt, 1e-6, &mag,
                           1e-5);
      }
}

TEST(ScaledMM, FP8OutputK0AndChecks) {
  const Tensor a = randn_as({2, 32}, DType::Float8_e4m3fn, 60),
               b = randn_as({32, 16}, DType::Float8_e4m3fn, 61);
  const Tensor one = ones({}), s = full({}, Scalar(100.0), DType::Float32);
  const Tensor y = scaled_mm(a, b, s, s, Tensor(), Tensor(), DType::Float8_e4m3fn);
  for (double v : dvals(y)) EXPECT_LE(std::fabs(v), 448.0);            // saturated
  EXPECT_EQ(scaled_mm(a, b, one, one).dtype(), DType::Float8_e4m3fn);  // default out: A's dtype
  const Tensor z = scaled_mm(zeros({3, 0}, DType::Float8_e4m3fn), zeros({0, 4}, DType::Float8_e4m3fn), one,
                             one, Tensor(), Tensor(), DType::Float32);
  test::expect_close(z, std::vector<double>(12, 0.0), 0, 0);
  auto f32 = std::optional<DType>(DType::Float32);
  EXPECT_THROW(scaled_mm(a, b, one, one, ones({16}, DType::BFloat16), Tensor(), f32), ValueError);
  EXPECT_THROW(scaled_mm(a, b, one, one, ones({15}, DType::BFloat16), Tensor(), DType::BFloat16), ValueError);
  EXPECT_THROW(scaled_mm(a, b, one, one, ones({16}, DType::Float32), Tensor(), DType::BFloat16), TypeError);
  EXPECT_THROW(scaled_mm(a.to(DType::Float32), b, one, one, Tensor(), Tensor(), f32), TypeError);
  EXPECT_THROW(
      scaled_mm(a.to(DType::Float8_e5m2), b.to(DType::Float8_e5m2), one, one, Tensor(), Tensor(), f32),
      TypeError);
  EXPECT_THROW(scaled_mm(a, b.slice(0, 0, 31), one, one, Tensor(), Tensor(), f32), ValueError);
  EXPECT_THROW(scaled_mm(a, b, ones({}, DType::BFloat16), one, Tensor(), Tensor(), f32), TypeError);
  EXPECT_THROW(scaled_mm(a, b, ones({2, 1}), ones({16, 1}), Tensor(), Tensor(), f32), ValueError);
  EXPECT_THROW(scaled_mm(a, b, one, one, Tensor(), Tensor(), DType::Int32), TypeError);
  EXPECT_THROW(scaled_mm(a.view({64}), b, one, one), ValueError);
}

}  // namespace
}  // namespace kiln
