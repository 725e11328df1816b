// Layer pieces against float64 references: rms_norm, layer_norm, SwiGLU,
// embedding (f32 / bf16 / FP8 tables with row scales), rotary embeddings
// (tables, Llama-3 / linear scaling, half-split and interleaved, partial),
// batch_norm (training + running stats, eval) and mse_loss.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "kiln/kiln.h"

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

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rtol, double atol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], atol + rtol * std::abs(b[i])) << i;
}

TEST(Nn, RmsNormAndLayerNorm) {
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64}) {
    for (int64_t n : {1, 5, 64, 1000}) {
      const Tensor x = rnd({3, 2, n}, 1, dt), w = rnd({n}, 2, dt), b = rnd({n}, 3, dt);
      const std::vector<double> xv = vals(x), wv = vals(w), bv = vals(b);
      std::vector<double> r1, r2;
      for (int64_t r = 0; r < 6; ++r) {
        double ss = 0, s = 0;
        for (int64_t i = 0; i < n; ++i) {
          ss += xv[size_t(r * n + i)] * xv[size_t(r * n + i)];
          s += xv[size_t(r * n + i)];
        }
        const double mean = s / double(n);
        double var = 0;
        for (int64_t i = 0; i < n; ++i)
          var += (xv[size_t(r * n + i)] - mean) * (xv[size_t(r * n + i)] - mean);
        var /= double(n);
        for (int64_t i = 0; i < n; ++i) {
          r1.push_back(xv[size_t(r * n + i)] / std::sqrt(ss / double(n) + 1e-6) * wv[size_t(i)]);
          r2.push_back((xv[size_t(r * n + i)] - mean) / std::sqrt(var + 1e-5) * wv[size_t(i)] +
                       bv[size_t(i)]);
        }
      }
      const double tol = dt == DType::BFloat16  ? 1e-2
                         : dt == DType::Float16 ? 2e-3
                         : dt == DType::Float32 ? 2e-6
                                                : 1e-12;
      const Tensor y1 = rms_norm(x, {n}, w, 1e-6), y2 = layer_norm(x, {n}, w, b, 1e-5);
      EXPECT_EQ(y1.dtype(), dt);
      expect_close(vals(y1), r1, tol, tol);
      expect_close(vals(y2), r2, tol, tol);
      Tensor o = empty({3, 2, n}, dt);
      rms_norm_out(x, w, 1e-6, o);
      expect_close(vals(o), r1, tol, tol);
    }
  }
  // Two trailing dims, no weight; default eps; a non-contiguous input.
  const Tensor x = rnd({4, 3, 5}, 4).transpose(0, 2);  // [5, 3, 4]
  const std::vector<double> xv = vals(x);
  const std::vector<double> y = vals(rms_norm(x, {3, 4}));
  for (int64_t r = 0; r < 5; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < 12; ++i) ss += xv[size_t(r * 12 + i)] * xv[size_t(r * 12 + i)];
    for (int64_t i = 0; i < 12; ++i)
      EXPECT_NEAR(y[size_t(r * 12 + i)], xv[size_t(r * 12 + i)] / std::sqrt(ss / 12 + 1.1920929e-07), 2e-6);
  }
  EXPECT_THROW(rms_norm(x, {5}), ValueError);
  const Tensor w3 = ones({3});
  EXPECT_THROW(layer_norm(x, {4}, w3), ValueError);
  EXPECT_THROW(rms_norm(arange(Scalar(int64_t(0)), Scalar(int64_t(4))), {4}), TypeError);
}

TEST(Nn, Swiglu) {
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64}) {
    const Tensor g = mul(rnd({3, 1037}, 5), Scalar(8.0)).to(dt), u = rnd({3, 1037}, 6, dt);
    std::vector<double> ref;
    const std::vector<double> gv = vals(g), uv = vals(u);
    for (size_t i = 0; i < gv.size(); ++i) ref.push_back(gv[i] / (1 + std::exp(-gv[i])) * uv[i]);
    const double tol = dt == DType::BFloat16  ? 8e-3
                       : dt == DType::Float16 ? 1e-3
                       : dt == DType::Float32 ? 1e-6
                                              : 1e-14;
    expect_close(vals(swiglu(g, u)), ref, tol, dt == DType::Float16 ? 1e-7 : 1e-30);
  }
  const float big[4] = {-200.f, 200.f, 0.f, NAN};
  const Tensor g = from_buffer_copy(big, {4}, DType::Float32);
  const std::vector<double> y = vals(swiglu(g, ones({4})));
  EXPECT_EQ(y[0], 0.0);
  EXPECT_EQ(y[1], 200.0);
  EXPECT_EQ(y[2], 0.0);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_THROW(swiglu(g, ones({5})), ValueError);
}

