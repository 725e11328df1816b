// scaled_dot_product_attention against a float64 reference that materializes
// the [L, S] scores: decode (one query, long KV, GQA, splits over KV ranges),
// prefill (causal, q_len != kv_len), masks, broadcasting, odd head dims,
// dropout reproducibility, the out= entry with a bf16 KV cache, bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpu/amx.h"
#include "cpu/attention_amx.h"
#include "kiln/kiln.h"
#include "matmul_test_util.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& x) {
  const Tensor d = x.to(DType::Float64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

Tensor rnd(const Shape& s, uint64_t seed, DType dt = DType::Float32) {
  Generator g(seed);
  return randn(s, DType::Float32, &g).to(dt);
}

// q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] (contiguous, any dtype),
// mask additive [B, Hq, L, S] (or empty); Hq = G * Hk.
std::vector<double> reference(const Tensor& q, const Tensor& k, const Tensor& v,
                              const std::vector<double>& mask, bool causal, double scale) {
  const int64_t B = q.size(0), Hq = q.size(1), L = q.size(2), E = q.size(3), Hk = k.size(1), S = k.size(2),
                Ev = v.size(3), G = Hq / Hk;
  const std::vector<double> qv = vals(q), kv = vals(k), vv = vals(v);
  std::vector<double> out(size_t(B * Hq * L * Ev), 0.0), s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t hk = h / G;
        double m = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t e = 0; e < E; ++e)
            d += qv[size_t(((b * Hq + h) * L + i) * E + e)] * kv[size_t(((b * Hk + hk) * S + j) * E + e)];
          d *= scale;
          if (!mask.empty()) d += mask[size_t(((b * Hq + h) * L + i) * S + j)];
          if (causal && j > i) d = -INFINITY;
          s[size_t(j)] = d;
          m = std::max(m, d);
        }
        if (m == -INFINITY) continue;  // fully masked: zeros
        double z = 0;
        for (int64_t j = 0; j < S; ++j) z += s[size_t(j)] = std::exp(s[size_t(j)] - m);
        for (int64_t j = 0; j < S; ++j)
          for (int64_t c = 0; c < Ev; ++c)
            out[size_t(((b * Hq + h) * L + i) * Ev + c)] +=
                s[size_t(j)] / z * vv[size_t(((b * Hk + hk) * S + j) * Ev + c)];
      }
  return out;
}

void expect_near_all(const Tensor& got, const std::vector<double>& ref, double tol) {
  const std::vector<double> g = vals(got);
  ASSERT_EQ(g.size(), ref.size());
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - ref[i]));
  EXPECT_LE(worst, tol);
}

TEST(Attention, DecodeGqaLengths) {
  // Query heads per KV head 1..8: the rows of one kernel call, read in address
  // order for the first 4 on 16-register targets and register-blocked after.
  for (int64_t group : {1, 2, 3, 4, 5, 8}) {
    for (int64_t S : {1, 7, 33, 1000, 3000}) {
      if (group != 4 && S == 3000) continue;
      for (DType dt : {DType::Float32, DType::BFloat16}) {
        SCOPED_TRACE(testing::Message() << "group=" << group << " S=" << S << " " << name(dt));
        const Tensor q = rnd({1, 2 * group, 1, 128}, 1, dt), k = rnd({1, 2, S, 128}, 2, dt),
                     v = rnd({1, 2, S, 128}, 3, dt);
        const Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, std::nullopt, true);
        EXPECT_EQ(o.sizes(), (Shape{1, 2 * group, 1, 128}));
        EXPECT_EQ(o.dtype(), dt);
        expect_near_all(o, reference(q, k, v, {}, false, 1.0 / std::sqrt(128.0)),
                        dt == DType::Float32 ? 2e-5 : 1e-2);
      }
    }
  }
}

