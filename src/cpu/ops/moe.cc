// CPU kernels of the MoE ops (ops/registry/matmul.h), the one MoE
// implementation behind kiln::moe_* (nn/moe.cc) and the runtime's MoE block
// (llm/moe_block.cc): routing (softmax over experts in float32 -> top-k ->
// optional renormalization), grouping of (token, expert) slots by expert, the
// SwiGLU experts on the grouped linear loop (or, for ggml block stacks, the
// block kernels expert by expert) and the weighted sum back. The
// layer works in buffers its caller owns: nothing here allocates, so the
// runtime's decode step stays allocation-free.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "cpu/gemv_blocks.h"
#include "cpu/ops/grouped_linear.h"
#include "cpu/ops/matmul_family.h"
#include "cpu/swiglu.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {

namespace {

// parallel_for over [0, n), except that a range of one grain runs here
// directly: one decode token takes neither the pool nor its lock.
template <class F>
void for_rows(int64_t n, int64_t grain, F&& fn) {
  if (n <= grain)
    fn(int64_t(0), n);
  else
    parallel_for(0, n, grain, fn);
}

// One token: softmax of row [E] into p [E], the k largest into ids / w [k].
void route_row(const float* row, int64_t E, int64_t k, bool norm, float* p, int32_t* order, float* w,
               int32_t* ids) {
  float mx = -INFINITY, sum = 0;
  for (int64_t e = 0; e < E; ++e) mx = std::max(mx, row[e]);
  for (int64_t e = 0; e < E; ++e) sum += (p[e] = std::exp(row[e] - mx));
  for (int64_t e = 0; e < E; ++e) p[e] /= sum;
  std::iota(order, order + E, 0);
  std::partial_sort(order, order + k, order + E,
                    [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  float ksum = 0;
  for (int64_t j = 0; j < k; ++j) ksum += p[order[j]];
  for (int64_t j = 0; j < k; ++j) {
    ids[j] = order[j];
    w[j] = norm && ksum > 0 ? p[order[j]] / ksum : p[order[j]];
  }
}

// Routes tokens [0, T) of logits [T, E]: per token the k most probable
// experts (descending, lower expert first on ties) -> ids [T, k] and their
// probabilities -> w [T, k], renormalized to sum 1 when norm (and their sum is
// positive). p, order: [T, E] scratch. Tokens run in parallel when there are
// enough of them; one token (decode) runs on the calling thread.
void moe_route_tokens(const float* logits, int64_t T, int64_t E, int64_t k, bool norm, float* p,
                      int32_t* order, float* w, int32_t* ids) {
  for_rows(T, std::max<int64_t>(1, 4096 / E), [&](int64_t t0, int64_t t1) {
    // A chunk reuses its first token's rows of p and order.
    for (int64_t t = t0; t < t1; ++t)
      route_row(logits + t * E, E, k, norm, p + t0 * E, order + t0 * E, w + t * k, ids + t * k);
  });
}

// ids [R] (experts in [0, E)) -> perm [R]: the slots grouped by expert
// (stable within an expert); inv [R] (or null): slot -> its row in perm
// order; offs [E]: cumulative group ends. counts: [E + 1] scratch.
void moe_group(const int32_t* ids, int64_t R, int64_t E, int64_t* counts, int32_t* perm, int32_t* inv,
               int32_t* offs) {
  std::fill(counts, counts + E + 1, 0);
  for (int64_t r = 0; r < R; ++r) ++counts[ids[r] + 1];
  for (int64_t e = 0; e < E; ++e) {
    counts[e + 1] += counts[e];
    offs[e] = int32_t(counts[e + 1]);
  }
  for (int64_t r = 0; r < R; ++r) {
    const int64_t at = counts[ids[r]]++;
    perm[at] = int32_t(r);
    if (inv) inv[r] = int32_t(at);
  }
}

// out [T, H] += sum_j w[t, j] * y[inv[t*k + j]] for each token t, slots in
// order j = 0..k-1; y [T*k, H] in perm order.
void moe_combine(const float* y, const int32_t* inv, const float* w, int64_t T, int64_t k, int64_t H,
                 float* out) {
  for_rows(T, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, H * k)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* ot = out + t * H;
      for (int64_t j = 0; j < k; ++j) {
        const float wj = w[t * k + j];
        const float* yr = y + int64_t(inv[t * k + j]) * H;
        for (int64_t c = 0; c < H; ++c) ot[c] += wj * yr[c];
      }
    }
  });
}

