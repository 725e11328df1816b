// grouped_mm's four rank combinations (empty first/last groups, a single
// group), FP8 experts with row scales, the few-row path, and bad offs.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/ops/grouped_linear.h"
#include "kiln/kiln.h"
#include "matmul_test_util.h"

namespace kiln {
namespace {

using test::dvals;
using test::randn_as;

Tensor offs_of(std::vector<int32_t> v) {
  return from_buffer_copy(v.data(), {int64_t(v.size())}, DType::Int32);
}

TEST(GroupedMM, TwoDByThreeD) {
  for (DType d : {DType::Float32, DType::BFloat16})
    for (auto ends : {std::vector<int32_t>{0, 3, 3, 40}, std::vector<int32_t>{2, 4, 5, 5},
                      std::vector<int32_t>{1, 1, 1, 2}}) {
      const int64_t T = ends.back() + 1, K = 33, N = 21, G = 4;  // one row past offs[-1]: zero
      const Tensor a = randn_as({T, K}, d, 70), b = randn_as({G, N, K}, d, 71).transpose(1, 2);
      const Tensor y = grouped_mm(a, b, offs_of(ends), Tensor(), Tensor(), DType::Float32);
      ASSERT_EQ(y.sizes(), (Shape{T, N}));
      const auto av = dvals(a), bv = dvals(b.contiguous()), yv = dvals(y);
      for (int64_t t = 0; t < T; ++t) {
        int64_t g = 0;
        while (g < G && t >= ends[size_t(g)]) ++g;
        for (int64_t n = 0; n < N; ++n) {
          double s = 0;
          if (g < G)
            for (int64_t k = 0; k < K; ++k) s += av[size_t(t * K + k)] * bv[size_t((g * K + k) * N + n)];
          EXPECT_NEAR(yv[size_t(t * N + n)], s, 1e-4 * (1 + std::fabs(s))) << t << "," << n;
        }
      }
    }
}

TEST(GroupedMM, FP8ExpertsWithRowScales) {
  const test::Bf16Gemm exact(false);  // (rounding x: MixedGroupSizesWithTheBf16Gemm)
  const int64_t T = 6, K = 70, N = 24, G = 3;
  const Tensor a = randn_as({T, K}, DType::Float32, 72);
  const Tensor wf = randn_as({G, N, K}, DType::Float32, 73);
  auto [q, s] = quantize_fp8(wf, QuantGranularity::Row);
  const Tensor bias = randn_as({G, N}, DType::Float32, 74);
  const Tensor y = grouped_mm(a, q.transpose(1, 2), offs_of({1, 1, 6}), bias, s);
  const auto av = dvals(a), wv = dvals(dequantize(q, s)), bv = dvals(bias), yv = dvals(y);
  const int32_t ends[] = {1, 1, 6};
  for (int64_t t = 0; t < T; ++t) {
    const int64_t g = t < ends[0] ? 0 : t < ends[1] ? 1 : 2;
    for (int64_t n = 0; n < N; ++n) {
      double r = bv[size_t(g * N + n)];
      for (int64_t k = 0; k < K; ++k) r += av[size_t(t * K + k)] * wv[size_t((g * N + n) * K + k)];
      EXPECT_NEAR(yv[size_t(t * N + n)], r, 1e-4 * (1 + std::fabs(r)));
    }
  }
}

// Groups of every size in one call: groups of up to 16 rows (on AMX: 3) take the
// matrix-vector kernel (3, 7 and 16 here), the others the packed GEMM on x
// packed once per group (17, 40 and 217), with N past one 192-row chunk and
// empty groups between and at both ends. With the AVX512-BF16 GEMM on (where
// the CPU has it) the packed groups' float32 x is rounded to bf16: they are
// compared with the product of bf16(x), the few-row groups with x's own.
void check_mixed_groups(bool bf16_gemm) {
  const test::Bf16Gemm mode(bf16_gemm);
  const std::vector<int32_t> ends{0, 3, 10, 10, 26, 43, 83, 300, 300};
  const int64_t T = 300, K = 300, N = 200, G = int64_t(ends.size());
  const Tensor a = randn_as({T, K}, DType::Float32, 75);
  auto [q, s] = quantize_fp8(randn_as({G, N, K}, DType::Float32, 76), QuantGranularity::Row);
  const Tensor bias = randn_as({G, N}, DType::Float32, 77);
  for (bool fp8 : {true, false}) {
    SCOPED_TRACE(fp8 ? "fp8" : "bf16");
    const Tensor w = fp8 ? q : dequantize(q, s).to(DType::BFloat16);
    const Tensor x = fp8 ? a : a.to(DType::BFloat16);
    const Tensor y = fp8 ? grouped_mm(x, w.transpose(1, 2), offs_of(ends), bias, s)
                         : grouped_mm(x, w.transpose(1, 2), offs_of(ends), bias, Tensor(), DType::Float32);
    const auto av = dvals(x), a16 = dvals(x.to(DType::BFloat16)), wv = dvals(fp8 ? dequantize(q, s) : w),
               bv = dvals(bias), yv = dvals(y);
    for (int64_t t = 0; t < T; ++t) {
      int64_t g = 0;
      while (t >= ends[size_t(g)]) ++g;
      const int64_t rows = ends[size_t(g)] - (g ? ends[size_t(g - 1)] : 0);
      const bool rounded = cpu::bf16_gemm_active() && rows > cpu::grouped_gemv_max_rows(w.dtype(), fp8);
      const auto& xv = rounded ? a16 : av;
      for (int64_t n = 0; n < N; ++n) {
        double r = bv[size_t(g * N + n)], mag = std::fabs(r);
        for (int64_t k = 0; k < K; ++k) {
          const double term = xv[size_t(t * K + k)] * wv[size_t((g * N + n) * K + k)];
          r += term;
          mag += std::fabs(term);
        }
        ASSERT_NEAR(yv[size_t(t * N + n)], r, 1e-5 * mag) << t << "," << n;
      }
    }
  }
}

TEST(GroupedMM, MixedGroupSizesTakeBothKernels) { check_mixed_groups(false); }
TEST(GroupedMM, MixedGroupSizesWithTheBf16Gemm) {
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    SCOPED_TRACE(amx ? "AMX tiles" : "AVX512-BF16");
    check_mixed_groups(true);
  }
}

TEST(GroupedMM, ThreeDByTwoDTwoDByTwoDAndBmm) {
  const Tensor a3 = randn_as({2, 4, 5}, DType::Float32, 75), b2 = randn_as({5, 9}, DType::Float32, 76);
  const Tensor y = grouped_mm(a3, b2, offs_of({4, 9}));
  const Tensor r0 = matmul(a3.select(0, 0), b2.slice(1, 0, 4)),
               r1 = matmul(a3.select(0, 1), b2.slice(1, 4, 9));
  test::expect_close(y.slice(1, 0, 4), dvals(r0), 1e-5, 1e-5);
  test::expect_close(y.slice(1, 4, 9), dvals(r1), 1e-5, 1e-5);
  const Tensor a2 = randn_as({3, 10}, DType::Float32, 77), bb = randn_as({10, 2}, DType::Float32, 78);
  const Tensor z = grouped_mm(a2, bb, offs_of({0, 6, 10}));
  ASSERT_EQ(z.sizes(), (Shape{3, 3, 2}));
  test::expect_close(z.select(0, 0), std::vector<double>(6, 0.0), 0, 0);
  test::expect_close(z.select(0, 1), dvals(matmul(a2.slice(1, 0, 6), bb.slice(0, 0, 6))), 1e-5, 1e-5);
  test::expect_close(z.select(0, 2), dvals(matmul(a2.slice(1, 6, 10), bb.slice(0, 6, 10))), 1e-5, 1e-5);
  const Tensor b3 = randn_as({2, 5, 3}, DType::Float32, 79);
  test::expect_close(grouped_mm(a3, b3), dvals(matmul(a3, b3)), 1e-5, 1e-5);
}

TEST(GroupedMM, BadInputsRaise) {
  const Tensor a = zeros({5, 4}), b = zeros({2, 4, 3});
  EXPECT_THROW(grouped_mm(a, b), ValueError);                                   // offs missing
  EXPECT_THROW(grouped_mm(a, b, offs_of({3, 2})), ValueError);                  // decreasing
  EXPECT_THROW(grouped_mm(a, b, offs_of({3, 6})), ValueError);                  // past T
  EXPECT_THROW(grouped_mm(a, b, offs_of({-1, 2})), ValueError);                 // negative
  EXPECT_THROW(grouped_mm(a, b, offs_of({3})), ValueError);                     // wrong count
  EXPECT_THROW(grouped_mm(a, b, offs_of({3, 5}).to(DType::Int64)), TypeError);  // int64 offs
  EXPECT_THROW(grouped_mm(a, zeros({2, 5, 3}), offs_of({3, 5})), ValueError);   // K mismatch
  EXPECT_THROW(grouped_mm(a, b.to(DType::BFloat16), offs_of({3, 5})), TypeError);
  EXPECT_THROW(grouped_mm(zeros({5}), b, offs_of({3, 5})), ValueError);
  EXPECT_THROW(grouped_mm(zeros({2, 5, 4}), b, offs_of({3, 5})), ValueError);  // offs with 3-D x 3-D
}

}  // namespace
}  // namespace kiln