TEST(Attention, DecodeTwoRunsHeadDimsAndLengths) {
  // Decode reads its key range as two runs in lockstep (a tile holds 16 keys of
  // each): lengths around one and two tiles leave the second run short or
  // empty in the last tile; head dims 8 and 24 take the one-vector loaders
  // and remainders, 64 and 128 the bf16 pairs; f16 takes the widened tiles.
  for (int64_t E : {8, 24, 64, 128}) {
    for (int64_t S : {31, 32, 33, 47, 48, 49, 64, 65, 100, 257}) {
      for (int64_t group : {1, 3, 4}) {
        for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16}) {
          SCOPED_TRACE(testing::Message() << "E=" << E << " S=" << S << " group=" << group << " " << name(dt));
          const Tensor q = rnd({1, group, 1, E}, 31, dt), k = rnd({1, 1, S, E}, 32, dt), v = rnd({1, 1, S, E}, 33, dt);
          const Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, std::nullopt, true);
          expect_near_all(o, reference(q, k, v, {}, false, 1.0 / std::sqrt(double(E))),
                          dt == DType::Float32 ? 2e-5 : 1e-2);
        }
      }
    }
  }
}

TEST(Attention, PrefillCausalAndUneven) {
  // L == S, and L != S (top-left aligned as torch), with GQA and odd sizes.
  for (auto [L, S] : {std::pair<int64_t, int64_t>{37, 37}, {5, 9}, {9, 5}, {70, 70}}) {
    SCOPED_TRACE(testing::Message() << "L=" << L << " S=" << S);
    const Tensor q = rnd({2, 4, L, 64}, 4), k = rnd({2, 2, S, 64}, 5), v = rnd({2, 2, S, 64}, 6);
    const Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true, std::nullopt, true);
    expect_near_all(o, reference(q, k, v, {}, true, 0.125), 2e-5);
  }
}

TEST(Attention, OddHeadDimsAndScale) {
  const Tensor q = rnd({1, 3, 6, 33}, 7), k = rnd({1, 3, 50, 33}, 8), v = rnd({1, 3, 50, 20}, 9);
  const Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, 0.3);
  EXPECT_EQ(o.sizes(), (Shape{1, 3, 6, 20}));
  expect_near_all(o, reference(q, k, v, {}, false, 0.3), 2e-5);
}

TEST(Attention, BoolAndAdditiveMasks) {
  const int64_t L = 12, S = 40;
  const Tensor q = rnd({2, 4, L, 16}, 10), k = rnd({2, 4, S, 16}, 11), v = rnd({2, 4, S, 16}, 12);
  // Bool [L, S] with row 3 fully masked (-> zeros, as torch's safe softmax).
  std::vector<uint8_t> mb(size_t(L * S));
  std::mt19937 g(3);
  for (auto& x : mb) x = (g() % 3) != 0;
  for (int64_t j = 0; j < S; ++j) mb[size_t(3 * S + j)] = 0;
  const Tensor bm = from_buffer_copy(mb.data(), {L, S}, DType::Bool);
  std::vector<double> full;
  for (int64_t bh = 0; bh < 8; ++bh)
    for (size_t i = 0; i < mb.size(); ++i) full.push_back(mb[i] ? 0.0 : -INFINITY);
  const Tensor o = scaled_dot_product_attention(q, k, v, bm);
  expect_near_all(o, reference(q, k, v, full, false, 0.25), 2e-5);
  for (double x : std::vector<double>(vals(o.select(0, 0).select(0, 0).select(0, 3)))) EXPECT_EQ(x, 0.0);
  // Additive [1, 4, 1, S] broadcast over batch and queries.
  const Tensor am = rnd({1, 4, 1, S}, 13);
  const std::vector<double> av = vals(am);
  std::vector<double> fa;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) fa.push_back(av[size_t(h * S + j)]);
  expect_near_all(scaled_dot_product_attention(q, k, v, am), reference(q, k, v, fa, false, 0.25), 2e-5);
}

