// The sampler: greedy paths, seeded reproducibility, empirical frequencies
// against the float64 filtered distribution (temperature, top-k, top-p, min-p),
// penalties, a big-vocabulary nucleus, bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

Tensor row(const std::vector<float>& v) {
  return from_buffer_copy(v.data(), {int64_t(v.size())}, DType::Float32);
}

// The HF-order filtered distribution over a small vocabulary, in float64.
std::vector<double> reference(const std::vector<float>& logits, const SamplingParams& p) {
  const size_t V = logits.size();
  std::vector<double> z(V);
  for (size_t i = 0; i < V; ++i) z[i] = double(logits[i]) / p.temperature;
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return z[a] > z[b]; });
  const size_t k = p.top_k > 0 ? std::min(V, size_t(p.top_k)) : V;
  std::vector<double> e(V, 0.0);
  double tot = 0;
  for (size_t r = 0; r < k; ++r) tot += e[order[r]] = std::exp(z[order[r]] - z[order[0]]);
  size_t keep = k;
  double cum = 0;
  if (p.top_p < 1)
    for (size_t r = 0; r < k; ++r) {
      cum += e[order[r]];
      if (cum >= p.top_p * tot) {
        keep = r + 1;
        break;
      }
    }
  for (size_t r = keep; r < V; ++r) e[order[r]] = 0;
  for (size_t r = 1; r < keep; ++r)
    if (e[order[r]] < p.min_p * e[order[0]]) e[order[r]] = 0;
  const double s = std::accumulate(e.begin(), e.end(), 0.0);
  for (auto& x : e) x /= s;
  return e;
}

void expect_frequencies(const std::vector<float>& logits, const SamplingParams& p) {
  Generator g(1234);
  const int n = 20000;
  std::vector<double> f(logits.size(), 0.0);
  const Tensor x = row(logits);
  for (int i = 0; i < n; ++i) f[size_t(sample(x, p, Tensor(), &g).item<int64_t>())] += 1.0 / n;
  const std::vector<double> ref = reference(logits, p);
  for (size_t i = 0; i < f.size(); ++i) {
    if (ref[i] == 0)
      EXPECT_EQ(f[i], 0.0) << i;
    else
      EXPECT_NEAR(f[i], ref[i], 4 * std::sqrt(ref[i] * (1 - ref[i]) / n) + 1e-3) << i;
  }
}

const std::vector<float> kLogits = {1.0f, 2.5f, -1.0f, 2.0f, 0.5f, -3.0f, 2.4f};

TEST(Sampling, Greedy) {
  SamplingParams p;
  p.temperature = 0;
  EXPECT_EQ(sample(row(kLogits), p).item<int64_t>(), 1);
  p.temperature = 1;
  p.top_k = 1;
  EXPECT_EQ(sample(row(kLogits), p).item<int64_t>(), 1);
  // Ties: the first maximal index.
  p.temperature = 0;
  EXPECT_EQ(sample(row({0.f, 3.f, 3.f}), p).item<int64_t>(), 1);
}

TEST(Sampling, Frequencies) {
  SamplingParams p;
  expect_frequencies(kLogits, p);
  p.temperature = 0.7;
  expect_frequencies(kLogits, p);
  p.top_k = 3;
  expect_frequencies(kLogits, p);
  p.top_k = 0;
  p.top_p = 0.8;
  expect_frequencies(kLogits, p);
  p.top_k = 4;
  p.top_p = 0.9;
  expect_frequencies(kLogits, p);
  p = SamplingParams{};
  p.min_p = 0.3;
  expect_frequencies(kLogits, p);
}

