// scaled_dot_product_attention front-end: checks dtypes and flags, broadcasts
// the batch dims and maps query heads to KV heads (GQA), binds or allocates
// the output, checks the mask and draws the dropout stream, then calls the op
// (ops/registry/nn.h), whose kernel splits the work and attends.
#include "kiln/attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/autograd_record.h"
#include "kiln/error.h"
#include "nn/attention_grad.h"
#include "nn/attention_math.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

void check_dtype(DType d) {
  if (d == DType::Float32 || d == DType::BFloat16 || d == DType::Float16) return;
  throw TypeError(std::string("[") + kOp + "] unsupported dtype " + name(d) +
                  " (float16, bfloat16, float32; float64 through the public entry)");
}

Tensor pad_dims(Tensor t, int nd) {
  while (t.dim() < nd) t = t.unsqueeze(0);
  return t;
}

int64_t bcast(int64_t a, int64_t b, const char* what, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (a == b || b == 1) return a;
  if (a == 1) return b;
  throw ValueError(std::string("[") + kOp + "] " + what + " do not broadcast: query " + q.shape_str() +
                   ", key " + k.shape_str() + ", value " + v.shape_str());
}

// One call as the public entry points give it.
struct Request {
  const Tensor& q;
  const Tensor& k;
  const Tensor& v;
  const Tensor& attn_mask;
  bool is_causal = false;
  int64_t causal_offset = 0;  // row i sees keys j <= i + causal_offset
  std::optional<double> scale;
  bool enable_gqa = false;
  float dropout_p = 0.0f;
  Generator* gen = nullptr;
  const Tensor* out = nullptr;  // written in place when given; else made as out_dtype
  DType out_dtype = DType::Float32;
};

// The validated problem: every operand as a [*batch, heads, rows, cols] view.
struct Problem {
  int nd = 0;  // rank of the views (inputs padded to at least 3 dims)
  Shape batch;
  int64_t B = 1;                        // batch elements (product of batch)
  int64_t L = 0, S = 0, E = 0, Ev = 0;  // query rows, key rows, q/k width, v width
  int64_t Hq = 0, Hkv = 0, Hout = 0;
  Tensor q, k, v;  // [*batch, Hq, L, E], [*batch, Hkv, S, E], [*batch, Hkv, S, Ev]
  Tensor out;      // as returned: the rank of the highest-rank input
  Tensor o;        // out as [*batch, Hout, L, Ev]
  double scale = 1.0;
  bool causal = false;
  int64_t causal_offset = 0;

  // batch + [h, rows, e]
  Shape full(int64_t h, int64_t rows, int64_t e) const {
    Shape s = batch;
    s.push_back(h);
    s.push_back(rows);
    s.push_back(e);
    return s;
  }
};

// Dtypes and flags.
void check_request(const Request& r) {
  KILN_CHECK(r.q.dim() >= 2 && r.k.dim() >= 2 && r.v.dim() >= 2, ValueError,
             "[" << kOp << "] query, key and value need at least 2 dims, got " << r.q.shape_str() << ", "
                 << r.k.shape_str() << ", " << r.v.shape_str());
  KILN_CHECK(r.k.dtype() == r.v.dtype(), TypeError,
             "[" << kOp << "] key and value must have one dtype, got " << name(r.k.dtype()) << " and "
                 << name(r.v.dtype()));
  check_dtype(r.q.dtype());
  check_dtype(r.k.dtype());
  KILN_CHECK(!(r.is_causal && r.attn_mask.defined()), ValueError,
             "[" << kOp << "] attn_mask and is_causal cannot both be set");
  KILN_CHECK(r.dropout_p >= 0.0f && r.dropout_p <= 1.0f, ValueError,
             "[" << kOp << "] dropout_p must be in [0, 1], got " << r.dropout_p);
}

// Head counts: Hout output heads; with enable_gqa, output head h reads KV head
// h / (Hout / Hkv) (the kernel derives that mapping from the head counts).
void map_heads(const Request& r, Problem& p) {
  p.Hq = p.q.size(-3);
  p.Hkv = bcast(p.k.size(-3), p.v.size(-3), "key/value heads", r.q, r.k, r.v);
  if (r.enable_gqa && p.Hq != p.Hkv) {
    KILN_CHECK(p.Hkv > 0 && p.Hq % p.Hkv == 0, ValueError,
               "[" << kOp << "] enable_gqa needs query heads (" << p.Hq
                   << ") to be a multiple of key/value heads (" << p.Hkv << ")");
    p.Hout = p.Hq;
  } else {
    p.Hout = bcast(p.Hq, p.Hkv, "heads", r.q, r.k, r.v);
  }
}