TEST(Attention, Broadcasting) {
  // q [1, 1, 64] with k [2, 1, 1, 64]: the batch broadcasts -> [2, 1, 1, 64].
  const Tensor q = rnd({1, 1, 64}, 14), k = rnd({2, 1, 1, 64}, 15), v = rnd({2, 1, 1, 64}, 16);
  const Tensor o = scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(o.sizes(), (Shape{2, 1, 1, 64}));
  expect_near_all(o, vals(v), 1e-6);  // one key: the output is its value
  // One query head against 4 KV heads (heads broadcast without enable_gqa), and 2-D inputs.
  const Tensor q1 = rnd({1, 1, 3, 8}, 17), k4 = rnd({1, 4, 10, 8}, 18), v4 = rnd({1, 4, 10, 8}, 19);
  const Tensor o4 = scaled_dot_product_attention(q1, k4, v4);
  EXPECT_EQ(o4.sizes(), (Shape{1, 4, 3, 8}));
  expect_near_all(o4, reference(q1.expand({1, 4, 3, 8}).contiguous(), k4, v4, {}, false, 1 / std::sqrt(8.0)),
                  2e-5);
  const Tensor o2 = scaled_dot_product_attention(q1.select(0, 0).select(0, 0), k4.select(0, 0).select(0, 1),
                                                 v4.select(0, 0).select(0, 1));
  EXPECT_EQ(o2.sizes(), (Shape{3, 8}));
  expect_near_all(o2, vals(o4.select(0, 0).select(0, 1)), 1e-6);
}

TEST(Attention, NonContiguousAndSplitAcrossKv) {
  // K/V as views into a wider cache ([1, 2, 4096, 64] storage, first 2500 positions).
  const Tensor kc = rnd({1, 2, 4096, 64}, 20), vc = rnd({1, 2, 4096, 64}, 21);
  const Tensor k = kc.narrow(2, 0, 2500), v = vc.narrow(2, 0, 2500);
  const Tensor q = rnd({1, 1, 8, 64}, 22).transpose(1, 2);  // [1, 8, 1, 64], strided
  const Tensor o = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, std::nullopt, true);
  expect_near_all(o, reference(q.contiguous(), k.contiguous(), v.contiguous(), {}, false, 0.125), 2e-5);
}

TEST(Attention, OutEntryWithBf16Cache) {
  KVCache cache(1, 1, 2, 600, 64, DType::BFloat16);
  const Tensor k = rnd({1, 2, 513, 64}, 23), v = rnd({1, 2, 513, 64}, 24);
  cache.append(0, k.narrow(2, 0, 500), v.narrow(2, 0, 500));
  EXPECT_EQ(cache.append(0, k.narrow(2, 500, 13), v.narrow(2, 500, 13)), 513);
  const Tensor q = rnd({1, 8, 1, 64}, 25);
  Tensor out = empty({1, 8, 1, 64});
  AttentionOptions opt;
  opt.enable_gqa = true;
  scaled_dot_product_attention_out(q, cache.keys(0), cache.values(0), opt, out);
  expect_near_all(out, reference(q, k.to(DType::BFloat16), v.to(DType::BFloat16), {}, false, 0.125), 2e-5);
  // Bottom-right causal for a chunk of 3 new queries against 513 cached keys.
  const Tensor q3 = rnd({1, 2, 3, 64}, 26);
  Tensor out3 = empty({1, 2, 3, 64});
  opt.enable_gqa = false;
  opt.is_causal = true;
  opt.causal_offset = 510;
  scaled_dot_product_attention_out(q3, cache.keys(0), cache.values(0), opt, out3);
  std::vector<double> mask;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 513; ++j) mask.push_back(j <= i + 510 ? 0.0 : -INFINITY);
  expect_near_all(out3, reference(q3, k.to(DType::BFloat16), v.to(DType::BFloat16), mask, false, 0.125),
                  2e-5);
  EXPECT_THROW(cache.append(0, k.narrow(2, 0, 100), v.narrow(2, 0, 100)), ValueError);
  cache.truncate(10);
  EXPECT_EQ(cache.keys(0).size(2), 10);
}

