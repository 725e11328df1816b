// Dropout front-ends (kiln/dropout.h): torch's argument checks and rank rules,
// the Philox draw from the generator, and the fused op (ops/registry/
// dropout.h). The autograd node keeps the mask's (p, seed, offset) only: its
// backward regenerates the mask.
#include "kiln/dropout.h"

#include <cmath>
#include <string>

#include "core/autograd_record.h"
#include "kiln/error.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_mask(const Tensor& t, const DropoutMask& m, const char* op) {
  nn_detail::check_float(t, op, "input");
  KILN_CHECK(m.p >= 0.0 && m.p <= 1.0, ValueError,
             "[" << op << "] dropout probability has to be between 0 and 1, but got " << m.p);
  KILN_CHECK(m.group >= 1 && t.numel() % m.group == 0, ValueError,
             "[" << op << "] mask group " << m.group << " does not divide the " << t.numel()
                 << " elements of input " << t.shape_str());
}

// The product of x's dims from `first` on.
int64_t numel_from(const Tensor& x, int first) {
  int64_t n = 1;
  for (int d = first; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

void check_p(double p, const char* op) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, ValueError,
             "[" << op << "] dropout probability has to be between 0 and 1, but got " << p);
}

// The shared body of the functional forms: torch's shortcuts (not training,
// p == 0, no elements: x itself, before any rank check), the draw, then the
// fused op. channel_dim: -1 for elementwise dropout; else x's channel dim
// (1 batched [N, C, *], 0 unbatched [C, *]): one draw per channel map.
Tensor run(const char* op, const Tensor& x, double p, bool training, bool inplace, Generator* gen, bool alpha,
           int channel_dim) {
  check_p(p, op);
  if (!training || p == 0.0 || x.numel() == 0) return x;
  KILN_CHECK(channel_dim < 0 || x.dim() > channel_dim, Error,
             "[" << op << "] Feature dropout requires at least 2 dimensions in the input, got input of shape "
                 << x.shape_str());
  nn_detail::check_float(x, op, "input");
  DropoutMask m;
  m.p = p;
  m.alpha = alpha;
  m.group = channel_dim < 0 ? 1 : numel_from(x, channel_dim + 1);
  if (p < 1.0) {  // p == 1 drops everything and draws nothing, as torch
    Generator& g = gen ? *gen : default_generator();
    m.seed = g.initial_seed();
    m.offset = g.advance(dropout_counters(x.numel() / m.group));
  }
  return inplace ? dropout_masked_(x, m) : dropout_masked(x, m);
}

}  // namespace

Tensor dropout_masked(const Tensor& x, const DropoutMask& m) {
  check_mask(x, m, "dropout");
  autograd::Record rec("dropout", {&x});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  const Device device = common_device("dropout", {&x, &out});
  if (x.numel() > 0) ops::dropout(device, x, m, out);
  if (rec)
    rec.finish("NativeDropoutBackward0", {&out}, {}, [m](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{dropout_backward(g[0], m)};
    });
  return out;
}

Tensor dropout_masked_(const Tensor& x, const DropoutMask& m) {
  check_mask(x, m, "dropout_");
  if (autograd::inplace_needs_grad("dropout_", x, {}))
    return autograd::rebase_inplace(x, dropout_masked(autograd::inplace_source(x), m));
  const Device device = common_device("dropout_", {&x});
  if (x.numel() > 0) ops::dropout(device, x, m, x);
  return x;
}

Tensor dropout_backward(const Tensor& grad, const DropoutMask& m) {
  check_mask(grad, m, "dropout_backward");
  autograd::Record rec("dropout_backward", {&grad});
  Tensor out = empty(grad.sizes(), grad.dtype(), grad.device());
  const Device device = common_device("dropout_backward", {&grad, &out});
  if (grad.numel() > 0) ops::dropout_backward(device, grad, m, out);
  // Linear in grad: the derivative applies the same mask again.
  if (rec)
    rec.finish("NativeDropoutBackwardBackward0", {&out}, {}, [m](autograd::FnNode&, autograd::Grads& g) {
      return autograd::Grads{dropout_backward(g[0], m)};
    });
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training, bool inplace, Generator* gen) {
  return run("dropout", x, p, training, inplace, gen, false, -1);
}

Tensor dropout1d(const Tensor& x, double p, bool training, bool inplace, Generator* gen) {
  check_p(p, "dropout1d");
  KILN_CHECK(
      x.dim() == 2 || x.dim() == 3, Error,
      "[dropout1d] Expected 2D or 3D input, but received a "
          << x.dim() << "D input of shape " << x.shape_str()
          << ". Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
             "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).");
  return run("dropout1d", x, p, training, inplace, gen, false, x.dim() == 3 ? 1 : 0);
}

Tensor dropout2d(const Tensor& x, double p, bool training, bool inplace, Generator* gen) {
  // torch takes every rank here (and warns outside 3-d/4-d) as [N, C, *].
  return run("dropout2d", x, p, training, inplace, gen, false, 1);
}

Tensor dropout3d(const Tensor& x, double p, bool training, bool inplace, Generator* gen) {
  // 5-d: [N, C, D, H, W]; any other rank is unbatched [C, *] (torch unsqueezes it).
  return run("dropout3d", x, p, training, inplace, gen, false, x.dim() == 5 ? 1 : 0);
}

Tensor alpha_dropout(const Tensor& x, double p, bool training, bool inplace, Generator* gen) {
  return run("alpha_dropout", x, p, training, inplace, gen, true, -1);
}

Tensor feature_alpha_dropout(const Tensor& x, double p, bool training, bool inplace, Generator* gen) {
  return run("feature_alpha_dropout", x, p, training, inplace, gen, true, 1);
}

}  // namespace kiln
