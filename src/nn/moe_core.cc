// The MoE layer's steps on raw buffers (see moe_core.h).
#include "nn/moe_core.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/thread_pool.h"
#include "nn/swiglu.h"
#include "ops/grouped_linear.h"

namespace kiln::nn_detail {

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

}  // namespace

void moe_route_tokens(const float* logits, int64_t T, int64_t E, int64_t k, bool norm, float* p,
                      int32_t* order, float* w, int32_t* ids) {
  for_rows(T, std::max<int64_t>(1, 4096 / E), [&](int64_t t0, int64_t t1) {
    // A chunk reuses its first token's rows of p and order.
    for (int64_t t = t0; t < t1; ++t)
      route_row(logits + t * E, E, k, norm, p + t0 * E, order + t0 * E, w + t * k, ids + t * k);
  });
}

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

void moe_layer(const MoELayer& m) {
  const int64_t T = m.T, H = m.H, E = m.E, I = m.I, k = m.top_k, R = T * k;
  moe_route_tokens(m.logits, T, E, k, m.norm_topk_prob, m.p, m.order, m.route_w, m.route_ids);
  moe_group(m.route_ids, R, E, m.counts, m.perm, m.inv, m.offs);
  // xp [R, H]: the token rows in expert order.
  for (int64_t r = 0; r < R; ++r)
    std::copy(m.x + (m.perm[r] / k) * H, m.x + (m.perm[r] / k + 1) * H, m.xp + r * H);
  // h [R, 2I] = xp @ gate_up[e]^T; act [R, I] = silu(gate) * up; yp [R, H] = act @ down[e]^T.
  detail::grouped_linear(detail::grouped_linear_args(m.xp, *m.gate_up, *m.gate_up_scale, Tensor(), m.offs,
                                                     m.h, m.codes, m.gate_up_subnormals));
  float* h = m.h;
  float* act = m.act;
  parallel_for(0, R, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, I)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) swiglu_f32(h + r * 2 * I, h + r * 2 * I + I, act + r * I, I);
  });
  detail::grouped_linear(detail::grouped_linear_args(m.act, *m.down, *m.down_scale, Tensor(), m.offs, m.yp,
                                                     m.codes, m.down_subnormals));
  moe_combine(m.yp, m.inv, m.route_w, T, k, H, m.out);
}

}  // namespace kiln::nn_detail
