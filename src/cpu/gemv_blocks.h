// Linear layers over weights held as ggml blocks (kiln/block_quant.h): the
// matrix-vector kernel for a few activation rows, which reads q from the
// blocks (or from a split of each row in L1, block_split.h) and sums
// a * sum(q * x) + b * sum(x) per group; the many-row path, which widens
// panels of W to float32 for the packed GEMM; and dequantization.
#pragma once

#include <cstdint>

#include "kiln/block_quant.h"

namespace kiln::cpu {

struct BlockGemvArgs {
  BlockType type = BlockType::Q8_0;
  const uint8_t* w = nullptr;  // W [N, K] as blocks, rows ldw bytes apart
  int64_t ldw = 0;
  int64_t N = 0, K = 0;      // K a whole number of blocks
  const float* x = nullptr;  // x [M, K] float32, rows ldx apart
  int64_t ldx = 0;
  int64_t M = 0;
  float* y = nullptr;  // y [M, N] float32, rows ldy apart
  int64_t ldy = 0;
  const float* bias = nullptr;  // [N] or null
};

// All of y, split over N across kiln's thread pool: the matrix-vector kernel.
void block_gemv(const BlockGemvArgs& a);
// All of y through the packed GEMM, W widened to float32 a panel of rows at a
// time (each panel ~1 MiB, per thread).
void block_gemm(const BlockGemvArgs& a);
// All of y by the kernel its row count takes: up to kLinearGemvMaxRows rows
// of x the matrix-vector kernel (x exact), more the packed GEMM.
void block_product(const BlockGemvArgs& a);
// Rows [n0, n1) of W as float32 into out (rows K apart), as the reference
// dequantizes them (a * q, then + b).
void dequantize_block_rows(BlockType t, const uint8_t* w, int64_t ldw, int64_t K, int64_t n0, int64_t n1,
                           float* out);

}  // namespace kiln::cpu
