// Double backward through the reduction and softmax derivatives: their
// formulas use public ops, so create_graph=true differentiates them again. The
// second derivatives are checked against central differences of the first.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

Tensor random_f64(const Shape& shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t = empty(shape, DType::Float64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = dist(rng);
  return t;
}

double dot_f64(const Tensor& a, const Tensor& b) {
  const Tensor ac = a.to(DType::Float64).contiguous(), bc = b.to(DType::Float64).contiguous();
  double s = 0;
  for (int64_t i = 0; i < ac.numel(); ++i) s += ac.data<double>()[i] * bc.data<double>()[i];
  return s;
}

using Fn = std::function<Tensor(const Tensor&)>;

// First derivative: G(x, v) = <d<f(x), v>/dx, w>; autograd's second derivative
// of G with respect to x and v against central differences of G.
void check_double_backward(const Fn& f, const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Tensor x0 = random_f64(shape, rng);
  const Shape out_shape = f(x0).sizes();
  const Tensor v0 = random_f64(out_shape, rng), w = random_f64(shape, rng);
  auto first = [&](const Tensor& x, const Tensor& v, bool create_graph) {
    const Tensor y[1] = {f(x)}, gv[1] = {v}, in[1] = {x};
    return autograd::grad(y, in, gv, create_graph, create_graph)[0];
  };
  Tensor x = x0.clone(), v = v0.clone();
  x.requires_grad_(true);
  v.requires_grad_(true);
  const Tensor g = first(x, v, true);
  const Tensor objective[1] = {sum(mul(g, w))};
  const Tensor wrt[2] = {x, v};
  const std::vector<Tensor> h = autograd::grad(objective, wrt, {}, false, false, /*allow_unused=*/true);
  auto numeric = [&](bool in_x, int64_t j) {
    const double eps = 1e-6;
    auto at = [&](double delta) {
      Tensor xs = x0.clone(), vs = v0.clone();
      (in_x ? xs : vs).data<double>()[j] += delta;
      xs.requires_grad_(true);
      return dot_f64(first(xs, vs, false), w);
    };
    return (at(eps) - at(-eps)) / (2 * eps);
  };
  for (int which = 0; which < 2; ++which) {
    const Tensor& base = which == 0 ? x0 : v0;
    const Tensor analytic =
        h[size_t(which)].defined() ? h[size_t(which)].contiguous() : zeros(base.sizes(), DType::Float64);
    ASSERT_EQ(analytic.numel(), base.numel());
    for (int64_t j = 0; j < base.numel(); ++j) {
      const double n = numeric(which == 0, j), a = analytic.data<double>()[j];
      EXPECT_NEAR(a, n, 1e-6 + 1e-5 * std::fabs(n)) << (which == 0 ? "d/dx" : "d/dv") << " element " << j;
    }
  }
}

TEST(Autograd, DoubleBackwardSum) {
  check_double_backward([](const Tensor& x) { return sum(x, std::vector<int>{1}); }, {3, 4}, 1);
  check_double_backward([](const Tensor& x) { return sum(x, std::vector<int>{0, 2}, true); }, {2, 3, 2}, 2);
}

TEST(Autograd, DoubleBackwardMean) {
  check_double_backward([](const Tensor& x) { return mean(x, std::vector<int>{-1}); }, {3, 4}, 3);
  check_double_backward([](const Tensor& x) { return mean(x); }, {2, 3}, 4);
}

TEST(Autograd, DoubleBackwardSoftmax) {
  check_double_backward([](const Tensor& x) { return softmax(x, 1); }, {3, 4}, 5);
  check_double_backward([](const Tensor& x) { return softmax(x, 0); }, {3, 2}, 6);
}

TEST(Autograd, DoubleBackwardLogSoftmax) {
  check_double_backward([](const Tensor& x) { return log_softmax(x, 1); }, {3, 4}, 7);
  check_double_backward([](const Tensor& x) { return log_softmax(x, 0); }, {3, 2}, 8);
}

TEST(Autograd, DoubleBackwardLogsumexp) {
  check_double_backward([](const Tensor& x) { return logsumexp(x, std::vector<int>{1}); }, {3, 4}, 9);
  check_double_backward(
      [](const Tensor& x) {
        return logsumexp(x, std::vector<int>{0, 2}, true);
      },
      {2, 3, 2}, 10);
}

}  // namespace
}  // namespace kiln
