// torch._scaled_mm: out = (A * scale_a) @ (B * scale_b) + bias with FP8
// operands, float32 accumulation and one of three scaling schemes:
//   tensor-wise: scale_a and scale_b one float32 element each;
//   row-wise:    scale_a [M, 1], scale_b [1, N];
//   block-wise:  scale_a [M, ceil(K/128)] (1x128 blocks of A),
//                scale_b [ceil(K/128), ceil(N/128)] (128x128 blocks of B).
// M <= 16 runs the matrix-vector kernel over B's columns (fastest when B is
// column-major, i.e. B = W.t() for a row-major W [N, K]).
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln {

// A [M, K], B [K, N] FP8 (not both float8_e5m2); scales float32; bias [N] in
// out_dtype (bfloat16/float16; refused with float32 out, as PyTorch);
// out_dtype float32, bfloat16, float16 or float8_e4m3fn (default: A's dtype,
// as PyTorch); scale_result (one float32 element) multiplies the result before an
// FP8 store (cuBLASLt's D scale).
Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                 const Tensor& bias = Tensor(), const Tensor& scale_result = Tensor(),
                 std::optional<DType> out_dtype = std::nullopt, bool use_fast_accum = false);

}  // namespace kiln