// y [R, N] = x [R, K] @ W[e]^T over each expert e's rows [ends[e - 1],
// ends[e]), W uint8 [E, N, row bytes] ggml blocks of type t, each expert by
// block_product (as block_linear).
void grouped_block_linear(const float* x, const Tensor& w, BlockType t, const int32_t* ends, int64_t K,
                          float* y) {
  const int64_t E = w.size(0), N = w.size(1), bytes = w.size(2);
  int64_t s = 0;
  for (int64_t e = 0; e < E; s = ends[e], ++e) {
    const int64_t rows = ends[e] - s;
    if (rows == 0) continue;
    BlockGemvArgs a;
    a.type = t;
    a.w = w.data<uint8_t>() + e * N * bytes;
    a.ldw = bytes;
    a.N = N;
    a.K = K;
    a.x = x + s * K;
    a.ldx = K;
    a.M = rows;
    a.y = y + s * N;
    a.ldy = N;
    block_product(a);
  }
}

void moe_ffn_kernel(const Tensor& x, const Tensor& logits, const Tensor& gate_up, const Tensor& gate_up_scale,
                    const Tensor& down, const Tensor& down_scale, const ops::MoEOptions& o,
                    const ops::MoEScratch& m, const Tensor& out) {
  const int64_t T = x.size(0), H = x.size(1), E = logits.size(1), k = o.top_k, R = T * k;
  const int64_t I = gate_up.size(1) / 2;  // gate_up [E, 2I, ...] whether floats or blocks
  const float* xd = x.data<float>();
  moe_route_tokens(logits.data<float>(), T, E, k, o.norm_topk_prob, m.p, m.order, m.route_w, m.route_ids);
  moe_group(m.route_ids, R, E, m.counts, m.perm, m.inv, m.offs);
  // xp [R, H]: the token rows in expert order.
  for (int64_t r = 0; r < R; ++r)
    std::copy(xd + (m.perm[r] / k) * H, xd + (m.perm[r] / k + 1) * H, m.xp + r * H);
  // h [R, 2I] = xp @ gate_up[e]^T; act [R, I] = silu(gate) * up; yp [R, H] = act @ down[e]^T.
  if (o.gate_up_blocks)
    grouped_block_linear(m.xp, gate_up, *o.gate_up_blocks, m.offs, H, m.h);
  else
    grouped_linear(grouped_linear_args(m.xp, gate_up, gate_up_scale, Tensor(), m.offs, m.h, o.codes,
                                       o.gate_up_subnormals));
  float* h = m.h;
  float* act = m.act;
  parallel_for(0, R, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, I)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) swiglu_f32(h + r * 2 * I, h + r * 2 * I + I, act + r * I, I);
  });
  if (o.down_blocks)
    grouped_block_linear(m.act, down, *o.down_blocks, m.offs, I, m.yp);
  else
    grouped_linear(
        grouped_linear_args(m.act, down, down_scale, Tensor(), m.offs, m.yp, o.codes, o.down_subnormals));
  moe_combine(m.yp, m.inv, m.route_w, T, k, H, out.data<float>());
}

void moe_route_kernel(const Tensor& logits, int64_t top_k, bool norm_topk_prob, const Tensor& weights,
                      const Tensor& ids) {
  const int64_t T = logits.size(0), E = logits.size(1);
  Tensor p = empty({T, E}, DType::Float32);
  Tensor order = empty({T, E}, DType::Int32);
  moe_route_tokens(logits.data<float>(), T, E, top_k, norm_topk_prob, p.data<float>(), order.data<int32_t>(),
                   weights.data<float>(), ids.data<int32_t>());
}

void moe_permute_kernel(const Tensor& ids, const Tensor& perm, const Tensor& offs) {
  const int64_t E = offs.size(0);
  std::vector<int64_t> counts(size_t(E) + 1);
  moe_group(ids.data<int32_t>(), ids.numel(), E, counts.data(), perm.data<int32_t>(), nullptr,
            offs.data<int32_t>());
}

void moe_unpermute_kernel(const Tensor& y_perm, const Tensor& perm, const Tensor& weights,
                          const Tensor& out) {
  const int64_t T = weights.size(0), k = weights.size(1), R = y_perm.size(0), H = y_perm.size(1);
  const int32_t* pp = perm.data<int32_t>();
  std::vector<int32_t> pos(static_cast<size_t>(R));  // slot -> its row of y_perm
  for (int64_t r = 0; r < R; ++r) pos[size_t(pp[r])] = int32_t(r);
  moe_combine(y_perm.data<float>(), pos.data(), weights.data<float>(), T, k, H, out.data<float>());
}

}  // namespace

void register_moe_kernels() {
  ops::moe_route.set_kernel(DeviceKind::CPU, moe_route_kernel);
  ops::moe_permute.set_kernel(DeviceKind::CPU, moe_permute_kernel);
  ops::moe_unpermute.set_kernel(DeviceKind::CPU, moe_unpermute_kernel);
  ops::moe_ffn.set_kernel(DeviceKind::CPU, moe_ffn_kernel);
}

}  // namespace kiln::cpu