// Prefill over a bf16 KV cache, many rows a call (3 query heads per KV head x
// 70 positions: blocks of 32 rows, the last of 18), causal and with an
// additive mask, head dims 64 and 128: with AMX, scores and p @ V run on the
// tiles with q and p rounded to bf16, each product within 2^-8 of itself, so
// the output stays within 2^-7 of the largest |v| (measured: up to 2^-9.5); with the
// bf16 GEMM switched off, or without AMX, the FMA kernels keep 2e-5.
TEST(Attention, PrefillOverBf16CacheOnEachUnit) {
  for (const bool tiles : {true, false}) {
    const test::Bf16Gemm unit(tiles);
    const bool amx = tiles && cpu::AttnAmx::usable(64, 64);
    for (const int64_t E : {64, 128}) {
      SCOPED_TRACE(testing::Message() << (amx ? "AMX tiles" : "FMA") << " E=" << E);
      const int64_t L = 70;
      const Tensor q = rnd({1, 6, L, E}, 40), k = rnd({1, 2, L, E}, 41, DType::BFloat16),
                   v = rnd({1, 2, L, E}, 42, DType::BFloat16);
      std::vector<double> mask(size_t(6 * L * L));
      std::mt19937 g(5);
      for (auto& m : mask) m = double(int(g() % 7) - 3) * 0.25;
      const Tensor mt = from_buffer_copy(std::vector<float>(mask.begin(), mask.end()).data(), {1, 6, L, L},
                                         DType::Float32);
      const double scale = 1.0 / std::sqrt(double(E));
      double vmax = 0;
      for (double x : vals(v)) vmax = std::max(vmax, std::abs(x));
      const double tol = amx ? 0x1p-7 * vmax : 2e-5;
      AttentionOptions opt;
      opt.enable_gqa = true;
      opt.is_causal = true;
      Tensor out = empty({1, 6, L, E});
      scaled_dot_product_attention_out(q, k, v, opt, out);
      expect_near_all(out, reference(q, k, v, {}, true, scale), tol);
      opt.is_causal = false;
      opt.attn_mask = mt;
      scaled_dot_product_attention_out(q, k, v, opt, out);
      expect_near_all(out, reference(q, k, v, mask, false, scale), tol);
    }
  }
}

TEST(Attention, DropoutSeeded) {
  const Tensor q = rnd({1, 2, 4, 16}, 27), k = rnd({1, 2, 30, 16}, 28), v = rnd({1, 2, 30, 16}, 29);
  Generator g1(7), g2(7);
  const std::vector<double> a =
      vals(scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, std::nullopt, false, &g1));
  const std::vector<double> b =
      vals(scaled_dot_product_attention(q, k, v, Tensor(), 0.5, false, std::nullopt, false, &g2));
  const std::vector<double> c = vals(scaled_dot_product_attention(q, k, v));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (double x : vals(scaled_dot_product_attention(q, k, v, Tensor(), 1.0))) EXPECT_EQ(x, 0.0);
}

TEST(Attention, EmptyAndBad) {
  EXPECT_EQ(
      scaled_dot_product_attention(rnd({1, 2, 0, 8}, 1), rnd({1, 2, 5, 8}, 2), rnd({1, 2, 5, 8}, 3)).sizes(),
      (Shape{1, 2, 0, 8}));
  for (double x :
       vals(scaled_dot_product_attention(rnd({1, 2, 3, 8}, 1), rnd({1, 2, 0, 8}, 2), rnd({1, 2, 0, 8}, 3))))
    EXPECT_EQ(x, 0.0);
  const Tensor q = rnd({1, 6, 2, 8}, 1), k = rnd({1, 4, 5, 8}, 2), v = rnd({1, 4, 5, 8}, 3);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, std::nullopt, true), ValueError);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v), ValueError);
  EXPECT_THROW(scaled_dot_product_attention(rnd({1, 4, 2, 7}, 1), k, v), ValueError);
  EXPECT_THROW(scaled_dot_product_attention(rnd({1, 4, 2, 8}, 1), k.to(DType::BFloat16), v), TypeError);
  const Tensor m = ones({2, 5}, DType::Bool);
  EXPECT_THROW(scaled_dot_product_attention(rnd({1, 4, 2, 8}, 1), k, v, m, 0.0, true), ValueError);
  EXPECT_THROW(scaled_dot_product_attention(rnd({1, 4, 2, 8}, 1, DType::Int32), k.to(DType::Int32),
                                            v.to(DType::Int32)),
               TypeError);
  // float64 runs torch's math formulation and agrees with the float32 kernel.
  const Tensor y64 = scaled_dot_product_attention(rnd({1, 4, 2, 8}, 1, DType::Float64), k.to(DType::Float64),
                                                  v.to(DType::Float64));
  EXPECT_EQ(y64.dtype(), DType::Float64);
  EXPECT_TRUE(
      allclose(y64.to(DType::Float32), scaled_dot_product_attention(rnd({1, 4, 2, 8}, 1), k, v), 1e-5, 1e-5));
}

}  // namespace
}  // namespace kiln
