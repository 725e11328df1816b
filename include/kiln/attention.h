// scaled_dot_product_attention with torch's semantics (PyTorch 2.15):
//
//   q [..., Hq, L, E], k [..., Hk, S, E], v [..., Hk, S, Ev] -> [..., H, L, Ev]
//   (2-D operands are [L, E]). Every dim before the last two broadcasts among
//   q, k and v (q [1, 1, 64] with k [2, 1, 1, 64] works), so without enable_gqa
//   Hq and Hk broadcast too; with enable_gqa Hq must be a multiple of Hk and
//   query head h uses KV head h / (Hq / Hk).
//   attn_mask: bool (true = may attend) or floating (added to the scores),
//   broadcastable to [..., H, L, S]; undefined (Tensor()): none. is_causal:
//   query i sees keys j <= i (the top-left aligned lower triangle, as torch,
//   also when L != S); it cannot be combined with attn_mask. scale: default 1 / sqrt(E). dropout_p: drops
//   attention weights with a seeded Philox draw (gen or the default generator)
//   and scales the kept ones by 1 / (1 - p).
//   A query row whose keys are all masked gives zeros (torch >= 2.5's safe
//   softmax); NaN scores give NaN.
//   q, k, v: float16, bfloat16 or float32, one dtype; accumulation in float32.
//
// The work is split over (batch, KV head, query block, KV range) with an online
// softmax; the query heads sharing a KV head are processed together so K and V
// are streamed once per KV head. [L, S] scores are never materialized.
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false, Generator* gen = nullptr);

// The runtime entry: writes into out ([..., H, L, Ev], any float dtype, unit
// stride in the last dim). q may be float32 while k/v are bfloat16 (a bf16 KV
// cache). causal_offset shifts the causal diagonal: query i sees keys
// j <= i + causal_offset (0: torch's top-left; S - L: bottom-right, as a chunk
// of new tokens appended to a KV cache needs). No dropout. Allocates only
// per-thread scratch that is reused across calls.
struct AttentionOptions {
  Tensor attn_mask;  // undefined: none
  bool is_causal = false;
  int64_t causal_offset = 0;
  std::optional<double> scale;
  bool enable_gqa = false;
};
void scaled_dot_product_attention_out(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionOptions& opt, const Tensor& out);

}  // namespace kiln
