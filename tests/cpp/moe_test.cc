// MoE routing, permutation, un-permute and the SwiGLU FFN against a direct
// double-precision per-token evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "block_test_util.h"
#include "cpu/gemv.h"
#include "kiln/kiln.h"
#include "matmul_test_util.h"

namespace kiln {
namespace {

using test::dvals;
using test::randn_as;

TEST(MoE, RoutePermuteUnpermute) {
  const Tensor logits = randn_as({5, 8}, DType::Float32, 80);
  auto [w, ids] = moe_route(logits, 3, true);
  const auto lv = dvals(logits), wv = dvals(w), iv = dvals(ids);
  for (int64_t t = 0; t < 5; ++t) {
    std::vector<int> order(8);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return lv[size_t(t * 8 + a)] > lv[size_t(t * 8 + b)]; });
    double den = 0;
    for (int j = 0; j < 3; ++j) den += std::exp(lv[size_t(t * 8 + order[size_t(j)])]);
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(iv[size_t(t * 3 + j)], order[size_t(j)]);
      EXPECT_NEAR(wv[size_t(t * 3 + j)], std::exp(lv[size_t(t * 8 + order[size_t(j)])]) / den, 1e-6);
    }
  }
  auto [perm, offs] = moe_permute(ids, 8);
  const auto pv = dvals(perm), ov = dvals(offs);
  EXPECT_EQ(ov.back(), 15);
  for (int64_t e = 0, r = 0; e < 8; ++e)
    for (; r < ov[size_t(e)]; ++r) EXPECT_EQ(iv[size_t(pv[size_t(r)])], e);
  // Un-permute of rows that carry their slot index returns weighted sums.
  Tensor y = empty({15, 2});
  for (int64_t r = 0; r < 15; ++r)
    y.data<float>()[r * 2] = float(pv[size_t(r)]), y.data<float>()[r * 2 + 1] = 1;
  const auto uv = dvals(moe_unpermute(y, perm, w));
  for (int64_t t = 0; t < 5; ++t) {
    double s0 = 0, s1 = 0;
    for (int j = 0; j < 3; ++j) s0 += wv[size_t(t * 3 + j)] * double(t * 3 + j), s1 += wv[size_t(t * 3 + j)];
    EXPECT_NEAR(uv[size_t(t * 2)], s0, 1e-5);
    EXPECT_NEAR(uv[size_t(t * 2 + 1)], s1, 1e-6);
  }
  EXPECT_THROW(moe_route(logits, 9, true), ValueError);
  EXPECT_THROW(moe_permute(ids, 4), IndexError);
}

// The FFN per token, in double, from dequantized weights.
std::vector<double> ref_ffn(const Tensor& x, const Tensor& rw, const Tensor& w1, const Tensor& w2,
                            int64_t k) {
  const int64_t T = x.size(0), H = x.size(1), E = rw.size(0), I = w2.size(2);
  const auto xv = dvals(x), rv = dvals(rw), v1 = dvals(w1), v2 = dvals(w2);
  std::vector<double> out(size_t(T * H), 0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> l(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e)
      for (int64_t h = 0; h < H; ++h) l[size_t(e)] += rv[size_t(e * H + h)] * xv[size_t(t * H + h)];
    std::vector<int> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[size_t(a)] > l[size_t(b)]; });
    double den = 0;
    for (int64_t j = 0; j < k; ++j) den += std::exp(l[size_t(order[size_t(j)])]);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = order[size_t(j)];
      const double wt = std::exp(l[size_t(e)]) / den;
      std::vector<double> act(static_cast<size_t>(I));
      for (int64_t i = 0; i < I; ++i) {
        double g = 0, u = 0;
        for (int64_t h = 0; h < H; ++h) {
          g += v1[size_t((e * 2 * I + i) * H + h)] * xv[size_t(t * H + h)];
          u += v1[size_t((e * 2 * I + I + i) * H + h)] * xv[size_t(t * H + h)];
        }
        act[size_t(i)] = g / (1 + std::exp(-g)) * u;
      }
      for (int64_t h = 0; h < H; ++h) {
        double s = 0;
        for (int64_t i = 0; i < I; ++i) s += v2[size_t((e * H + h) * I + i)] * act[size_t(i)];
        out[size_t(t * H + h)] += wt * s;
      }
    }
  }
  return out;
}

