// nll_loss and cross_entropy with torch's semantics (class indices with
// ignore_index, class probabilities, per-class weight, label_smoothing,
// reduction none / mean / sum), recorded as one node each.
//
// Both are -sum_c q[i, c] * logp[i, c] per element i, where logp is the input
// (nll_loss) or log_softmax(input) (cross_entropy) and q the weighted target
// distribution: for class indices (1 - eps) * w[t_i] * onehot(t_i) + eps / C * w
// (zero for ignored elements), for probabilities w * (target * (1 - eps) + eps / C).
// "mean" divides by sum_i w[t_i] over the kept elements (indices) or by the
// element count (probabilities), as torch. Class indices never build q: its
// sum against logp is a_i * logp[i, t_i] + b_i * sum_c w_c logp[i, c], with
// a_i = (1 - eps) w[t_i] and b_i = eps / C for kept elements (0 otherwise),
// so only logp is as large as the input: the forward of [512, 8192] float32
// logits peaked 50 MB above its input with a one-hot q (kept for backward),
// now under 22 MB.
#include <limits>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
#include "kiln/loss.h"
#include "kiln/reduce.h"
#include "kiln/softmax.h"
#include "kiln/unary.h"
#include "nn/nn_util.h"

namespace kiln {
namespace {

struct Problem {
  int cdim = 1;   // the class dim of the input
  int64_t C = 0;  // classes
  Shape cshape;   // [1, C, 1, ...]: a per-class vector broadcast over the input
  bool probs = false;
  DType acc = DType::Float32;
};

Problem plan(const Tensor& input, const Tensor& target, const Tensor& weight, const std::string& reduction,
             double label_smoothing, const char* op) {
  Problem p;
  nn_detail::check_float(input, op, "input");
  KILN_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ValueError,
             "[" << op << "] reduction must be 'mean', 'sum' or 'none', got '" << reduction << "'");
  KILN_CHECK(input.dim() >= 1, ValueError,
             "[" << op << "] input must have at least one dim, got a 0-d tensor");
  KILN_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, ValueError,
             "[" << op << "] label_smoothing must be in [0, 1], got " << label_smoothing);
  p.cdim = input.dim() == 1 ? 0 : 1;
  p.C = input.size(p.cdim);
  p.cshape = Shape(size_t(input.dim()), 1);
  p.cshape[size_t(p.cdim)] = p.C;
  p.acc = input.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  p.probs = is_floating(target.dtype());
  if (p.probs) {
    KILN_CHECK(target.sizes() == input.sizes(), ValueError,
               "[" << op << "] class-probability target " << target.shape_str() << " must match input "
                   << input.shape_str());
  } else {
    KILN_CHECK(is_integral(target.dtype(), false), TypeError,
               "[" << op
                   << "] target must be an integer tensor of class indices or a float tensor of "
                      "class probabilities, got "
                   << name(target.dtype()));
    Shape want = input.sizes();
    want.erase(want.begin() + p.cdim);
    KILN_CHECK(target.sizes() == want, ValueError,
               "[" << op << "] target " << target.shape_str() << " does not fit input " << input.shape_str()
                   << " (expected " << shape_to_string(want) << ")");
  }
  if (weight.defined()) {
    nn_detail::check_float(weight, op, "weight");
    KILN_CHECK(weight.dim() == 1 && weight.size(0) == p.C, ValueError,
               "[" << op << "] weight has shape " << weight.shape_str() << ", expected [" << p.C << "]");
  }
  return p;
}

// Class probabilities: the weighted target distribution q [input's shape]
// and the "mean" divisor (the element count).
std::pair<Tensor, Tensor> target_dist(const Problem& p, const Tensor& target, const Tensor& weight,
                                      double eps, const Tensor& input) {
  Tensor q = target.to(p.acc);
  if (eps > 0) q = add(mul(q, Scalar(1.0 - eps)), Scalar(eps / double(p.C)));
  if (weight.defined()) q = mul(q, weight.to(p.acc).reshape(p.cshape));
  return {q, scalar_tensor(Scalar(double(input.numel() / std::max<int64_t>(p.C, 1))), p.acc, input.device())};
}

// Class indices: t [target] (int64, ignored elements 0), a and b [target] (see
// the file comment) and the "mean" divisor, sum_i w[t_i] over kept elements.
struct ClassTerms {
  Tensor t, a, b, divisor;
};
ClassTerms class_terms(const Problem& p, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                       double eps, const char* op) {
  const Tensor kept = ne(target, Scalar(ignore_index));  // [target]
  ClassTerms c;
  c.t = where(kept, target, Scalar(int64_t(0))).to(DType::Int64);
  if (c.t.numel() > 0) {
    const int64_t lo = amin(c.t).item<int64_t>(), hi = amax(c.t).item<int64_t>();
    KILN_CHECK(
        lo >= 0 && hi < p.C, IndexError,
        "[" << op << "] target " << (lo < 0 ? lo : hi) << " is out of bounds for " << p.C << " classes");
  }
  Tensor a = kept.to(p.acc);
  if (weight.defined())  // w[t_i]
    a = mul(a, index_select(weight.to(p.acc), 0, c.t.reshape({-1})).reshape(c.t.sizes()));
  c.divisor = sum(a);
  c.a = eps > 0 ? mul(a, Scalar(1.0 - eps)) : a;
  if (eps > 0) c.b = mul(kept.to(p.acc), Scalar(eps / double(p.C)));
  return c;
}

