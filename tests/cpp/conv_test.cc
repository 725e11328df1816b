// Convolutions beyond the op table: the same bits whatever the thread count
// (images and groups split over threads, the weight gradient summing images
// in order), and a larger image whose im2col columns span many gemm blocks,
// against a float64 loop.
#include "kiln/conv.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/binary.h"
#include "kiln/memory_format.h"
#include "kiln/random.h"
#include "kiln/reduce.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

Tensor rnd(const Shape& s, uint64_t seed) {
  Generator g(seed);
  return randn(s, DType::Float32, &g);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.sizes() == y.sizes() && std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.numel()) * 4) == 0;
}

TEST(Conv, SameBitsForAnyThreadCount) {
  const int before = num_threads();
  const Tensor x = rnd({3, 4, 19, 17}, 1), w = rnd({6, 2, 3, 3}, 2), b = rnd({6}, 3),
               g = rnd({3, 6, 10, 9}, 4);
  std::vector<Tensor> outs, gws, gts;
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    outs.push_back(conv2d(x, w, b, {2}, {1}, {1}, 2));
    gws.push_back(convolution_backward_weight(x, g, w.sizes(), {2}, {1}, {1}, false, {0}, 2));
    gts.push_back(conv_transpose2d(g, w, Tensor(), {2}, {1}, {0}, 2));
  }
  set_num_threads(before);
  for (size_t i = 1; i < outs.size(); ++i) {
    EXPECT_TRUE(same_bits(outs[0], outs[i])) << i;
    EXPECT_TRUE(same_bits(gws[0], gws[i])) << i;
    EXPECT_TRUE(same_bits(gts[0], gts[i])) << i;
  }
}

// One image and one group (threads split inside it), depthwise (the direct
// kernels) and channels-last (row blocks): the same bits at any thread count.
TEST(Conv, SameBitsForAnyThreadCountInsideOneImage) {
  const int before = num_threads();
  const Tensor x = rnd({1, 5, 37, 41}, 11), w = rnd({7, 5, 3, 3}, 12), g = rnd({1, 7, 19, 21}, 13);
  const Tensor xd = rnd({2, 6, 300}, 14), wd = rnd({6, 1, 4}, 15), gd = rnd({2, 6, 303}, 16);
  const Tensor xc = contiguous(x, MemoryFormat::ChannelsLast), gc = contiguous(g, MemoryFormat::ChannelsLast);
  std::vector<std::vector<Tensor>> r;
  for (int nt : {1, 2, 3}) {
    set_num_threads(nt);
    r.push_back({conv2d(x, w, Tensor(), {2}, {1}), conv_transpose2d(g, w, Tensor(), {2}, {1}),
                 convolution_backward_weight(x, g, w.sizes(), {2}, {1}, {1}, false, {0}, 1),
                 conv1d(xd, wd, Tensor(), {1}, {3}, {1}, 6),
                 conv_transpose1d(gd, wd, Tensor(), {1}, {3}, {0}, 6),
                 convolution_backward_weight(xd, gd, wd.sizes(), {1}, {3}, {1}, false, {0}, 6),
                 conv2d(xc, w, Tensor(), {2}, {1}), conv_transpose2d(gc, w, Tensor(), {2}, {1}),
                 convolution_backward_weight(xc, gc, w.sizes(), {2}, {1}, {1}, false, {0}, 1)});
  }
  set_num_threads(before);
  for (size_t i = 1; i < r.size(); ++i)
    for (size_t j = 0; j < r[0].size(); ++j) EXPECT_TRUE(same_bits(r[0][j], r[i][j])) << i << " " << j;
  // The channels-last results keep the format and agree with the row-major ones.
  EXPECT_TRUE(is_contiguous(r[0][6], MemoryFormat::ChannelsLast));
  for (size_t j = 0; j < 3; ++j) {
    const Tensor a = r[0][j].contiguous(), b = r[0][j + 6].contiguous();
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(pa[i], pb[i], 1e-4) << j << " " << i;
  }
}

TEST(Conv, LargeImageMatchesLoop) {
  const int64_t C = 3, H = 70, W = 65, O = 5, K = 3;
  const Tensor x = rnd({1, C, H, W}, 5), w = rnd({O, C, K, K}, 6);
  const Tensor y = conv2d(x, w, Tensor(), {1}, {1}).contiguous();
  const Tensor xd = x.to(DType::Float64).contiguous(), wd = w.to(DType::Float64).contiguous();
  const double* xp = xd.data<double>();
  const double* wp = wd.data<double>();
  const float* yp = y.data<float>();
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < H; i += 7)
      for (int64_t j = 0; j < W; ++j) {
        double s = 0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t a = 0; a < K; ++a)
            for (int64_t b = 0; b < K; ++b) {
              const int64_t r = i - 1 + a, q = j - 1 + b;
              if (r >= 0 && r < H && q >= 0 && q < W)
                s += wp[((o * C + c) * K + a) * K + b] * xp[(c * H + r) * W + q];
            }
        ASSERT_NEAR(yp[(o * H + i) * W + j], s, 1e-4) << o << " " << i << " " << j;
      }
}

}  // namespace
}  // namespace kiln