TEST(Nn, Embedding) {
  const Tensor w = rnd({50, 24}, 7);
  const int64_t ids[5] = {0, 49, 7, 7, 3};
  const Tensor idx = from_buffer_copy(ids, {5}, DType::Int64).view({5, 1});
  const std::vector<double> wv = vals(w);
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float8_e4m3fn, DType::Float8_e5m2}) {
    const Tensor wt = w.to(dt);
    const std::vector<double> wq = vals(wt);
    const Tensor scale = kiln::abs(rnd({50}, 8));
    const std::vector<double> sv = vals(scale);
    const Tensor y = embedding(idx, wt, is_fp8(dt) ? scale : Tensor());
    EXPECT_EQ(y.sizes(), (Shape{5, 1, 24}));
    EXPECT_EQ(y.dtype(), is_fp8(dt) ? DType::Float32 : dt);
    const std::vector<double> yv = vals(y);
    for (int r = 0; r < 5; ++r)
      for (int j = 0; j < 24; ++j) {
        const double want = wq[size_t(ids[r] * 24 + j)] * (is_fp8(dt) ? float(sv[size_t(ids[r])]) : 1.0);
        EXPECT_NEAR(yv[size_t(r * 24 + j)], want, 1e-6 * std::abs(want)) << name(dt);
      }
  }
  // FP8 into a bf16 output.
  const Tensor y = embedding(idx, w.to(DType::Float8_e4m3fn), Tensor(), DType::BFloat16);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  const int64_t bad[1] = {50};
  EXPECT_THROW(embedding(from_buffer_copy(bad, {1}, DType::Int64), w), IndexError);
  EXPECT_THROW(embedding(ones({2}), w), TypeError);
}

TEST(Nn, RopeTablesAndScaling) {
  const std::vector<double> f = vals(rope_inv_freq(8, 10000.0));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f[size_t(i)], std::pow(10000.0, -2.0 * i / 8), 2e-7 * f[size_t(i)]);
  RopeScaling lin;
  lin.kind = RopeScaling::Kind::Linear;
  lin.factor = 4;
  const std::vector<double> fl = vals(rope_inv_freq(8, 10000.0, lin));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(fl[size_t(i)], f[size_t(i)] / 4, 1e-7 * f[size_t(i)]);
  // Llama-3.1 settings on a 128-dim head: high frequencies kept, low divided by 8, blend between.
  RopeScaling l3;
  l3.kind = RopeScaling::Kind::Llama3;
  l3.factor = 8;
  l3.low_freq_factor = 1;
  l3.high_freq_factor = 4;
  l3.original_max_position_embeddings = 8192;
  const std::vector<double> base = vals(rope_inv_freq(128, 500000.0)),
                            sc = vals(rope_inv_freq(128, 500000.0, l3));
  for (int i = 0; i < 64; ++i) {
    const double wl = 2 * std::numbers::pi / base[size_t(i)];
    double want = base[size_t(i)];
    if (wl > 8192) {
      want /= 8;
    } else if (wl >= 2048) {
      const double s = (8192 / wl - 1) / 3;
      want = (1 - s) * want / 8 + s * want;
    }
    EXPECT_NEAR(sc[size_t(i)], want, 1e-6 * want) << i;
  }
  const RopeTables t = rope_cos_sin(5, 3, rope_inv_freq(8, 10000.0));
  const std::vector<double> c = vals(t.cos), s = vals(t.sin);
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(c[size_t(p * 4 + i)], std::cos((5 + p) * float(f[size_t(i)])), 1e-6);
      EXPECT_NEAR(s[size_t(p * 4 + i)], std::sin((5 + p) * float(f[size_t(i)])), 1e-6);
    }
  EXPECT_THROW(rope_inv_freq(7), ValueError);
}