TEST(MoE, FfnMatchesPerTokenReference) {
  // Exact float32 products: the bf16 GEMM (which rounds x; its expert groups
  // are checked in grouped_mm_test) off.
  const test::Bf16Gemm exact(false);
  const int64_t E = 6, H = 40, I = 24, k = 2;
  for (int64_t T : {1, 3, 20}) {
    const Tensor x = randn_as({T, H}, DType::Float32, 81);
    const Tensor rw = randn_as({E, H}, DType::Float32, 82);
    const Tensor w1 = mul(randn_as({E, 2 * I, H}, DType::Float32, 83), Scalar(0.2));
    const Tensor w2 = mul(randn_as({E, H, I}, DType::Float32, 84), Scalar(0.2));
    const auto want = ref_ffn(x, rw, w1, w2, k);
    test::expect_close(moe_ffn(x, rw, w1, w2, k), want, 1e-4, 1e-4);
    const Tensor b1 = w1.to(DType::BFloat16), b2 = w2.to(DType::BFloat16);
    test::expect_close(moe_ffn(x, rw, b1, b2, k), ref_ffn(x, rw, b1, b2, k), 1e-4, 1e-4);
    auto [q1, s1] = quantize_fp8(w1, QuantGranularity::Row);
    auto [q2, s2] = quantize_fp8(w2, QuantGranularity::Row);
    const Tensor y = moe_ffn(x, rw, q1, q2, k, true, s1, s2);
    test::expect_close(y, ref_ffn(x, rw, dequantize(q1, s1), dequantize(q2, s2), k), 1e-4, 1e-4);
    // Experts scanned for NaN codes (none: quantize_fp8 refuses NaN) skip the
    // kernels' per-step test and give the same bits.
    ASSERT_FALSE(fp8_has_nan_code(q1) || fp8_has_nan_code(q2));
    EXPECT_EQ(test::dvals(moe_ffn(x, rw, q1, q2, k, true, s1, s2, Fp8Codes::NoNan)), test::dvals(y));
  }
}

