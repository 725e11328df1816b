// The Mixture-of-Experts block (qwen3_moe, mixtral, olmoe): the router
// projection here, then the one MoE layer of nn/moe_core.h (routing, experts,
// weighted sum) added into the residual, all in scratch allocated at load.
#include "kiln/linear.h"
#include "kiln/nn.h"
#include "llm/transformer.h"
#include "nn/moe_core.h"

namespace kiln::llm::detail {

namespace {

// A contiguous [rows, cols] float32 view at the start of a scratch buffer.
Tensor head(const Tensor& buf, int64_t rows, int64_t cols) {
  return buf.view({-1}).narrow(0, 0, rows * cols).view({rows, cols});
}

}  // namespace

void Transformer::moe(int64_t l, int64_t T) {
  auto& L = layers_[size_t(l)];
  const MoEWeights& m = *L.moe;
  const int64_t E = m.E;
  Tensor x = s_.x.narrow(0, 0, T), xn = s_.xn.narrow(0, 0, T);
  rms_norm_out(x, L.mlp_norm, cfg_.rms_norm_eps, xn);
  // Router: xn [T, H] @ router^T -> logits [T, E].
  Tensor logits = head(s_.router_logits, T, E);
  linear_out(xn, m.router, Tensor(), Tensor(), logits);
  bytes_read_ += int64_t(m.router.nbytes() + L.mlp_norm.nbytes());

  // x [T, H] += the experts' weighted outputs.
  nn_detail::MoELayer a;
  a.T = T;
  a.H = H_;
  a.E = E;
  a.I = m.I;
  a.top_k = m.top_k;
  a.norm_topk_prob = m.norm_topk_prob;
  a.x = xn.data<float>();
  a.logits = logits.data<float>();
  a.gate_up = &m.gate_up;
  a.gate_up_scale = &m.gate_up_scale;
  a.down = &m.down;
  a.down_scale = &m.down_scale;
  a.codes = m.codes;
  a.gate_up_subnormals = m.gate_up_subnormals.get();
  a.down_subnormals = m.down_subnormals.get();
  a.p = s_.probs.data();
  a.order = s_.order.data();
  a.route_w = s_.route_w.data<float>();
  a.route_ids = s_.route_ids.data<int32_t>();
  a.perm = s_.perm.data<int32_t>();
  a.inv = s_.inv.data();
  a.counts = s_.counts.data();
  a.offs = s_.offs.data<int32_t>();
  a.xp = s_.xp.data<float>();
  a.h = s_.h.data<float>();
  a.act = s_.mact.data<float>();
  a.yp = s_.yp.data<float>();
  a.out = x.data<float>();
  nn_detail::moe_layer(a);
  // Each layer's experts are distinct weights: count every expert this call read.
  for (int64_t e = 0; e < E; ++e)
    if (a.offs[e] > (e == 0 ? 0 : a.offs[e - 1])) bytes_read_ += m.expert_bytes();
}

}  // namespace kiln::llm::detail
