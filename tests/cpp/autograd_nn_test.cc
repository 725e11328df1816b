// The out= forms of the nn and matmul front-ends while recording: torch's
// error (not a "no derivative" one), and the destination's version bumped.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kiln/attention.h"
#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/linear.h"
#include "kiln/nn.h"
#include "kiln/random.h"

namespace kiln {
namespace {

Tensor rnd(const Shape& s, uint64_t seed) {
  Generator g(seed);
  return randn(s, DType::Float32, &g);
}

void expect_out_error(const std::function<void()>& f, const std::string& op) {
  try {
    f();
    FAIL() << op << ": no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[" + op + "]", 0), 0u) << msg;
    EXPECT_NE(msg.find("out=..."), std::string::npos) << msg;
  }
}

TEST(Autograd, NnOutFormsRefuseRecording) {
  Tensor x = rnd({3, 8}, 1), w = rnd({8}, 2), up = rnd({3, 8}, 3), wl = rnd({4, 8}, 4);
  x.requires_grad_(true);
  const Tensor out = empty({3, 8}), out4 = empty({3, 4});
  expect_out_error([&] { rms_norm_out(x, w, 1e-6, out); }, "rms_norm");
  expect_out_error([&] { layer_norm_out(x, w, Tensor(), 1e-5, out); }, "layer_norm");
  expect_out_error([&] { swiglu_out(x, up, out); }, "swiglu");
  expect_out_error([&] { linear_out(x, wl, Tensor(), Tensor(), out4); }, "linear");
  Tensor table = rnd({5, 8}, 5);
  table.requires_grad_(true);
  const Tensor ids = arange(Scalar(int64_t(0)), Scalar(int64_t(3)));
  expect_out_error([&] { embedding_out(ids, table, Tensor(), out); }, "embedding");
  Tensor q = rnd({2, 3, 8}, 6);
  q.requires_grad_(true);
  const Tensor kv = rnd({2, 3, 8}, 7), o = empty({2, 3, 8});
  expect_out_error([&] { scaled_dot_product_attention_out(q, kv, kv, AttentionOptions{}, o); },
                   "scaled_dot_product_attention");
}

TEST(Autograd, NnOutFormsBumpTheDestinationVersion) {
  const Tensor x = rnd({3, 8}, 1), out = empty({3, 8});
  const uint64_t v0 = out.version();
  rms_norm_out(x, Tensor(), 1e-6, out);
  EXPECT_GT(out.version(), v0);
}

}  // namespace
}  // namespace kiln
