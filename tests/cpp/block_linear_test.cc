// block_linear, dequantize_blocks and block_scales_finite (kiln/block_quant.h)
// for every block type: dequantization bit for bit against the GGUF reader's
// decoders (themselves bit-exact with gguf-py), and the products against a
// double-precision sum over those dequantized weights, on every SIMD target.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "block_test_util.h"
#include "kiln/block_quant.h"
#include "kiln/float_types.h"
#include "kiln/io/gguf.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using test::random_blocks;
using test::scale_offsets;

io::GGMLType ggml_of(BlockType t) {
  for (uint32_t n = 0; n < 64; ++n) {
    const io::GGMLTypeInfo* i = io::ggml_type_info(n);
    if (i && std::string(i->name) == block_type_info(t).name) return io::GGMLType(n);
  }
  throw std::runtime_error("no ggml type");
}

std::vector<float> reference_dequant(BlockType t, const Tensor& blocks, int64_t K) {
  std::vector<float> w(size_t(blocks.size(0) * K));
  for (int64_t n = 0; n < blocks.size(0); ++n)
    io::dequantize_row(ggml_of(t), blocks.data<uint8_t>() + n * blocks.stride(0), w.data() + n * K, K);
  return w;
}

const BlockType kAll[] = {BlockType::Q4_0,  BlockType::Q4_1, BlockType::Q5_0, BlockType::Q5_1,
                          BlockType::Q8_0,  BlockType::Q2_K, BlockType::Q3_K, BlockType::Q4_K,
                          BlockType::Q5_K,  BlockType::Q6_K, BlockType::Q8_K, BlockType::IQ4_NL,
                          BlockType::IQ4_XS};

