// batch_norm front-end over x [N, C, *]: checks the input, the per-channel
// tensors and the mode, allocates the output and calls the op
// (ops/registry/nn.h), whose kernel computes the statistics, updates the
// running ones in training mode and normalizes.
#include "kiln/nn.h"
#include "nn/nn_util.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_channel(const Tensor& t, int64_t C, const char* what) {
  if (!t.defined()) return;
  nn_detail::check_float(t, "batch_norm", what);
  KILN_CHECK(t.numel() == C, ValueError,
             "[batch_norm] " << what << " has shape " << t.shape_str() << ", expected " << C << " elements");
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  nn_detail::check_float(x, "batch_norm", "input");
  KILN_CHECK(x.dim() >= 2, ValueError, "[batch_norm] input must be [N, C, *], got " << x.shape_str());
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t inner = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
  const int64_t count = N * inner;  // values per channel
  KILN_CHECK(training || (running_mean.defined() && running_var.defined()), ValueError,
             "[batch_norm] running_mean and running_var are required when training=False");
  KILN_CHECK(
      !training || count > 1, ValueError,
      "[batch_norm] expected more than 1 value per channel when training, got input " << x.shape_str());
  check_channel(weight, C, "weight");
  check_channel(bias, C, "bias");
  check_channel(running_mean, C, "running_mean");
  check_channel(running_var, C, "running_var");
  const Device device = common_device("batch_norm", {&x, &running_mean, &running_var, &weight, &bias});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() == 0) return out;
  ops::batch_norm(device, x, running_mean, running_var, weight, bias, training, momentum, eps, out);
  return out;
}

}  // namespace kiln
