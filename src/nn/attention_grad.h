// scaled_dot_product_attention's backward (nn/attention_grad.cc): the per-row
// logsumexp the forward saves, and the gradients recomputed from it blockwise.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::sdpa_grad {

// The problem as the forward planned it: operands are [*batch, heads, rows, e]
// once padded to nd dims; query head h reads KV head h / groups under GQA.
struct Spec {
  int nd = 3;
  Shape batch;
  int64_t Hkv = 0, Hout = 0, groups = 1;
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  double scale = 1.0;
  bool causal = false;
  int64_t causal_offset = 0;
  DType acc = DType::Float32;

  Shape full(int64_t h, int64_t rows, int64_t e) const {
    Shape s = batch;
    s.push_back(h);
    s.push_back(rows);
    s.push_back(e);
    return s;
  }
};

// logsumexp over the keys of each query row's scaled, masked scores:
// [*batch, Hout, L, 1] in spec.acc.
Tensor logsumexp_rows(const Tensor& q, const Tensor& k, const Tensor& mask, const Spec& s);

// d q, d k, d v (undefined where needs[i] is false) for the output gradient
// grad; out and lse are the forward's output and logsumexp_rows.
std::vector<Tensor> backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             const Tensor& out, const Tensor& lse, const Tensor& grad, const Spec& s,
                             const bool needs[3]);

}  // namespace kiln::sdpa_grad
