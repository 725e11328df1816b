// MoE front-ends: routing, permutation, weighted un-permute and the fused
// SwiGLU expert FFN check and allocate here, then call their ops
// (ops/registry/matmul.h); moe_ffn's kernel is the one the runtime's MoE block
// runs too.
#include "kiln/moe.h"

#include <vector>

#include "kiln/error.h"
#include "kiln/linear.h"
#include "ops/linear_common.h"
#include "ops/registry/all.h"

namespace kiln {

std::tuple<Tensor, Tensor> moe_route(const Tensor& logits, int64_t top_k, bool norm_topk_prob) {
  KILN_CHECK(logits.defined() && logits.dim() == 2, ValueError,
             "[moe_route] router logits must be 2-D [tokens, experts], got "
                 << (logits.defined() ? logits.shape_str() : "undefined"));
  KILN_CHECK(detail::is_activation_dtype(logits.dtype()) || logits.dtype() == DType::Float64, TypeError,
             "[moe_route] router logits must be floating, got " << name(logits.dtype()));
  const int64_t T = logits.size(0), E = logits.size(1);
  KILN_CHECK(top_k >= 1 && top_k <= E, ValueError,
             "[moe_route] top_k must be in [1, " << E << "] for " << E << " experts, got " << top_k);
  const Tensor lf = detail::f32_contiguous(logits);
  Tensor weights = empty({T, top_k}, DType::Float32, lf.device());
  Tensor ids = empty({T, top_k}, DType::Int32, lf.device());
  ops::moe_route(common_device("moe_route", {&lf, &weights, &ids}), lf, top_k, norm_topk_prob, weights, ids);
  return {weights, ids};
}

std::tuple<Tensor, Tensor> moe_permute(const Tensor& ids, int64_t num_experts) {
  KILN_CHECK(ids.defined() && ids.dim() == 2 && ids.dtype() == DType::Int32, ValueError,
             "[moe_permute] ids must be a 2-D int32 tensor [tokens, top_k], got "
                 << (ids.defined() ? ids.shape_str() + " " + name(ids.dtype()) : std::string("undefined")));
  KILN_CHECK(num_experts >= 1 && num_experts < (int64_t(1) << 31), ValueError,
             "[moe_permute] num_experts must be positive, got " << num_experts);
  const Tensor ic = ids.contiguous();
  const Tensor ih = ic.cpu();  // the range check reads the ids on the host
  const int32_t* id = ih.data<int32_t>();
  const int64_t R = ic.numel();
  for (int64_t r = 0; r < R; ++r)
    KILN_CHECK(id[r] >= 0 && id[r] < num_experts, IndexError,
               "[moe_permute] expert id " << id[r] << " at flat slot " << r << " is out of range for "
                                          << num_experts << " experts");
  Tensor offs = empty({num_experts}, DType::Int32, ic.device());
  Tensor perm = empty({R}, DType::Int32, ic.device());
  ops::moe_permute(common_device("moe_permute", {&ic, &perm, &offs}), ic, perm, offs);
  return {perm, offs};
}

Tensor moe_unpermute(const Tensor& y_perm, const Tensor& perm, const Tensor& weights) {
  KILN_CHECK(y_perm.defined() && y_perm.dim() == 2, ValueError,
             "[moe_unpermute] y_perm must be 2-D [T*k, H]");
  KILN_CHECK(weights.defined() && weights.dim() == 2, ValueError,
             "[moe_unpermute] weights must be 2-D [T, k]");
  KILN_CHECK(perm.defined() && perm.dim() == 1 && perm.dtype() == DType::Int32, ValueError,
             "[moe_unpermute] perm must be a 1-D int32 tensor");
  const int64_t T = weights.size(0), k = weights.size(1), R = y_perm.size(0), H = y_perm.size(1);
  KILN_CHECK(R == T * k && perm.size(0) == R, ValueError,
             "[moe_unpermute] y_perm " << y_perm.shape_str() << ", perm " << perm.shape_str()
                                       << " and weights " << weights.shape_str() << " disagree on T*k");
  const Tensor pc = perm.contiguous();
  const Tensor ph = pc.cpu();  // the permutation check reads it on the host
  const int32_t* pp = ph.data<int32_t>();
  std::vector<bool> seen(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    KILN_CHECK(pp[r] >= 0 && pp[r] < R && !seen[size_t(pp[r])], ValueError,
               "[moe_unpermute] perm is not a permutation of [0, " << R << ") (entry " << r << " = " << pp[r]
                                                                   << ")");
    seen[size_t(pp[r])] = true;
  }
  const Tensor yf = detail::f32_contiguous(y_perm), wf = detail::f32_contiguous(weights);
  Tensor out = zeros({T, H}, DType::Float32, yf.device());
  ops::moe_unpermute(common_device("moe_unpermute", {&yf, &pc, &wf, &out}), yf, pc, wf, out);
  return out.to(y_perm.dtype() == DType::Float64 || detail::is_activation_dtype(y_perm.dtype())
                    ? y_perm.dtype()
                    : DType::Float32);
}

namespace {

// A per-row expert scale [E, N] or [E, N, 1] as float32 contiguous, or undefined.
Tensor expert_scale(const Tensor& s, int64_t E, int64_t N, const char* what) {
  if (!s.defined()) return s;
  KILN_CHECK(s.numel() == E * N && s.size(0) == E &&
                 ((s.dim() == 2 && s.size(1) == N) || (s.dim() == 3 && s.size(1) == N && s.size(2) == 1)),
             ValueError,
             "[moe_ffn] " << what << " must be [" << E << ", " << N << "] or [" << E << ", " << N
                          << ", 1], got " << s.shape_str());
  return detail::f32_contiguous(s);
}

// W [E, N, K] with k contiguous, as the grouped loop takes it.
Tensor expert_weights(const Tensor& w, const char* what) {
  KILN_CHECK(
      detail::is_weight_dtype(w.dtype()), TypeError,
      "[moe_ffn] " << what << " dtype must be float32, bfloat16, float16 or FP8, got " << name(w.dtype()));
  if (w.stride(2) == 1 && (w.size(1) <= 1 || w.stride(1) >= w.size(2)) &&
      (w.size(0) <= 1 || w.stride(0) >= w.size(1) * w.size(2)))
    return w;
  return w.contiguous();
}

// Routes x's tokens, runs the experts w1 / w2 (with their scales s1 / s2,
// or as blocks where o says) in buffers allocated here, and returns the
// weighted sum [T, H] in x's dtype. Shapes already checked.
Tensor run_moe_ffn(const Tensor& x, const Tensor& router_w, const Tensor& w1, const Tensor& s1,
                   const Tensor& w2, const Tensor& s2, int64_t I, const ops::MoEOptions& o) {
  const int64_t T = x.size(0), H = x.size(1), E = router_w.size(0), I2 = 2 * I, top_k = o.top_k;
  const Tensor xf = detail::f32_contiguous(x);
  const Tensor logits = detail::f32_contiguous(linear(xf, router_w));  // [T, E]
  const int64_t R = T * top_k;
  Tensor p = empty({T, E}, DType::Float32, xf.device()),
         route_w = empty({T, top_k}, DType::Float32, xf.device()),
         xp = empty({R, H}, DType::Float32, xf.device()), h = empty({R, I2}, DType::Float32, xf.device()),
         act = empty({R, I}, DType::Float32, xf.device()), yp = empty({R, H}, DType::Float32, xf.device());
  Tensor order = empty({T, E}, DType::Int32, xf.device()), route_ids = empty({R}, DType::Int32, xf.device()),
         perm = empty({R}, DType::Int32, xf.device()), inv = empty({R}, DType::Int32, xf.device()),
         offs = empty({E}, DType::Int32, xf.device());
  std::vector<int64_t> counts(size_t(E) + 1);
  Tensor out = zeros({T, H}, DType::Float32, xf.device());
  ops::MoEScratch m;
  m.p = p.data<float>();
  m.order = order.data<int32_t>();
  m.route_w = route_w.data<float>();
  m.route_ids = route_ids.data<int32_t>();
  m.perm = perm.data<int32_t>();
  m.inv = inv.data<int32_t>();
  m.counts = counts.data();
  m.offs = offs.data<int32_t>();
  m.xp = xp.data<float>();
  m.h = h.data<float>();
  m.act = act.data<float>();
  m.yp = yp.data<float>();
  ops::moe_ffn(common_device("moe_ffn", {&xf, &logits, &w1, &s1, &w2, &s2, &out}), xf, logits, w1, s1, w2, s2,
               o, m, out);
  return out.to(x.dtype());
}

}  // namespace

Tensor moe_ffn(const Tensor& x, const Tensor& router_w, const Tensor& gate_up_w, const Tensor& down_w,
               int64_t top_k, bool norm_topk_prob, const Tensor& gate_up_scale, const Tensor& down_scale,
               Fp8Codes expert_codes, const Fp8Subnormals* gate_up_subnormals,
               const Fp8Subnormals* down_subnormals) {
  KILN_CHECK(x.defined() && x.dim() == 2, ValueError, "[moe_ffn] x must be 2-D [tokens, hidden]");
  KILN_CHECK(detail::is_activation_dtype(x.dtype()), TypeError,
             "[moe_ffn] x must be float32, bfloat16 or float16, got " << name(x.dtype()));
  KILN_CHECK(router_w.defined() && router_w.dim() == 2 && gate_up_w.defined() && gate_up_w.dim() == 3 &&
                 down_w.defined() && down_w.dim() == 3,
             ValueError, "[moe_ffn] router_w must be [E, H], gate_up_w [E, 2I, H], down_w [E, H, I]");
  const int64_t H = x.size(1), E = router_w.size(0);
  const int64_t I2 = gate_up_w.size(1), I = I2 / 2;
  KILN_CHECK(router_w.size(1) == H && gate_up_w.size(0) == E && gate_up_w.size(2) == H && I2 % 2 == 0 &&
                 down_w.size(0) == E && down_w.size(1) == H && down_w.size(2) == I,
             ValueError,
             "[moe_ffn] shapes disagree: x " << x.shape_str() << ", router_w " << router_w.shape_str()
                                             << ", gate_up_w " << gate_up_w.shape_str() << ", down_w "
                                             << down_w.shape_str()
                                             << " (want [T, H], [E, H], [E, 2I, H], [E, H, I])");
  KILN_CHECK(top_k >= 1 && top_k <= E, ValueError,
             "[moe_ffn] top_k must be in [1, " << E << "], got " << top_k);
  const Tensor s1 = expert_scale(gate_up_scale, E, I2, "gate_up_scale");
  const Tensor s2 = expert_scale(down_scale, E, H, "down_scale");
  const Tensor w1 = expert_weights(gate_up_w, "gate_up_w"), w2 = expert_weights(down_w, "down_w");
  if (gate_up_subnormals) detail::check_subnormal_list(*gate_up_subnormals, w1.dtype(), E, I2, H, "moe_ffn");
  if (down_subnormals) detail::check_subnormal_list(*down_subnormals, w2.dtype(), E, H, I, "moe_ffn");

  ops::MoEOptions o;
  o.top_k = top_k;
  o.norm_topk_prob = norm_topk_prob;
  o.codes = expert_codes;
  o.gate_up_subnormals = gate_up_subnormals;
  o.down_subnormals = down_subnormals;
  return run_moe_ffn(x, router_w, w1, s1, w2, s2, I, o);
}

namespace {

// A stack of block matrices: uint8 [E, N, row bytes] of whole `type` blocks;
// returns the rows' length K in elements.
int64_t expert_block_k(const Tensor& w, BlockType type, int64_t E, int64_t N, const char* what) {
  const BlockTypeInfo& info = block_type_info(type);
  KILN_CHECK(w.defined() && w.dtype() == DType::UInt8, TypeError,
             "[moe_ffn_blocks] " << what << " must be uint8 (the stored bytes), got "
                                 << (w.defined() ? name(w.dtype()) : std::string("undefined")));
  KILN_CHECK(w.dim() == 3 && w.size(0) == E && w.size(1) == N && w.size(2) % info.block_bytes == 0,
             ValueError,
             "[moe_ffn_blocks] " << what << " must be [" << E << ", " << N << ", bytes per row] of whole "
                                 << info.name << " blocks (" << info.block_bytes << " bytes each), got "
                                 << w.shape_str());
  return w.size(2) / info.block_bytes * info.block_size;
}

}  // namespace

Tensor moe_ffn_blocks(const Tensor& x, const Tensor& router_w, const Tensor& gate_up_blocks,
                      BlockType gate_up_type, const Tensor& down_blocks, BlockType down_type, int64_t top_k,
                      bool norm_topk_prob) {
  KILN_CHECK(x.defined() && x.dim() == 2, ValueError, "[moe_ffn_blocks] x must be 2-D [tokens, hidden]");
  KILN_CHECK(detail::is_activation_dtype(x.dtype()), TypeError,
             "[moe_ffn_blocks] x must be float32, bfloat16 or float16, got " << name(x.dtype()));
  KILN_CHECK(!x.requires_grad(), NotImplementedError,
             "[moe_ffn_blocks] has no derivative yet: dequantize_blocks the experts to train through them");
  KILN_CHECK(router_w.defined() && router_w.dim() == 2 && router_w.size(1) == x.size(1), ValueError,
             "[moe_ffn_blocks] router_w must be [E, "
                 << x.size(1) << "], got " << (router_w.defined() ? router_w.shape_str() : "undefined"));
  const int64_t H = x.size(1), E = router_w.size(0);
  KILN_CHECK(gate_up_blocks.defined() && gate_up_blocks.dim() == 3 && gate_up_blocks.size(1) % 2 == 0,
             ValueError, "[moe_ffn_blocks] gate_up_blocks must be [E, 2I, bytes per row]");
  const int64_t I = gate_up_blocks.size(1) / 2;
  KILN_CHECK(expert_block_k(gate_up_blocks, gate_up_type, E, 2 * I, "gate_up_blocks") == H, ValueError,
             "[moe_ffn_blocks] gate_up_blocks rows of " << gate_up_blocks.size(2) << " bytes are not " << H
                                                        << " elements of "
                                                        << block_type_info(gate_up_type).name);
  KILN_CHECK(expert_block_k(down_blocks, down_type, E, H, "down_blocks") == I, ValueError,
             "[moe_ffn_blocks] down_blocks rows of " << down_blocks.size(2) << " bytes are not " << I
                                                     << " elements of " << block_type_info(down_type).name);
  KILN_CHECK(top_k >= 1 && top_k <= E, ValueError,
             "[moe_ffn_blocks] top_k must be in [1, " << E << "], got " << top_k);
  ops::MoEOptions o;
  o.top_k = top_k;
  o.norm_topk_prob = norm_topk_prob;
  o.gate_up_blocks = gate_up_type;
  o.down_blocks = down_type;
  return run_moe_ffn(x, router_w, gate_up_blocks.contiguous(), Tensor(), down_blocks.contiguous(), Tensor(),
                     I, o);
}

}  // namespace kiln