template <typename F>
void on_every_target(F&& body) {
  const int64_t supported = hwy::SupportedTargets();
  for (int64_t tg = 1; tg != 0 && tg <= supported; tg <<= 1) {
    if (!(supported & tg)) continue;
    hwy::SetSupportedTargetsForTest(tg);
    body(tg);
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(BlockLinear, TypeTableMatchesTheGgufReader) {
  for (BlockType t : kAll) {
    const io::GGMLTypeInfo* gi = io::ggml_type_info(uint32_t(ggml_of(t)));
    EXPECT_EQ(int64_t(gi->block_size), block_type_info(t).block_size) << block_type_info(t).name;
    EXPECT_EQ(int64_t(gi->type_size), block_type_info(t).block_bytes) << block_type_info(t).name;
    EXPECT_EQ(io::ggml_block_type(ggml_of(t)), t);
    EXPECT_EQ(block_type_from_name(block_type_info(t).name), t);
  }
  EXPECT_EQ(block_type_from_name("q4_k"), BlockType::Q4_K);
  EXPECT_FALSE(block_type_from_name("Q4_2").has_value());
  EXPECT_FALSE(io::ggml_block_type(io::GGMLType::F16).has_value());
  EXPECT_FALSE(io::ggml_block_type(io::GGMLType::IQ2_XXS).has_value());
}

TEST(BlockLinear, DequantizeIsBitExactWithTheReaderOnEveryTarget) {
  for (BlockType t : kAll) {
    const int64_t K = 3 * block_type_info(t).block_size, N = 5;
    const Tensor b = random_blocks(t, N, K, 11 + uint32_t(t));
    const std::vector<float> want = reference_dequant(t, b, K);
    on_every_target([&](int64_t tg) {
      const Tensor got = dequantize_blocks(b, t);
      ASSERT_EQ(got.sizes(), (Shape{N, K}));
      ASSERT_EQ(std::memcmp(got.data<float>(), want.data(), want.size() * 4), 0)
          << block_type_info(t).name << " target " << tg;
    });
  }
}

// y against sum_k w[n, k] * x[m, k] in double, within float32 rounding of
// the sum of |terms|, for the matrix-vector rows (1, 3, 6) and the GEMM (9, 40).
TEST(BlockLinear, ProductsMatchADoubleSumOverTheDequantizedWeights) {
  for (BlockType t : kAll) {
    const int64_t K = (t == BlockType::Q8_0 ? 5 : 2) * block_type_info(t).block_size, N = 37;
    const Tensor b = random_blocks(t, N, K, 101 + uint32_t(t));
    const std::vector<float> w = reference_dequant(t, b, K);
    Generator g(7);
    const Tensor bias = randn({N}, DType::Float32, &g);
    for (int64_t M : {1, 3, 6, 9, 40}) {
      const Tensor x = randn({M, K}, DType::Float32, &g);
      on_every_target([&](int64_t tg) {
        const Tensor y = block_linear(x, b, t, bias);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double s = bias.data<float>()[n], mag = std::fabs(s);
            for (int64_t k = 0; k < K; ++k) {
              const double term = double(w[size_t(n * K + k)]) * x.data<float>()[m * K + k];
              s += term;
              mag += std::fabs(term);
            }
            ASSERT_NEAR(y.data<float>()[m * N + n], s, 4e-6 * mag + 1e-30)
                << block_type_info(t).name << " M=" << M << " m=" << m << " n=" << n << " target " << tg;
          }
      });
    }
  }
}

TEST(BlockLinear, ShapesDtypesAndBadInput) {
  const BlockType t = BlockType::Q4_K;
  const Tensor b = random_blocks(t, 4, 256, 3);
  Generator g(1);
  const Tensor x = randn({2, 3, 256}, DType::Float32, &g);
  const Tensor y = block_linear(x, b, t);
  ASSERT_EQ(y.sizes(), (Shape{2, 3, 4}));
  const Tensor yb = block_linear(x.to(DType::BFloat16), b, t);
  EXPECT_EQ(yb.dtype(), DType::BFloat16);
  const Tensor ref = block_linear(x.to(DType::BFloat16).to(DType::Float32), b, t);
  EXPECT_TRUE(allclose(yb.to(DType::Float32), ref, 1e-2, 1e-2));
  // A row view of the blocks gives those rows; rows further apart than their
  // bytes (the first block of each two-block row) read as a copy of them.
  const Tensor y2 = block_linear(x, b.narrow(0, 1, 2), t);
  EXPECT_TRUE(equal(y2, y.narrow(-1, 1, 2)));
  const Tensor two = random_blocks(t, 9, 512, 4);
  const Tensor x9 = randn({9, 256}, DType::Float32, &g);
  for (int64_t M : {1, 9})
    EXPECT_TRUE(equal(block_linear(x9.narrow(0, 0, M), two.narrow(1, 0, 144), t),
                      block_linear(x9.narrow(0, 0, M), two.narrow(1, 0, 144).contiguous(), t)));
  EXPECT_THROW(block_linear(randn({2, 255}, DType::Float32, &g), b, t), ValueError);
  EXPECT_THROW(block_linear(x, b.to(DType::Int8), t), TypeError);
  EXPECT_THROW(block_linear(x, b.narrow(1, 0, 100), t), ValueError);  // not whole blocks
  EXPECT_THROW(block_linear(x.to(DType::Int32), b, t), TypeError);
  EXPECT_THROW(block_linear(x, b, t, randn({5}, DType::Float32, &g)), ValueError);
  EXPECT_THROW(block_linear(x, b, BlockType::Q8_0), ValueError);  // 144-byte rows are not Q8_0 blocks
  // Empty: no rows of x, no rows of W.
  EXPECT_EQ(block_linear(empty({0, 256}, DType::Float32), b, t).sizes(), (Shape{0, 4}));
  EXPECT_EQ(block_linear(x, b.narrow(0, 0, 0), t).sizes(), (Shape{2, 3, 0}));
}

TEST(BlockLinear, DequantizeIntoRowsOfAnotherTensor) {
  const BlockType t = BlockType::Q6_K;
  const Tensor b = random_blocks(t, 6, 512, 8);
  const Tensor all = dequantize_blocks(b, t);
  Tensor out = zeros({3, 512});
  dequantize_blocks_out(b.narrow(0, 4, 1), t, out.narrow(0, 1, 1));  // an embedding lookup's row
  EXPECT_TRUE(equal(out.narrow(0, 1, 1), all.narrow(0, 4, 1)));
  EXPECT_TRUE(equal(out.narrow(0, 0, 1), zeros({1, 512})));
  EXPECT_THROW(dequantize_blocks_out(b, t, zeros({6, 511})), ValueError);
  EXPECT_THROW(dequantize_blocks_out(b, t, zeros({6, 512}, DType::BFloat16)), ValueError);
}

TEST(BlockLinear, NonFiniteScalesAreFound) {
  for (BlockType t : kAll) {
    Tensor b = random_blocks(t, 3, block_type_info(t).block_size * 2, 5);
    EXPECT_TRUE(block_scales_finite(b, t)) << block_type_info(t).name;
    for (int off : scale_offsets(t)) {
      Tensor c = b.clone();
      uint8_t* blk = c.data<uint8_t>() + c.stride(0) * 2 + block_type_info(t).block_bytes;  // row 2, block 1
      if (t == BlockType::Q8_K) {
        const float nan = NAN;
        std::memcpy(blk, &nan, 4);
      } else {
        const uint16_t inf = 0x7C00;
        std::memcpy(blk + off, &inf, 2);
      }
      EXPECT_FALSE(block_scales_finite(c, t)) << block_type_info(t).name << " offset " << off;
    }
  }
}

}  // namespace
}  // namespace kiln
