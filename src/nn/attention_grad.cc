// The backward of scaled_dot_product_attention, written with kiln's public ops.
// The [L, S] probabilities are never kept: the forward saves the per-row
// logsumexp of the scores, and the backward recomputes the probabilities one
// block of query rows at a time from q, k and that logsumexp.
#include "nn/attention_grad.h"

#include <algorithm>
#include <limits>

#include "kiln/binary.h"
#include "kiln/matmul.h"
#include "kiln/reduce.h"
#include "kiln/shape.h"
#include "kiln/unary.h"

namespace kiln::sdpa_grad {
namespace {

constexpr int64_t kRowBlock = 64;  // query rows per recomputed [rows, S] block

Tensor pad(Tensor t, int nd) {
  while (t.dim() < nd) t = t.unsqueeze(0);
  return t;
}

// k or v as [*batch, Hout, S, e] in the compute dtype: GQA repeats each KV head
// for its group of query heads.
Tensor heads_view(const Tensor& t, const Spec& s, int64_t e) {
  Tensor x = pad(t, s.nd).to(s.acc);
  if (s.groups > 1) {
    Shape five = s.full(s.Hkv, s.S, e);
    five.insert(five.end() - 2, s.groups);  // [*batch, Hkv, G, S, e]
    return x.expand(s.full(s.Hkv, s.S, e)).unsqueeze(-3).expand(five).reshape(s.full(s.Hout, s.S, e));
  }
  return x.expand(s.full(s.Hout, s.S, e));
}

// A gradient in [*batch, Hout, S, e] summed over each KV head's group.
Tensor fold_heads(const Tensor& g, const Spec& s, int64_t e) {
  if (s.groups <= 1) return g;
  Shape five = s.full(s.Hkv, s.S, e);
  five.insert(five.end() - 2, s.groups);
  return sum(g.reshape(five), std::vector<int>{-3});
}

// Scaled, masked scores of query rows [i0, i0 + n): [*batch, Hout, n, S];
// masked entries are -inf.
Tensor scores(const Tensor& Q, const Tensor& K, const Tensor& mask, const Spec& s, int64_t i0, int64_t n) {
  Tensor sc = mul(matmul(Q.narrow(-2, i0, n), K.transpose(-1, -2)), Scalar(s.scale));
  if (mask.defined()) {
    const Tensor mb = mask.dim() >= 2 && mask.size(-2) == s.L && s.L > 1 ? mask.narrow(-2, i0, n) : mask;
    if (mb.dtype() == DType::Bool) {
      sc = where(mb, sc, Scalar(-std::numeric_limits<double>::infinity()));
    } else {
      sc = add(sc, mb.to(s.acc));
    }
  }
  if (s.causal) {  // row i sees keys j <= i + offset
    const Tensor rows = arange(Scalar(i0 + s.causal_offset), Scalar(i0 + s.causal_offset + n)).unsqueeze(-1);
    const Tensor cols = arange(Scalar(int64_t(0)), Scalar(s.S));
    sc = where(le(cols, rows), sc, Scalar(-std::numeric_limits<double>::infinity()));
  }
  return sc;
}

}  // namespace

Tensor logsumexp_rows(const Tensor& q, const Tensor& k, const Tensor& mask, const Spec& s) {
  if (s.L == 0) return Tensor();
  const Tensor Q = pad(q, s.nd).to(s.acc).expand(s.full(s.Hout, s.L, s.E));
  const Tensor K = heads_view(k, s, s.E);
  std::vector<Tensor> parts;
  for (int64_t i0 = 0; i0 < s.L; i0 += kRowBlock) {
    const int64_t n = std::min(kRowBlock, s.L - i0);
    parts.push_back(logsumexp(scores(Q, K, mask, s, i0, n), std::vector<int>{-1}, true));
  }
  return cat(parts, -2);  // [*batch, Hout, L, 1]
}

std::vector<Tensor> backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Tensor& out, const Tensor& lse, const Tensor& grad, const Spec& s,
                             const bool needs[3]) {
  std::vector<Tensor> r(3);
  if (s.L == 0 || s.S == 0) return r;  // no scores: the output did not depend on q, k, v
  const Tensor Q = pad(q, s.nd).to(s.acc).expand(s.full(s.Hout, s.L, s.E));
  const Tensor K = heads_view(k, s, s.E), V = heads_view(v, s, s.Ev);
  const Tensor G = pad(grad, s.nd).to(s.acc);  // [*batch, Hout, L, Ev]
  // Rows with every key masked gave zeros: their probabilities are all 0.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor L = where(eq(lse, Scalar(-inf)), Scalar(0.0), lse);
  const Tensor D = sum(mul(G, pad(out, s.nd).to(s.acc)), std::vector<int>{-1}, true);  // [..., L, 1]
  std::vector<Tensor> dq_parts;
  Tensor dk, dv;
  for (int64_t i0 = 0; i0 < s.L; i0 += kRowBlock) {
    const int64_t n = std::min(kRowBlock, s.L - i0);
    const Tensor p = exp(sub(scores(Q, K, mask, s, i0, n), L.narrow(-2, i0, n)));  // [..., n, S]
    const Tensor gb = G.narrow(-2, i0, n);                                         // [..., n, Ev]
    if (needs[2]) {
      const Tensor t = matmul(p.transpose(-1, -2), gb);  // [..., S, Ev]
      dv = dv.defined() ? add(dv, t) : t;
    }
    if (!needs[0] && !needs[1]) continue;
    // d scores = p * (dp - rowsum(dO * O)), dp = dO V^T
    const Tensor ds = mul(mul(p, sub(matmul(gb, V.transpose(-1, -2)), D.narrow(-2, i0, n))), Scalar(s.scale));
    if (needs[0]) dq_parts.push_back(matmul(ds, K));  // [..., n, E]
    if (needs[1]) {
      const Tensor t = matmul(ds.transpose(-1, -2), Q.narrow(-2, i0, n));  // [..., S, E]
      dk = dk.defined() ? add(dk, t) : t;
    }
  }
  if (needs[0]) r[0] = cat(dq_parts, -2);
  if (needs[1]) r[1] = fold_heads(dk, s, s.E);
  if (needs[2]) r[2] = fold_heads(dv, s, s.Ev);
  return r;
}

}  // namespace kiln::sdpa_grad