Tensor reduce(const Tensor& l, const Tensor& divisor, const std::string& reduction) {
  if (reduction == "none") return l;
  if (reduction == "sum") return sum(l);
  return div(sum(l), divisor);
}

// -(a_i logp[i, t_i] + b_i sum_c w_c logp[i, c]), reduced; its gradient in x
// is go * (s_i softmax(x) - b_i w - a_i onehot(t_i)) through log_softmax,
// with s_i = a_i + b_i sum_c w_c (the same without the softmax term for
// nll_loss's log-probabilities).
Tensor class_loss(const Problem& p, const Tensor& input, const Tensor& logp, const ClassTerms& c,
                  const Tensor& weight, const std::string& reduction, bool log_softmax_input,
                  const char* node, autograd::Record& rec) {
  const Tensor tu = c.t.unsqueeze(p.cdim);
  const Tensor w = weight.defined() ? weight.to(p.acc).reshape(p.cshape) : Tensor();
  Tensor l = neg(mul(c.a, gather(logp, p.cdim, tu).squeeze(p.cdim)));  // [target]
  if (c.b.defined()) l = sub(l, mul(c.b, sum(w.defined() ? mul(logp, w) : logp, std::vector<int>{p.cdim})));
  Tensor out = reduce(l, c.divisor, reduction).to(input.dtype());
  if (rec) {
    rec.finish(node, {&out}, {tu, c.a, c.b, c.divisor, logp, w},
               [p, reduction, log_softmax_input](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor tu = n.saved(0), a = n.saved(1), b = n.saved(2), divisor = n.saved(3),
                              logp = n.saved(4), w = n.saved(5);
                 Tensor go = g[0].to(p.acc);
                 if (reduction == "mean") go = div(go, divisor);
                 if (reduction == "none") go = go.unsqueeze(p.cdim);  // per element, over the classes
                 autograd::Grads r(3);
                 if (!n.needs(0)) return r;
                 Tensor d;
                 if (log_softmax_input) {
                   Tensor s = a;  // + b * sum_c w_c (C without a weight)
                   if (b.defined()) s = add(s, w.defined() ? mul(b, sum(w)) : mul(b, Scalar(double(p.C))));
                   d = mul(exp(logp), s.unsqueeze(p.cdim));
                 } else {
                   d = zeros_like(logp);
                 }
                 if (b.defined()) d = sub(d, w.defined() ? mul(b.unsqueeze(p.cdim), w) : b.unsqueeze(p.cdim));
                 r[0] = mul(go, scatter_add(d, p.cdim, tu, neg(a).unsqueeze(p.cdim)));
                 return r;
               });
  }
  return out;
}

Tensor loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
            const std::string& reduction, double eps, bool log_softmax_input, const char* op,
            const char* node) {
  const Problem p = plan(input, target, weight, reduction, eps, op);
  KILN_CHECK(
      !p.probs || log_softmax_input, TypeError,
      "[" << op << "] target must be an integer tensor of class indices, got " << name(target.dtype()));
  autograd::Record rec(op, {&input, &target, &weight});
  KILN_CHECK(!rec || !weight.defined() || !weight.requires_grad(), NotImplementedError,
             "[" << op << "] gradients for weight are not implemented in kiln");
  const Tensor logp = log_softmax_input ? log_softmax(input.to(p.acc), p.cdim) : input.to(p.acc);
  if (!p.probs)
    return class_loss(p, input, logp, class_terms(p, target, weight, ignore_index, eps, op), weight,
                      reduction, log_softmax_input, node, rec);
  auto [q, divisor] = target_dist(p, target, weight, eps, input);
  Tensor out = reduce(neg(sum(mul(q, logp), std::vector<int>{p.cdim})), divisor, reduction).to(input.dtype());
  if (rec) {
    rec.finish(node, {&out}, {q, logp, divisor, weight},
               [p, reduction, eps, log_softmax_input](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor q = n.saved(0), logp = n.saved(1), divisor = n.saved(2), w = n.saved(3);
                 Tensor go = g[0].to(p.acc);
                 if (reduction == "mean") go = div(go, divisor);
                 if (reduction == "none") go = go.unsqueeze(p.cdim);  // per element, over the classes
                 autograd::Grads r(3);
                 if (n.needs(0)) {
                   // d/d x of -sum_c q logp: -q, plus softmax(x) * sum_c q through log_softmax.
                   Tensor d = neg(q);
                   if (log_softmax_input) d = add(d, mul(exp(logp), sum(q, std::vector<int>{p.cdim}, true)));
                   r[0] = mul(go, d);
                 }
                 if (n.needs(1) && p.probs) {
                   Tensor d = mul(neg(logp), Scalar(1.0 - eps));
                   if (w.defined()) d = mul(d, w.to(p.acc).reshape(p.cshape));
                   r[1] = mul(go, d);
                 }
                 return r;
               });
  }
  return out;
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                const std::string& reduction) {
  return loss(input, target, weight, ignore_index, reduction, 0.0, false, "nll_loss", "NllLossBackward0");
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     const std::string& reduction, double label_smoothing) {
  return loss(input, target, weight, ignore_index, reduction, label_smoothing, true, "cross_entropy",
              "CrossEntropyLossBackward0");
}

}  // namespace kiln
