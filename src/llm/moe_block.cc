// The Mixture-of-Experts block (qwen3_moe, mixtral, olmoe): router softmax,
// top-k (optionally renormalized), token rows grouped by expert, the SwiGLU
// experts through the grouped linear kernel, and the weighted sum back, all in
// scratch allocated at load.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/grouped_mm.h"
#include "kiln/linear.h"
#include "kiln/nn.h"
#include "kiln/thread_pool.h"
#include "llm/transformer.h"
#include "nn/swiglu.h"

namespace kiln::llm::detail {

namespace {

// A contiguous [rows, cols] float32 view at the start of a scratch buffer.
Tensor head(const Tensor& buf, int64_t rows, int64_t cols) {
  return buf.view({-1}).narrow(0, 0, rows * cols).view({rows, cols});
}

void grouped(const float* x, int64_t K, const Tensor& w, const Tensor& scale, Fp8Codes codes,
             const Fp8Subnormals* subnormals, int64_t E, int64_t N, const int32_t* ends, float* y) {
  kiln::detail::GroupedLinear p;
  p.x = x;
  p.ldx = K;
  p.w = w.data_ptr();
  p.w_dtype = w.dtype();
  p.ldw = K;
  p.w_stride = N * K;
  p.G = E;
  p.N = N;
  p.K = K;
  p.scale = scale.defined() ? scale.data<float>() : nullptr;
  p.ends = ends;
  p.y = y;
  p.ldy = N;
  p.codes = codes;
  p.subnormals = subnormals;
  kiln::detail::grouped_linear(p);
}

}  // namespace

void Transformer::moe(int64_t l, int64_t T) {
  auto& L = layers_[size_t(l)];
  const MoEWeights& m = *L.moe;
  const int64_t E = m.E, k = m.top_k, I = m.I, R = T * k;
  Tensor x = s_.x.narrow(0, 0, T), xn = s_.xn.narrow(0, 0, T);
  rms_norm_out(x, L.mlp_norm, cfg_.rms_norm_eps, xn);
  // Router: xn [T, H] @ router^T -> logits [T, E].
  Tensor logits = head(s_.router_logits, T, E);
  linear_out(xn, m.router, Tensor(), Tensor(), logits);
  bytes_read_ += int64_t(m.router.nbytes() + L.mlp_norm.nbytes());

  // Softmax over E in float32, the k largest (lower expert first on ties).
  const float* lg = logits.data<float>();
  float* rw = s_.route_w.data<float>();
  int32_t* rid = s_.route_ids.data<int32_t>();
  float* p = s_.probs.data();
  int32_t* order = s_.order.data();
  for (int64_t t = 0; t < T; ++t) {
    const float* row = lg + t * E;
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
      rid[t * k + j] = order[j];
      rw[t * k + j] = m.norm_topk_prob && ksum > 0 ? p[order[j]] / ksum : p[order[j]];
    }
  }

  // Group the T*k (token, expert) slots by expert: perm lists slots, offs the ends.
  int64_t* cnt = s_.counts.data();
  std::fill(cnt, cnt + E + 1, 0);
  for (int64_t r = 0; r < R; ++r) ++cnt[rid[r] + 1];
  int32_t* offs = s_.offs.data<int32_t>();
  for (int64_t e = 0; e < E; ++e) {
    cnt[e + 1] += cnt[e];
    offs[e] = int32_t(cnt[e + 1]);
    // Each layer's experts are distinct weights: count every expert this call reads.
    if (cnt[e + 1] > cnt[e]) bytes_read_ += m.expert_bytes();
  }
  int32_t* perm = s_.perm.data<int32_t>();
  int32_t* inv = s_.inv.data();
  for (int64_t r = 0; r < R; ++r) {
    const int64_t at = cnt[rid[r]]++;
    perm[at] = int32_t(r);
    inv[r] = int32_t(at);
  }
  // xp [R, H]: the token rows in expert order.
  const int64_t H = H_;
  float* xp = s_.xp.data<float>();
  const float* xs = xn.data<float>();
  for (int64_t r = 0; r < R; ++r) std::copy(xs + (perm[r] / k) * H, xs + (perm[r] / k + 1) * H, xp + r * H);

  // h [R, 2I] = xp @ gate_up[e]^T; act [R, I] = silu(gate) * up; yp [R, H] = act @ down[e]^T.
  float* h = s_.h.data<float>();
  float* act = s_.mact.data<float>();
  float* yp = s_.yp.data<float>();
  grouped(xp, H, m.gate_up, m.gate_up_scale, m.codes, m.gate_up_subnormals.get(), E, 2 * I, offs, h);
  parallel_for(0, R, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, I)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) nn_detail::swiglu_f32(h + r * 2 * I, h + r * 2 * I + I, act + r * I, I);
  });
  grouped(act, I, m.down, m.down_scale, m.codes, m.down_subnormals.get(), E, H, offs, yp);

  // x[t] += sum_j w[t, j] * yp[row of slot t*k + j]
  float* xo = x.data<float>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const float wj = rw[t * k + j];
      const float* yr = yp + int64_t(inv[t * k + j]) * H;
      float* xr = xo + t * H;
      for (int64_t c = 0; c < H; ++c) xr[c] += wj * yr[c];
    }
}

}  // namespace kiln::llm::detail
