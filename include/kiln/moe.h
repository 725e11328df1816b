// Mixture-of-Experts building blocks: routing (softmax -> top-k -> optional
// renormalization), the permutation that groups token rows by expert with the
// offs grouped_mm takes, the weighted un-permute, and a fused SwiGLU expert FFN.
#pragma once

#include <tuple>

#include "kiln/block_quant.h"
#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln {

// logits [T, E] -> (weights [T, k] float32, ids [T, k] int32): softmax over E in
// float32, the k largest probabilities (descending, lower expert first on
// ties), renormalized to sum 1 when norm_topk_prob.
std::tuple<Tensor, Tensor> moe_route(const Tensor& logits, int64_t top_k, bool norm_topk_prob);

// ids [T, k] int32 (experts in [0, E)) -> (perm [T*k] int32, offs [E] int32):
// perm lists the flat slots t*k + j grouped by expert (stable within an
// expert); offs are the cumulative group ends, as grouped_mm takes them.
// Rows for grouped_mm are x[perm / k].
std::tuple<Tensor, Tensor> moe_permute(const Tensor& ids, int64_t num_experts);

// y_perm [T*k, H] (rows in perm order), perm [T*k], weights [T, k] ->
// out [T, H] with out[t] = sum_j weights[t, j] * y_perm[row of slot t*k + j].
// Computed in float32; out in y_perm's dtype.
Tensor moe_unpermute(const Tensor& y_perm, const Tensor& perm, const Tensor& weights);

// One MoE layer with SwiGLU experts, in the nn.Linear layout:
//   x [T, H]; router_w [E, H]; gate_up_w [E, 2I, H] (gate rows first, then up);
//   down_w [E, H, I]; optional per-expert row scales for FP8 experts:
//   gate_up_scale [E, 2I] (or [E, 2I, 1]), down_scale [E, H] (or [E, H, 1]).
// y[t] = sum_{e in topk(t)} w_te * down_e(silu(gate_e x_t) * up_e x_t). Out in x's dtype.
// expert_codes, gate_up_subnormals, down_subnormals: what the caller knows of
// FP8 experts' codes (kiln/quantize.h); a list must be of its weight's shape.
Tensor moe_ffn(const Tensor& x, const Tensor& router_w, const Tensor& gate_up_w, const Tensor& down_w,
               int64_t top_k, bool norm_topk_prob = true, const Tensor& gate_up_scale = Tensor(),
               const Tensor& down_scale = Tensor(), Fp8Codes expert_codes = Fp8Codes::Unchecked,
               const Fp8Subnormals* gate_up_subnormals = nullptr,
               const Fp8Subnormals* down_subnormals = nullptr);

// moe_ffn with experts stored as ggml blocks (kiln/block_quant.h), as a GGUF
// file's expert stacks hold them: gate_up_blocks uint8 [E, 2I, row bytes of H]
// (gate rows first), down_blocks uint8 [E, H, row bytes of I]. Each expert's
// rows go through block_linear's kernels (a few rows: the matrix-vector
// kernel, exact to the blocks' dequantization; more: the GEMM over widened
// panels). No derivative.
Tensor moe_ffn_blocks(const Tensor& x, const Tensor& router_w, const Tensor& gate_up_blocks,
                      BlockType gate_up_type, const Tensor& down_blocks, BlockType down_type, int64_t top_k,
                      bool norm_topk_prob = true);

}  // namespace kiln
