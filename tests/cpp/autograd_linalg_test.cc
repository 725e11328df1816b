// Gradients through several outputs of one linalg node (qr's Q and R, eigh's
// values and vectors) taken in one call: the sum of the separate gradients.
#include <gtest/gtest.h>

#include "kiln/autograd.h"
#include "kiln/kiln.h"
#include "kiln/linalg.h"

namespace kiln {
namespace {

Tensor input() {
  Tensor x = randn({4, 3}, DType::Float64);
  for (int64_t i = 0; i < 3; ++i) x.select(0, i).select(0, i).fill_(3.0 + double(i));
  return x.requires_grad_(true);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const Tensor d = sub(a, b).contiguous();
  double m = 0;
  for (int64_t i = 0; i < d.numel(); ++i) m = std::max(m, std::fabs(d.data<double>()[i]));
  return m;
}

TEST(AutogradLinalg, QrBothOutputsInOneCall) {
  const Tensor x = input();
  const Tensor gQ = randn({4, 3}, DType::Float64), gR = randn({3, 3}, DType::Float64);
  auto one = [&](bool q, bool r) {
    const linalg::QR f = linalg::qr(x);
    std::vector<Tensor> outs, gs;
    if (q) outs.push_back(f.Q), gs.push_back(gQ);
    if (r) outs.push_back(f.R), gs.push_back(gR);
    const Tensor xs[1] = {x};
    const std::vector<Tensor> g = autograd::grad(outs, xs, gs);
    EXPECT_TRUE(g[0].defined());
    return g[0];
  };
  const Tensor both = one(true, true);
  ASSERT_TRUE(both.defined());
  EXPECT_LT(max_abs_diff(both, add(one(true, false), one(false, true))), 1e-10);
}

}  // namespace
}  // namespace kiln
