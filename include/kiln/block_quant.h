// Weights held as ggml's quantization blocks (the block types of GGUF files),
// used as they are stored: no widened copy of the weight is made.
//
// A weight W [N, K] in a block type is a uint8 tensor `blocks` of
// [N, K / block_size * block_bytes]: row n holds the K / block_size blocks
// of W's row n, in ggml's layout (rows may be strided; each row's bytes are
// contiguous). Every element dequantizes, bit for bit as gguf-py's
// gguf.quants.dequantize does, to
//   w = a * q + b    (the product rounded to float32, then the sum)
// with q a small integer and a, b the float32 scale and offset of q's group
// (16 or 32 elements): Q4_K's a = d * sc and b = -(dmin * m), Q8_0's a = d,
// b = 0, and so on (src/cpu/block_split.cc lists them all).
//
//   Tensor y = kiln::block_linear(x, blocks, kiln::BlockType::Q4_K);  // x [..., K] -> [..., N]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

enum class BlockType : uint8_t {
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  Q8_K,
  IQ4_NL,
  IQ4_XS
};
inline constexpr int kBlockTypes = 13;

struct BlockTypeInfo {
  const char* name;     // ggml's name: "Q4_K"
  int64_t block_size;   // elements per block (32 or 256)
  int64_t block_bytes;  // bytes per block
};
const BlockTypeInfo& block_type_info(BlockType t);
// The type named `name` (ggml's spelling, any case), or nullopt.
std::optional<BlockType> block_type_from_name(std::string_view name);
// "Q4_0, Q4_1, ..., IQ4_XS": every block type, for error messages.
const std::string& block_type_names();
// Bytes of one row of K elements (K a multiple of the block size, else ValueError).
int64_t block_row_bytes(BlockType t, int64_t K);

// W [N, K] as float32, each element as the reference dequantizes it. blocks:
// uint8 [N, K / block_size * block_bytes] with contiguous rows.
Tensor dequantize_blocks(const Tensor& blocks, BlockType type);
// The same into `out` (float32 [N, K], contiguous): an embedding lookup's rows.
void dequantize_blocks_out(const Tensor& blocks, BlockType type, const Tensor& out);

// y = x @ W^T + bias (torch.nn.functional.linear with W dequantized), read
// from the blocks directly. x: [..., K] float32, bfloat16 or float16; bias:
// undefined or [N] of a float dtype. Returns [..., N] in x's dtype.
//
// Arithmetic: x stays float32 (never quantized as llama.cpp does with its
// activations); each group's products are summed in float32 as
// a * sum(q * x) + b * sum(x), equal in exact arithmetic to the float32
// dot product with the dequantized row, so results agree with
// dequantize_blocks followed by linear to float32 rounding. A few rows take
// a matrix-vector kernel; more rows widen cache-sized panels of W to float32
// for the packed GEMM, never the whole weight. Block scales must be finite
// (block_scales_finite; a NaN scale would reach only some outputs).
Tensor block_linear(const Tensor& x, const Tensor& blocks, BlockType type, const Tensor& bias = Tensor());
// The same into `out` ([..., N], x's dtype or float32, contiguous): with float32
// x and out it allocates nothing for the few rows of a decode step.
void block_linear_out(const Tensor& x, const Tensor& blocks, BlockType type, const Tensor& bias,
                      const Tensor& out);

// Whether every block scale (d, dmin, m) is finite. A loader that runs blocks
// natively checks this once and refuses a tensor that fails it.
bool block_scales_finite(const Tensor& blocks, BlockType type);

}  // namespace kiln