TEST(Nn, RopeApply) {
  const int64_t T = 5, H = 3, D = 12;
  for (int64_t rd : {12, 8}) {  // full and partial rotary dims
    for (bool inter : {false, true}) {
      const Tensor x = rnd({2, T, H, D}, 9);
      const RopeTables t = rope_cos_sin(0, T, rope_inv_freq(rd, 10000.0));
      const std::vector<double> xv = vals(x), c = vals(t.cos), s = vals(t.sin);
      const std::vector<double> y = vals(apply_rotary_emb(x, t.cos, t.sin, inter));
      const int64_t half = rd / 2;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t p = 0; p < T; ++p)
          for (int64_t h = 0; h < H; ++h) {
            const size_t o = size_t(((b * T + p) * H + h) * D);
            for (int64_t i = 0; i < half; ++i) {
              const size_t ia = o + size_t(inter ? 2 * i : i), ib = o + size_t(inter ? 2 * i + 1 : i + half);
              const double cc = c[size_t(p * half + i)], ss = s[size_t(p * half + i)];
              EXPECT_NEAR(y[ia], xv[ia] * cc - xv[ib] * ss, 1e-5);
              EXPECT_NEAR(y[ib], xv[ib] * cc + xv[ia] * ss, 1e-5);
            }
            for (int64_t i = rd; i < D; ++i) EXPECT_EQ(y[o + size_t(i)], xv[o + size_t(i)]);
          }
    }
  }
  // In place on a strided view (q out of a fused projection), bf16.
  const Tensor qkv = rnd({T, 3 * H * D}, 10, DType::BFloat16);
  const Tensor q = qkv.narrow(1, 0, H * D).view({T, H, D});
  const Tensor want = apply_rotary_emb(q.contiguous(), rope_cos_sin(0, T, rope_inv_freq(D)).cos,
                                       rope_cos_sin(0, T, rope_inv_freq(D)).sin);
  const RopeTables t = rope_cos_sin(0, T, rope_inv_freq(D));
  apply_rotary_emb_(q, t.cos, t.sin);
  EXPECT_EQ(vals(q), vals(want));
  EXPECT_THROW(apply_rotary_emb(rnd({T, H, 4}, 1), t.cos, t.sin), ValueError);
}

TEST(Nn, BatchNorm) {
  const Tensor x = rnd({4, 3, 5}, 11);
  Tensor rm = zeros({3}), rv = ones({3});
  const Tensor w = rnd({3}, 12), b = rnd({3}, 13);
  const Tensor y = batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
  const std::vector<double> xv = vals(x), yv = vals(y), wv = vals(w), bv = vals(b), rmv = vals(rm),
                            rvv = vals(rv);
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t i = 0; i < 5; ++i) s += xv[size_t((n * 3 + c) * 5 + i)];
    const double mean = s / 20;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t i = 0; i < 5; ++i) q += std::pow(xv[size_t((n * 3 + c) * 5 + i)] - mean, 2);
    const double var = q / 20;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t i = 0; i < 5; ++i) {
        const size_t k = size_t((n * 3 + c) * 5 + i);
        EXPECT_NEAR(yv[k], (xv[k] - mean) / std::sqrt(var + 1e-5) * wv[size_t(c)] + bv[size_t(c)], 1e-5);
      }
    EXPECT_NEAR(rmv[size_t(c)], 0.1 * mean, 1e-6);
    EXPECT_NEAR(rvv[size_t(c)], 0.9 + 0.1 * q / 19, 1e-6);
  }
  // Eval uses the running stats.
  const std::vector<double> ye = vals(batch_norm(x, rm, rv, Tensor(), Tensor(), false));
  EXPECT_NEAR(ye[0], (xv[0] - rmv[0]) / std::sqrt(rvv[0] + 1e-5), 1e-5);
  EXPECT_THROW(batch_norm(x, Tensor(), Tensor()), ValueError);
  EXPECT_THROW(batch_norm(rnd({1, 3}, 1), Tensor(), Tensor(), Tensor(), Tensor(), true), ValueError);
}

TEST(Nn, MseLoss) {
  const Tensor a = rnd({4, 5}, 14), b = rnd({5}, 15);
  const std::vector<double> av = vals(a), bv = vals(b);
  double s = 0;
  for (int i = 0; i < 20; ++i) s += std::pow(av[size_t(i)] - bv[size_t(i % 5)], 2);
  EXPECT_NEAR(mse_loss(a, b, "sum").item<double>(), s, 1e-4);
  EXPECT_NEAR(mse_loss(a, b).item<double>(), s / 20, 1e-5);
  EXPECT_EQ(mse_loss(a, b, "none").sizes(), (Shape{4, 5}));
  EXPECT_THROW(mse_loss(a, b, "avg"), ValueError);
}

}  // namespace
}  // namespace kiln
