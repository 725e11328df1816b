// rms_norm and layer_norm front-ends over trailing dims: validate the input,
// weight, bias and out, then call the op (ops/registry/nn.h), whose kernel
// normalizes rows of the n trailing elements.
#include <limits>

#include "kiln/nn.h"
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
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  norm_into(x, weight, Tensor(), eps.value_or(default_rms_eps(x.dtype())), out, n, true, "rms_norm");
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
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  norm_into(x, weight, bias, eps, out, n, false, "layer_norm");
  return out;
}

void rms_norm_out(const Tensor& x, const Tensor& weight, double eps, const Tensor& out) {
  KILN_CHECK(x.dim() >= 1, ValueError, "[rms_norm] input must have at least one dim");
  norm_into(x, weight, Tensor(), eps, out, x.size(-1), true, "rms_norm");
}

void layer_norm_out(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                    const Tensor& out) {
  KILN_CHECK(x.dim() >= 1, ValueError, "[layer_norm] input must have at least one dim");
  norm_into(x, weight, bias, eps, out, x.size(-1), false, "layer_norm");
}

}  // namespace kiln
