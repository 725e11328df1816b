// rms_norm and layer_norm front-ends over trailing dims: validate the input,
// weight, bias and out, then call the op (ops/registry/nn.h), whose kernel
// normalizes rows of the n trailing elements.
#include <limits>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/nn.h"
#include "kiln/reduce.h"
#include "kiln/unary.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {
using namespace nn_detail;

void check_param(const Tensor& p, int64_t n, const char* op, const char* what) {
  if (!p.defined()) return;
  check_float(p, op, what);
  KILN_CHECK(
      p.numel() == n, ValueError,
      "[" << op << "] " << what << " has shape " << p.shape_str() << ", expected " << n << " elements");
}

// Checks x, w, b and out, then writes the normalization of x (rows of n) into
// out; out has x's shape and may have another float dtype.
void norm_into(const Tensor& x, const Tensor& w, const Tensor& b, double eps, const Tensor& out, int64_t n,
               bool rms, const char* op) {
  check_float(x, op, "input");
  check_param(w, n, op, "weight");
  check_param(b, n, op, "bias");
  KILN_CHECK(out.sizes() == x.sizes(), ValueError,
             "[" << op << "] out has shape " << out.shape_str() << ", expected " << x.shape_str());
  const Device device = common_device(op, {&x, &w, &b, &out});
  if (x.numel() == 0) return;
  if (rms) {
    ops::rms_norm(device, x, w, n, eps, out);
  } else {
    ops::layer_norm(device, x, w, b, n, eps, out);
  }
}

// torch documents finfo(x.dtype).eps, but computes bf16/f16 inputs in float32
// and uses float32's eps for them (torch 2.15: 1.19e-7, not bf16's 0.0078,
// which shrank small activations' outputs ~10x).
double default_rms_eps(DType d) {
  switch (d) {
    case DType::Float64:
      return std::numeric_limits<double>::epsilon();
    default:
      return double(std::numeric_limits<float>::epsilon());
  }
}

// The backward of rms_norm / layer_norm over the last k dims, recomputing the
// statistics from the saved input (in float32 for narrow inputs).
autograd::Grads norm_backward(autograd::FnNode& n, const Tensor& g, size_t k, double eps, bool rms) {
  const Tensor x = n.saved(0), w = n.saved(1);
  const DType acc = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  std::vector<int> dims;
  for (size_t i = 0; i < k; ++i) dims.push_back(-1 - int(i));
  const Tensor xf = x.to(acc), gf = g.to(acc);
  Tensor xc = xf;
  if (!rms) xc = sub(xf, mean(xf, dims, true));
  const Tensor rstd = rsqrt(add(mean(mul(xc, xc), dims, true), Scalar(eps)));  // [..., 1 x k]
  const Tensor xhat = mul(xc, rstd);
  autograd::Grads r(rms ? 2 : 3);
  if (n.needs(0)) {
    const Tensor gh = w.defined() ? mul(gf, w.to(acc)) : gf;  // d/d xhat
    Tensor inner = sub(gh, mul(xhat, mean(mul(gh, xhat), dims, true)));
    if (!rms) inner = sub(inner, mean(gh, dims, true));
    r[0] = mul(inner, rstd);
  }
  if (n.needs(1)) r[1] = mul(gf, xhat);  // summed to the weight's shape by the engine
  if (!rms && n.needs(2)) r[2] = gf;
  return r;
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  const int64_t n = trailing_numel(x, normalized_shape, "rms_norm");
  if (weight.defined()) {
    KILN_CHECK(weight.sizes() == normalized_shape, ValueError,
               "[rms_norm] weight has shape " << weight.shape_str() << ", expected "
                                              << shape_to_string(normalized_shape));
  }
  check_float(x, "rms_norm", "input");
  autograd::Record rec("rms_norm", {&x, &weight});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  const double e = eps.value_or(default_rms_eps(x.dtype()));
  norm_into(x, weight, Tensor(), e, out, n, true, "rms_norm");
  if (rec)
    rec.finish("RmsNormBackward0", {&out}, {x, weight},
               [k = normalized_shape.size(), e](autograd::FnNode& nd, autograd::Grads& g) {
                 return norm_backward(nd, g[0], k, e, true);
               });
  return out;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const int64_t n = trailing_numel(x, normalized_shape, "layer_norm");
  for (const Tensor* p : {&weight, &bias}) {
    if (p->defined()) {
      KILN_CHECK(p->sizes() == normalized_shape, ValueError,
                 "[layer_norm] weight/bias has shape " << p->shape_str() << ", expected "
                                                       << shape_to_string(normalized_shape));
    }
  }
  check_float(x, "layer_norm", "input");
  autograd::Record rec("layer_norm", {&x, &weight, &bias});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  norm_into(x, weight, bias, eps, out, n, false, "layer_norm");
  if (rec)
    rec.finish("NativeLayerNormBackward0", {&out}, {x, weight},
               [k = normalized_shape.size(), eps](autograd::FnNode& nd, autograd::Grads& g) {
                 return norm_backward(nd, g[0], k, eps, false);
               });
  return out;
}

void rms_norm_out(const Tensor& x, const Tensor& weight, double eps, const Tensor& out) {
  autograd::Record rec("rms_norm", {&x, &weight});
  rec.no_out(out);
  autograd::wrote(out);
  KILN_CHECK(x.dim() >= 1, ValueError, "[rms_norm] input must have at least one dim");
  norm_into(x, weight, Tensor(), eps, out, x.size(-1), true, "rms_norm");
}

void layer_norm_out(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                    const Tensor& out) {
  autograd::Record rec("layer_norm", {&x, &weight, &bias});
  rec.no_out(out);
  autograd::wrote(out);
  KILN_CHECK(x.dim() >= 1, ValueError, "[layer_norm] input must have at least one dim");
  norm_into(x, weight, bias, eps, out, x.size(-1), false, "layer_norm");
}

}  // namespace kiln
