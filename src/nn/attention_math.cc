// scaled_dot_product_attention in float64: torch's math formulation,
// softmax(q k^T * scale + mask) @ v, written with matmul, softmax and dropout
// so each records its own derivative. The fused kernels (cpu/attention*) run
// float32 / bfloat16 / float16; float64 is for gradient checks and scientific
// use, where exactness matters more than speed.
#include "nn/attention_math.h"

#include <cmath>
#include <string>

#include "kiln/attention.h"
#include "kiln/binary.h"
#include "kiln/dropout.h"
#include "kiln/error.h"
#include "kiln/index.h"
#include "kiln/matmul.h"
#include "kiln/shape.h"
#include "kiln/softmax.h"
#include "kiln/unary.h"

namespace kiln::detail {

// q [*, Hq, L, E], k [*, Hkv, S, E], v [*, Hkv, S, Ev] (batch dims broadcast).
Tensor sdpa_math(const Tensor& q, const Tensor& k_in, const Tensor& v_in, const Tensor& attn_mask,
                 double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa,
                 Generator* gen) {
  const char* op = "scaled_dot_product_attention";
  KILN_CHECK(q.dim() >= 2 && k_in.dim() >= 2 && v_in.dim() >= 2, ValueError,
             "[" << op << "] query, key and value need at least 2 dims, got " << q.shape_str() << ", "
                 << k_in.shape_str() << ", " << v_in.shape_str());
  KILN_CHECK(!(is_causal && attn_mask.defined()), ValueError,
             "[" << op << "] attn_mask and is_causal cannot both be set");
  KILN_CHECK(q.size(-1) == k_in.size(-1), ValueError,
             "[" << op << "] query and key must have one last dim, got " << q.shape_str() << " and "
                 << k_in.shape_str());
  Tensor k = k_in, v = v_in;
  if (enable_gqa && q.dim() >= 3 && k.dim() >= 3 && q.size(-3) != k.size(-3)) {
    const int64_t hq = q.size(-3), hkv = k.size(-3);
    KILN_CHECK(hkv > 0 && hq % hkv == 0 && v.size(-3) == hkv, ValueError,
               "[" << op << "] with enable_gqa, query heads (" << hq
                   << ") must be a multiple of key/value heads (" << hkv << ")");
    k = repeat_interleave(k, hq / hkv, -3);
    v = repeat_interleave(v, hq / hkv, -3);
  }
  const int64_t L = q.size(-2), S = k.size(-2);
  const double s = scale.value_or(1.0 / std::sqrt(double(q.size(-1))));
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), Scalar(s));  // [*, H, L, S]
  if (is_causal) {
    const Tensor keep = tril(ones({L, S}, DType::Bool, q.device()));  // top-left aligned, as torch
    scores = masked_fill(scores, logical_not(keep), Scalar(-INFINITY));
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == DType::Bool ? masked_fill(scores, logical_not(attn_mask), Scalar(-INFINITY))
                                              : add(scores, attn_mask.to(scores.dtype()));
  }
  Tensor p = softmax(scores, -1);
  if (dropout_p > 0) p = dropout(p, dropout_p, true, false, gen);
  return matmul(p, v);  // [*, H, L, Ev]
}

}  // namespace kiln::detail
