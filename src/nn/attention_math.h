// scaled_dot_product_attention's math formulation (attention_math.cc), the
// path for dtypes the fused kernels do not take (float64).
#pragma once

#include <optional>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln::detail {

Tensor sdpa_math(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, double dropout_p,
                 bool is_causal, std::optional<double> scale, bool enable_gqa, Generator* gen);

}  // namespace kiln::detail
