// The fused optimizer steps against a float64 scalar re-statement of torch's
// single-tensor SGD / Adam / AdamW equations, over several steps and every option.
#include "kiln/optim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& x) {
  const Tensor d = x.to(DType::Float64).contiguous();
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Tensor f32(const std::vector<float>& v) {
  return from_buffer_copy(v.data(), {int64_t(v.size())}, DType::Float32);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << i;
}

struct SgdCase {
  double momentum, dampening, wd;
  bool nesterov, maximize;
};

TEST(Optim, SgdMatchesFloat64Reference) {
  const size_t n = 37;
  for (const SgdCase c : {SgdCase{0, 0, 0, false, false}, SgdCase{0.9, 0, 0.01, true, false},
                          SgdCase{0.8, 0.3, 0.1, false, true}, SgdCase{0, 0, 0.05, false, true}}) {
    const std::vector<float> p0 = random_floats(n, 1);
    Tensor p = f32(p0), buf = zeros({int64_t(n)}, DType::Float32);
    std::vector<double> rp(p0.begin(), p0.end()), rb(n, 0.0);
    const double lr = 0.1;
    for (int step = 0; step < 4; ++step) {
      const std::vector<float> g = random_floats(n, 10 + step);
      optim::sgd_step(p, f32(g), buf, lr, c.momentum, c.dampening, c.wd, c.nesterov, c.maximize, step == 0);
      for (size_t i = 0; i < n; ++i) {
        double d = c.maximize ? -double(g[i]) : double(g[i]);
        d += c.wd * rp[i];
        if (c.momentum != 0) {
          rb[i] = step == 0 ? d : c.momentum * rb[i] + (1 - c.dampening) * d;
          d = c.nesterov ? d + c.momentum * rb[i] : rb[i];
        }
        rp[i] -= lr * d;
      }
      expect_near(values(p), rp, 1e-5);
      if (c.momentum != 0) expect_near(values(buf), rb, 1e-5);
    }
  }
}

TEST(Optim, AdamAndAdamWMatchFloat64Reference) {
  const size_t n = 29;
  for (bool decoupled : {false, true})
    for (bool amsgrad : {false, true})
      for (bool maximize : {false, true}) {
        const std::vector<float> p0 = random_floats(n, 2);
        Tensor p = f32(p0), m = zeros({int64_t(n)}, DType::Float32), v = zeros({int64_t(n)}, DType::Float32),
               vmax = zeros({int64_t(n)}, DType::Float32);
        std::vector<double> rp(p0.begin(), p0.end()), rm(n, 0), rv(n, 0), rvmax(n, 0);
        const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
        for (int64_t step = 1; step <= 5; ++step) {
          // Shrinking gradients make amsgrad's running max differ from exp_avg_sq.
          std::vector<float> g = random_floats(n, unsigned(20 + step));
          for (float& x : g) x /= float(step * step);
          if (decoupled)
            optim::adamw_step(p, f32(g), m, v, vmax, step, lr, b1, b2, eps, wd, amsgrad, maximize);
          else
            optim::adam_step(p, f32(g), m, v, vmax, step, lr, b1, b2, eps, wd, amsgrad, maximize);
          const double bc1 = 1 - std::pow(b1, double(step)), bc2 = 1 - std::pow(b2, double(step));
          for (size_t i = 0; i < n; ++i) {
            double gi = maximize ? -double(g[i]) : double(g[i]);
            if (decoupled)
              rp[i] *= 1 - lr * wd;
            else
              gi += wd * rp[i];
            rm[i] = b1 * rm[i] + (1 - b1) * gi;
            rv[i] = b2 * rv[i] + (1 - b2) * gi * gi;
            rvmax[i] = std::max(rvmax[i], rv[i]);
            const double denom = std::sqrt(amsgrad ? rvmax[i] : rv[i]) / std::sqrt(bc2) + eps;
            rp[i] -= lr / bc1 * rm[i] / denom;
          }
          expect_near(values(p), rp, 1e-5);
          expect_near(values(m), rm, 1e-5);
          expect_near(values(v), rv, 1e-5);
        }
      }
}

TEST(Optim, Bfloat16ParamRoundsOnceFromFloat32Math) {
  const std::vector<float> p0 = random_floats(16, 3), g = random_floats(16, 4);
  Tensor p = f32(p0).to(DType::BFloat16), buf;
  const std::vector<double> start = values(p);
  optim::sgd_step(p, f32(g), buf, 0.5, 0, 0, 0, false, false, true);
  const std::vector<double> got = values(p);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], double(float(bfloat16(float(start[i]) - 0.5f * g[i])))) << i;
}

TEST(Optim, BadArgumentsAreTypedErrors) {
  Tensor p = zeros({3}, DType::Float32), g = zeros({4}, DType::Float32), s = zeros({3}, DType::Float32);
  Tensor none;
  EXPECT_THROW(optim::sgd_step(p, g, none, 0.1, 0, 0, 0, false, false, true), ValueError);
  Tensor pi = zeros({3}, DType::Int32);
  EXPECT_THROW(optim::sgd_step(pi, s, none, 0.1, 0, 0, 0, false, false, true), TypeError);
  Tensor s64 = zeros({3}, DType::Float64);
  EXPECT_THROW(optim::adam_step(p, s, s64, s, s, 1, 0.1, 0.9, 0.999, 1e-8, 0, false, false), TypeError);
  EXPECT_THROW(optim::adam_step(p, s, s, s, s, 0, 0.1, 0.9, 0.999, 1e-8, 0, false, false), ValueError);
  Tensor pt = zeros({3, 2}, DType::Float32).transpose(0, 1);
  Tensor gt = zeros({2, 3}, DType::Float32);
  EXPECT_THROW(optim::sgd_step(pt, gt, none, 0.1, 0, 0, 0, false, false, true), ValueError);
}

}  // namespace
}  // namespace kiln
