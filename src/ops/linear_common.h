// Helpers shared by the matmul-family front-ends (linear, scaled_mm,
// grouped_mm, MoE): reading a weight scale's layout from its shape, and
// float32 views of small operands.
#pragma once

#include <string>

#include "cpu/gemv.h"
#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln {

// The number of activation rows up to which linear takes the matrix-vector
// path: its cost grows with every row, while the packed GEMM's micro-tile
// computes a whole vector of rows at once; on 4096x4096 they cross near 6-8
// rows (bf16, FP8, float32 alike).
inline constexpr int64_t kLinearGemvMaxRows = 6;

}  // namespace kiln

namespace kiln::detail {

// A weight scale for W [N, K] as the kernels take it. `holder` keeps a float32
// contiguous copy alive when the given scale was not one already.
struct WeightScale {
  cpu::ScaleKind kind = cpu::ScaleKind::None;
  const float* data = nullptr;
  int64_t ld = 0;  // Block: blocks per scale row
  Tensor holder;
};

// undefined -> None; one element -> Tensor; [N] or [N, 1] -> Row;
// [ceil(N/128), ceil(K/128)] -> Block; anything else raises ValueError naming op.
WeightScale classify_weight_scale(const Tensor& scale, int64_t N, int64_t K, const char* op);

// t as a float32 contiguous tensor (t itself when it already is one).
Tensor f32_contiguous(const Tensor& t);

// True for the weight dtypes the kernels take.
bool is_weight_dtype(DType d);
// True for the activation dtypes (float32, bfloat16, float16).
bool is_activation_dtype(DType d);

// Raises unless s lists a float8_e4m3fn weight of E matrices [N, K]
// (kiln/quantize.h); what it lists is trusted.
void check_subnormal_list(const Fp8Subnormals& s, DType w_dtype, int64_t E, int64_t N, int64_t K,
                          const char* op);

}  // namespace kiln::detail