// Shapes, broadcasting and heads; q, k, v expanded to their full views.
Problem plan_problem(const Request& r) {
  Problem p;
  check_request(r);
  p.nd = std::max({r.q.dim(), r.k.dim(), r.v.dim(), 3});
  const int nd = p.nd;
  p.q = pad_dims(r.q, nd);
  p.k = pad_dims(r.k, nd);
  p.v = pad_dims(r.v, nd);
  p.E = p.q.size(-1);
  p.L = p.q.size(-2);
  p.S = p.k.size(-2);
  p.Ev = p.v.size(-1);
  KILN_CHECK(p.k.size(-1) == p.E && p.v.size(-2) == p.S, ValueError,
             "[" << kOp << "] shapes do not match: query " << r.q.shape_str() << ", key " << r.k.shape_str()
                 << ", value " << r.v.shape_str()
                 << " (need query/key last dims equal and key/value lengths equal)");
  for (int d = 0; d < nd - 3; ++d)
    p.batch.push_back(bcast(bcast(p.q.size(d), p.k.size(d), "batch dims", r.q, r.k, r.v), p.v.size(d),
                            "batch dims", r.q, r.k, r.v));
  for (int64_t s : p.batch) p.B *= s;
  map_heads(r, p);
  if (p.q.stride(-1) != 1 && p.E > 1) p.q = p.q.contiguous();
  if (p.k.stride(-1) != 1 && p.E > 1) p.k = p.k.contiguous();
  if (p.v.stride(-1) != 1 && p.Ev > 1) p.v = p.v.contiguous();
  p.q = p.q.expand(p.full(p.Hq, p.L, p.E));
  p.k = p.k.expand(p.full(p.Hkv, p.S, p.E));
  p.v = p.v.expand(p.full(p.Hkv, p.S, p.Ev));
  p.scale = r.scale.value_or(1.0 / std::sqrt(double(p.E)));
  p.causal = r.is_causal;
  p.causal_offset = r.causal_offset;
  return p;
}

// The given output, checked, or a new one; sets p.out and its full view p.o.
void bind_output(const Request& r, Problem& p) {
  const Shape out_shape = [&] {
    Shape s = p.full(p.Hout, p.L, p.Ev);
    // The result keeps the rank of the highest-rank input (2-D inputs: 2-D out).
    const int od = std::max({r.q.dim(), r.k.dim(), r.v.dim()});
    return Shape(s.end() - od, s.end());
  }();
  if (r.out) {
    KILN_CHECK(r.out->sizes() == out_shape, ValueError,
               "[" << kOp << "] out has shape " << r.out->shape_str() << ", expected "
                   << shape_to_string(out_shape));
    KILN_CHECK(r.out->stride(-1) == 1 || p.Ev <= 1, ValueError,
               "[" << kOp << "] out needs a unit-stride last dim");
    check_dtype(r.out->dtype());
    p.out = *r.out;
  } else {
    p.out = empty(out_shape, r.out_dtype, p.q.device());
  }
  p.o = pad_dims(p.out, p.nd);  // [*batch, Hout, L, Ev]
}

// Checks that attn_mask is bool or floating and broadcasts to
// [*batch, Hout, L, S].
void check_mask(const Tensor& attn_mask, const Problem& p) {
  const Tensor& mk = attn_mask;
  KILN_CHECK(mk.dtype() == DType::Bool || (is_floating(mk.dtype()) && !is_fp8(mk.dtype())), TypeError,
             "[" << kOp << "] attn_mask must be bool or floating, got " << name(mk.dtype()));
  KILN_CHECK(mk.dim() <= p.nd, ValueError,
             "[" << kOp << "] attn_mask " << mk.shape_str() << " does not broadcast to "
                 << shape_to_string(p.full(p.Hout, p.L, p.S)));
  const int off = p.nd - mk.dim();
  const Shape want = p.full(p.Hout, p.L, p.S);
  for (int d = 0; d < p.nd; ++d) {
    const int64_t s = d < off ? 1 : mk.size(d - off);
    // A size-1 last dim is expanded to S.
    KILN_CHECK(s == want[size_t(d)] || s == 1, ValueError,
               "[" << kOp << "] attn_mask " << attn_mask.shape_str() << " does not broadcast to "
                   << shape_to_string(want));
  }
}

