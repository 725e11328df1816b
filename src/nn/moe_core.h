// The one Mixture-of-Experts implementation behind kiln::moe_* (nn/moe.cc) and
// the runtime's MoE block (llm/moe_block.cc): routing (softmax over experts in
// float32 -> top-k -> optional renormalization), grouping of (token, expert)
// slots by expert, the SwiGLU experts on the grouped linear loop and the
// weighted sum back. Raw pointers into buffers the caller owns: nothing here
// allocates, so the runtime's decode step stays allocation-free.
#pragma once

#include <cstdint>

#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln::nn_detail {

// Routes tokens [0, T) of logits [T, E] (float32, contiguous): per token the
// k most probable experts (descending, lower expert first on ties) -> ids
// [T, k] and their probabilities -> w [T, k], renormalized to sum 1 when norm
// (and their sum is positive). p, order: [T, E] float32 / int32 scratch.
// Tokens run in parallel when there are enough of them; one token (decode)
// runs on the calling thread.
void moe_route_tokens(const float* logits, int64_t T, int64_t E, int64_t k, bool norm, float* p,
                      int32_t* order, float* w, int32_t* ids);

// ids [R] (experts in [0, E), not checked) -> perm [R]: the slots grouped by
// expert (stable within an expert); inv [R] (or null): slot -> its row in
// perm order; offs [E]: cumulative group ends. counts: [E + 1] scratch.
void moe_group(const int32_t* ids, int64_t R, int64_t E, int64_t* counts, int32_t* perm, int32_t* inv,
               int32_t* offs);

// out [T, H] += sum_j w[t, j] * y[inv[t*k + j]] for each token t, slots in
// order j = 0..k-1; y [T*k, H] in perm order. Tokens run in parallel when
// there are enough of them.
void moe_combine(const float* y, const int32_t* inv, const float* w, int64_t T, int64_t k, int64_t H,
                 float* out);

// One SwiGLU MoE layer on float32 rows, nn.Linear layout:
//   gate_up [E, 2I, H] (gate rows first), down [E, H, I], K contiguous, of a
//   weight dtype; gate_up_scale [E, 2I], down_scale [E, H]: undefined or
//   float32 contiguous per-row scales (FP8 experts).
// out[t] += sum_{e in topk(t)} w_te * down_e(silu(gate_e x_t) * up_e x_t).
struct MoELayer {
  int64_t T = 0, H = 0, E = 0, I = 0, top_k = 0;
  bool norm_topk_prob = false;
  const float* x = nullptr;       // [T, H]
  const float* logits = nullptr;  // [T, E] router logits
  const Tensor* gate_up = nullptr;
  const Tensor* gate_up_scale = nullptr;
  const Tensor* down = nullptr;
  const Tensor* down_scale = nullptr;
  Fp8Codes codes = Fp8Codes::Unchecked;  // of both expert stacks (kiln/quantize.h)
  const Fp8Subnormals* gate_up_subnormals = nullptr;
  const Fp8Subnormals* down_subnormals = nullptr;
  // Scratch (R = T * top_k): p, order [T, E]; route_w [T, k]; route_ids,
  // perm, inv [R]; counts [E + 1]; offs [E] (the expert groups' ends, left for
  // the caller); xp, yp [R, H]; h [R, 2I]; act [R, I].
  float* p = nullptr;
  int32_t* order = nullptr;
  float* route_w = nullptr;
  int32_t* route_ids = nullptr;
  int32_t* perm = nullptr;
  int32_t* inv = nullptr;
  int64_t* counts = nullptr;
  int32_t* offs = nullptr;
  float *xp = nullptr, *h = nullptr, *act = nullptr, *yp = nullptr;
  float* out = nullptr;  // [T, H], accumulated into
};
void moe_layer(const MoELayer& m);

}  // namespace kiln::nn_detail
