// Helpers shared by the matmul-family front-ends (linear, scaled_mm,
// grouped_mm, MoE): reading a weight scale's layout from its shape, and
// float32 views of small operands.
#pragma once

#include <string>

#include "kiln/quantize.h"
#include "kiln/tensor.h"
#include "ops/registry/matmul.h"

namespace kiln::detail {

// A weight scale for W [N, K] as the kernels take it: its layout, and the
// scale as float32 contiguous (the given tensor when it already is one).
struct WeightScale {
  ops::ScaleLayout layout = ops::ScaleLayout::None;
  Tensor scale;
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