// Dropout's Philox stream: one counter per (row, key) of the whole call.
ops::AttentionDropout dropout_state(const Request& r, const Problem& p) {
  ops::AttentionDropout drop;
  if (r.dropout_p > 0.0f) {
    Generator& g = r.gen ? *r.gen : default_generator();
    drop.p = r.dropout_p;
    drop.seed = g.initial_seed();
    drop.offset = g.advance((uint64_t(p.B * p.Hout * p.L) * uint64_t(p.S) + 3) / 4);
  }
  return drop;
}

// Validate and plan, bind the output, check the mask, draw dropout, attend.
Tensor run(const Request& r) {
  Problem p = plan_problem(r);
  bind_output(r, p);
  const Device device = common_device(kOp, {&r.q, &r.k, &r.v, &r.attn_mask, &p.out});
  if (p.out.numel() == 0) return p.out;
  if (r.attn_mask.defined()) check_mask(r.attn_mask, p);
  const ops::AttentionDropout drop = dropout_state(r, p);
  ops::scaled_dot_product_attention(device, p.q, p.k, p.v, r.attn_mask, p.scale, p.causal, p.causal_offset,
                                    drop, p.o);
  return p.out;
}

}  // namespace
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa, Generator* gen) {
  KILN_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), TypeError,
             "[" << kOp << "] query, key and value must have one dtype, got " << name(q.dtype()) << ", "
                 << name(k.dtype()) << ", " << name(v.dtype()));
  if (q.dtype() == DType::Float64)  // torch's math path; its ops record their own derivatives
    return detail::sdpa_math(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, gen);
  autograd::Record rec(kOp, {&q, &k, &v, &attn_mask});
  const Request req{.q = q,
                    .k = k,
                    .v = v,
                    .attn_mask = attn_mask,
                    .is_causal = is_causal,
                    .scale = scale,
                    .enable_gqa = enable_gqa,
                    .dropout_p = float(dropout_p),
                    .gen = gen,
                    .out_dtype = q.dtype()};
  if (rec) {
    KILN_CHECK(dropout_p == 0.0, NotImplementedError,
               "[" << kOp << "] gradients with dropout_p > 0 are not implemented in kiln");
    KILN_CHECK(!attn_mask.defined() || !attn_mask.requires_grad(), NotImplementedError,
               "[" << kOp << "] gradients for attn_mask are not implemented in kiln");
  }
  Tensor out = run(req);
  if (rec) {
    const Problem p = plan_problem(req);
    sdpa_grad::Spec spec{.nd = p.nd,
                         .batch = p.batch,
                         .Hkv = p.Hkv,
                         .Hout = p.Hout,
                         .groups = p.Hout / std::max<int64_t>(p.Hkv, 1),
                         .L = p.L,
                         .S = p.S,
                         .E = p.E,
                         .Ev = p.Ev,
                         .scale = p.scale,
                         .causal = is_causal};
    if (!enable_gqa || p.Hq == p.Hkv) spec.groups = 1;
    const Tensor lse = sdpa_grad::logsumexp_rows(q, k, attn_mask, spec);  // [*batch, Hout, L, 1]
    rec.finish("ScaledDotProductAttentionBackward0", {&out}, {q, k, v, attn_mask, out, lse},
               [spec](autograd::FnNode& n, autograd::Grads& g) {
                 const bool needs[3] = {n.needs(0), n.needs(1), n.needs(2)};
                 std::vector<Tensor> r = sdpa_grad::backward(n.saved(0), n.saved(1), n.saved(2), n.saved(3),
                                                             n.saved(4), n.saved(5), g[0], spec, needs);
                 r.push_back(Tensor());  // attn_mask
                 return r;
               });
  }
  return out;
}

void scaled_dot_product_attention_out(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionOptions& opt, const Tensor& out) {
  autograd::Record rec(kOp, {&q, &k, &v, &opt.attn_mask});
  rec.no_out(out);
  autograd::wrote(out);
  run({.q = q,
       .k = k,
       .v = v,
       .attn_mask = opt.attn_mask,
       .is_causal = opt.is_causal,
       .causal_offset = opt.causal_offset,
       .scale = opt.scale,
       .enable_gqa = opt.enable_gqa,
       .out = &out,
       .out_dtype = out.dtype()});
}

}  // namespace kiln