// Experts as ggml blocks (a GGUF file's expert stacks, run natively): the
// same sums as the FP32 FFN over their dequantization, through the block
// matrix-vector kernel (1 and 3 tokens: a row or two an expert) and the GEMM
// over widened panels (40 tokens: more than kLinearGemvMaxRows rows an
// expert); gate/up and down in different types, as Q4_K_M files mix them.
TEST(MoE, FfnOnBlockStacksMatchesItsDequantization) {
  const test::Bf16Gemm exact(false);
  const int64_t E = 4, H = 256, I = 64, k = 2;
  const std::pair<BlockType, BlockType> kinds[] = {{BlockType::Q4_K, BlockType::Q8_0},
                                                   {BlockType::Q5_0, BlockType::Q4_1},
                                                   {BlockType::Q6_K, BlockType::IQ4_NL}};
  for (const auto& [gt, dt] : kinds) {
    // Stacks [E, N, bytes]: E matrices of random blocks, one after another.
    const Tensor g2 = test::random_blocks(gt, E * 2 * I, H, 31), d2 = test::random_blocks(dt, E * H, I, 32);
    const Tensor g = g2.view({E, 2 * I, g2.size(1)}), d = d2.view({E, H, d2.size(1)});
    const Tensor gf = dequantize_blocks(g2, gt).view({E, 2 * I, H}),
                 df = dequantize_blocks(d2, dt).view({E, H, I});
    const Tensor rw = randn_as({E, H}, DType::Float32, 33);
    for (int64_t T : {1, 3, 40}) {
      // x scaled so that gate and up are O(1) over the random blocks' large
      // weights (Q6_K's: up to ~200): the FFN then carries no cancellation
      // beyond float32's own.
      const double w_rms = std::sqrt(test::dvals(mean(mul(gf, gf))).at(0));
      const Tensor x =
          mul(randn_as({T, H}, DType::Float32, 34), Scalar(1.0 / (w_rms * std::sqrt(double(H)))));
      SCOPED_TRACE(std::string(block_type_info(gt).name) + " / " + block_type_info(dt).name + ", " +
                   std::to_string(T) + " tokens");
      const Tensor y = moe_ffn_blocks(x, rw, g, gt, d, dt, k);
      test::expect_close(y, ref_ffn(x, rw, gf, df, k), 1e-4, 1e-4);
    }
  }
  const Tensor g = test::random_blocks(BlockType::Q8_0, E * 2 * I, H, 35).view({E, 2 * I, -1});
  const Tensor d = test::random_blocks(BlockType::Q8_0, E * H, I, 36).view({E, H, -1});
  const Tensor x = randn_as({2, H}, DType::Float32, 37), rw = randn_as({E, H}, DType::Float32, 38);
  EXPECT_THROW(moe_ffn_blocks(x, rw, g, BlockType::Q4_0, d, BlockType::Q8_0, k), ValueError);  // 34-byte rows
  EXPECT_THROW(moe_ffn_blocks(x, rw, d, BlockType::Q8_0, g, BlockType::Q8_0, k), ValueError);  // swapped
  EXPECT_THROW(moe_ffn_blocks(x, rw, g.to(DType::Int8), BlockType::Q8_0, d, BlockType::Q8_0, k), TypeError);
  EXPECT_THROW(moe_ffn_blocks(x, rw, g, BlockType::Q8_0, d, BlockType::Q8_0, E + 1), ValueError);
  EXPECT_THROW(moe_ffn_blocks(randn_as({2, H + 32}, DType::Float32, 39), rw, g, BlockType::Q8_0, d,
                              BlockType::Q8_0, k),
               ValueError);
}

// Enough tokens that routing and the weighted sum split across threads
// (T * E > 4096 and T * H * k > 8192) whose chunks run long enough to
// overlap: every token's routing is the bits it
// gets alone (the chunks' scratch rows do not overlap), its weighted sum the
// plain float32 loop, and the FFN stays within the reference.
TEST(MoE, ManyTokensSplitAcrossThreadsMatchOneByOne) {
  const int prev = num_threads();
  set_num_threads(4);
  const int64_t T = 4000, E = 64, H = 32, I = 16, k = 4;
  const Tensor logits = randn_as({T, E}, DType::Float32, 90);
  for (bool norm : {true, false}) {
    auto [w, ids] = moe_route(logits, k, norm);
    for (int64_t t = 0; t < T; ++t) {
      auto [w1, ids1] = moe_route(logits.narrow(0, t, 1), k, norm);
      ASSERT_EQ(dvals(w1), dvals(w.narrow(0, t, 1))) << "token " << t;
      ASSERT_EQ(dvals(ids1), dvals(ids.narrow(0, t, 1))) << "token " << t;
    }
  }
  // The weighted sum: per token, from zero, slot by slot, in float32.
  auto [w, ids] = moe_route(logits, k, true);
  auto [perm, offs] = moe_permute(ids, E);
  const Tensor yp = randn_as({T * k, H}, DType::Float32, 91);
  const Tensor u = moe_unpermute(yp, perm, w);
  std::vector<int64_t> row(size_t(T * k));
  for (int64_t r = 0; r < T * k; ++r) row[size_t(perm.data<int32_t>()[r])] = r;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < H; ++c) {
      float want = 0;
      for (int64_t j = 0; j < k; ++j)
        want += w.data<float>()[t * k + j] * yp.data<float>()[row[size_t(t * k + j)] * H + c];
      ASSERT_EQ(u.data<float>()[t * H + c], want) << "token " << t << " column " << c;
    }
  const Tensor x = randn_as({T, H}, DType::Float32, 92);
  const Tensor rw = randn_as({E, H}, DType::Float32, 93);
  const Tensor g = mul(randn_as({E, 2 * I, H}, DType::Float32, 94), Scalar(0.2));
  const Tensor d = mul(randn_as({E, H, I}, DType::Float32, 95), Scalar(0.2));
  test::expect_close(moe_ffn(x, rw, g, d, k), ref_ffn(x, rw, g, d, k), 1e-4, 1e-4);
  set_num_threads(prev);
}