TEST(Sampling, Reproducible) {
  Generator a(42), b(42), c(43);
  std::vector<int64_t> ta, tb, tc;
  SamplingParams p;
  p.top_p = 0.95;
  Tensor x = mul(randn({3, 1000}, DType::Float32, &c), Scalar(3.0));
  for (int i = 0; i < 20; ++i) {
    const Tensor ra = sample(x, p, Tensor(), &a), rb = sample(x, p, Tensor(), &b),
                 rc = sample(x, p, Tensor(), &c);
    EXPECT_EQ(ra.sizes(), (Shape{3}));
    for (int r = 0; r < 3; ++r) {
      ta.push_back(ra.data<int64_t>()[r]);
      tb.push_back(rb.data<int64_t>()[r]);
      tc.push_back(rc.data<int64_t>()[r]);
    }
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(Sampling, Penalties) {
  SamplingParams p;
  p.temperature = 0;
  p.repetition_penalty = 1.3;
  const int64_t prev[2] = {1, 1};
  const Tensor pt = from_buffer_copy(prev, {2}, DType::Int64);
  // 2.5 / 1.3 = 1.92 < 2.4: token 6 wins.
  EXPECT_EQ(sample(row(kLogits), p, pt).item<int64_t>(), 6);
  // Negative logits are multiplied: -1 * 1.3 keeps token 0 (logit 0.5 vs -1.3).
  const int64_t prev0[1] = {1};
  const Tensor p0 = from_buffer_copy(prev0, {1}, DType::Int64);
  EXPECT_EQ(sample(row({0.5f, -1.0f}), p, p0).item<int64_t>(), 0);
  p.repetition_penalty = 1;
  p.presence_penalty = 0.05;  // 2.45 > 2.4: token 1 stays
  EXPECT_EQ(sample(row(kLogits), p, pt).item<int64_t>(), 1);
  p.frequency_penalty = 0.05;  // 2.5 - 0.05 - 0.1 < 2.4
  EXPECT_EQ(sample(row(kLogits), p, pt).item<int64_t>(), 6);
  const int64_t bad[1] = {7};
  const Tensor pb = from_buffer_copy(bad, {1}, DType::Int64);
  EXPECT_THROW(sample(row(kLogits), p, pb), IndexError);
}

TEST(Sampling, BigVocabNucleus) {
  Generator g(5);
  const int64_t V = 151936;
  const Tensor x = mul(randn({V}, DType::Float32, &g), Scalar(2.5));
  const float* xp = x.data<float>();
  std::vector<int64_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return xp[a] > xp[b]; });
  double tot = 0;
  for (int64_t i = 0; i < V; ++i) tot += std::exp(double(xp[i]) - xp[order[0]]);
  double cum = 0;
  std::vector<bool> in(size_t(V), false);
  for (int64_t r = 0; r < V; ++r) {
    in[size_t(order[size_t(r)])] = true;
    cum += std::exp(double(xp[order[size_t(r)]]) - xp[order[0]]);
    if (cum >= 0.9 * tot) break;
  }
  SamplingParams p;
  p.top_p = 0.9;
  for (int i = 0; i < 50; ++i) EXPECT_TRUE(in[size_t(sample(x, p, Tensor(), &g).item<int64_t>())]);
  // Unfiltered sampling stays within range and bf16 logits work.
  for (int i = 0; i < 5; ++i) {
    const int64_t t = sample(x.to(DType::BFloat16), SamplingParams{}, Tensor(), &g).item<int64_t>();
    EXPECT_TRUE(t >= 0 && t < V);
  }
}

TEST(Sampling, BadArguments) {
  SamplingParams p;
  p.top_p = 0;
  EXPECT_THROW(sample(row(kLogits), p), ValueError);
  p = SamplingParams{};
  p.temperature = -1;
  EXPECT_THROW(sample(row(kLogits), p), ValueError);
  EXPECT_THROW(sample(zeros({2, 2, 2})), ValueError);
  EXPECT_THROW(sample(zeros({3}, DType::Int32)), TypeError);
  const float nanrow[2] = {NAN, 1.0f};
  EXPECT_THROW(sample(from_buffer_copy(nanrow, {2}, DType::Float32)), ValueError);
}

}  // namespace
}  // namespace kiln
