// The Mixture-of-Experts block (qwen3_moe, mixtral, olmoe): the router
// projection here, then the moe_ffn op (routing, experts, weighted sum; the
// kernel behind kiln::moe_ffn) added into the residual, all in scratch
// allocated at load.
#include "kiln/linear.h"
#include "kiln/nn.h"
#include "llm/transformer.h"
#include "ops/registry/all.h"

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
  ops::MoEOptions o;
  o.top_k = m.top_k;
  o.norm_topk_prob = m.norm_topk_prob;
  o.gate_up_blocks = m.gate_up_blocks;
  o.down_blocks = m.down_blocks;
  o.codes = m.codes;
  o.gate_up_subnormals = m.gate_up_subnormals.get();
  o.down_subnormals = m.down_subnormals.get();
  ops::MoEScratch a;
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
  ops::moe_ffn(
      common_device("moe_ffn", {&xn, &logits, &m.gate_up, &m.gate_up_scale, &m.down, &m.down_scale, &x}), xn,
      logits, m.gate_up, m.gate_up_scale, m.down, m.down_scale, o, a, x);
  // Each layer's experts are distinct weights: count every expert this call read.
  for (int64_t e = 0; e < E; ++e)
    if (a.offs[e] > (e == 0 ? 0 : a.offs[e - 1])) bytes_read_ += m.expert_bytes();
}

}  // namespace kiln::llm::detail