// FP8 experts with ~3% subnormal codes, listed (fp8_find_subnormals): in the
// x86 Test mode the grouped kernel reads them as zero under DAZ and adds their
// terms from the list; H = 200 and I = 72 leave K tails.
TEST(MoE, FfnWithListedSubnormalCodes) {
  const test::Bf16Gemm exact(false);  // the matrix-vector kernels' subnormal modes, at every T
  const int64_t E = 5, H = 200, I = 72, k = 2;
  auto codes = [](int64_t n, uint64_t st) {
    std::vector<uint8_t> c(static_cast<size_t>(n));
    auto next = [&st] {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      return st >> 33;
    };
    for (auto& v : c) {
      const uint64_t r = next() % 100;
      v = r < 3 ? uint8_t(1 + next() % 7) : r < 4 ? 0 : uint8_t(8 + next() % 16);
      if (next() & 1) v |= 0x80;
    }
    return c;
  };
  const auto c1 = codes(E * 2 * I * H, 3), c2 = codes(E * H * I, 4);
  const Tensor q1 = from_buffer_copy(c1.data(), {E, 2 * I, H}, DType::Float8_e4m3fn);
  const Tensor q2 = from_buffer_copy(c2.data(), {E, H, I}, DType::Float8_e4m3fn);
  const Tensor s1 = add(rand({E, 2 * I}, DType::Float32), Scalar(0.5));
  const Tensor s2 = add(rand({E, H}, DType::Float32), Scalar(0.5));
  const Fp8Subnormals l1 = fp8_find_subnormals(q1), l2 = fp8_find_subnormals(q2);
  EXPECT_EQ(l1.matrices, E);
  EXPECT_GT(l1.col.size(), size_t(1000));
  const Tensor rw = randn_as({E, H}, DType::Float32, 85);
  const cpu::E4M3Subnormals saved = cpu::e4m3_subnormals();
  for (cpu::E4M3Subnormals mode : {cpu::E4M3Subnormals::Test, cpu::E4M3Subnormals::Fma}) {
    cpu::set_e4m3_subnormals(mode);
    for (int64_t T : {1, 3, 20}) {
      SCOPED_TRACE("T " + std::to_string(T));
      const Tensor x = randn_as({T, H}, DType::Float32, 86);
      const auto want = ref_ffn(x, rw, dequantize(q1, s1), dequantize(q2, s2), k);
      test::expect_close(moe_ffn(x, rw, q1, q2, k, true, s1, s2, Fp8Codes::NoNan, &l1, &l2), want, 1e-4,
                         1e-4);
    }
  }
  cpu::set_e4m3_subnormals(saved);
  const Tensor x = randn_as({2, H}, DType::Float32, 87);
  EXPECT_THROW(moe_ffn(x, rw, q1, q2, k, true, s1, s2, Fp8Codes::NoNan, &l2, &l1), ValueError);
  EXPECT_THROW(moe_ffn(x, rw, q1, q2, k, true, s1, s2, Fp8Codes::NoNan, &l1, &l1), ValueError);
  EXPECT_THROW(moe_ffn(x, rw, dequantize(q1, s1), dequantize(q2, s2), k, true, Tensor(), Tensor(),
                       Fp8Codes::Unchecked, &l1, nullptr),
               TypeError);
}

}  // namespace
}  // namespace kiln
