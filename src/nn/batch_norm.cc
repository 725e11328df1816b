// batch_norm front-end over x [N, C, *]: checks the input, the per-channel
// tensors and the mode, allocates the output and calls the op
// (ops/registry/nn.h), whose kernel computes the statistics, updates the
// running ones in training mode and normalizes.
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/nn.h"
#include "kiln/reduce.h"
#include "kiln/unary.h"
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

// The backward over x [N, C, *] (saved: x, weight, running_mean, running_var).
// Training normalizes with the batch statistics, recomputed here; eval with
// the running ones, which then get gradients too (they are plain inputs).
autograd::Grads batch_norm_backward(autograd::FnNode& n, const Tensor& g, bool training, double eps,
                                    const Shape& bias_shape) {
  const Tensor x = n.saved(0), w = n.saved(1), rm = n.saved(2), rv = n.saved(3);
  const DType acc = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const int64_t C = x.size(1);
  std::vector<int> dims{0};
  Shape cshape(size_t(x.dim()), 1);  // [1, C, 1, ...]
  cshape[1] = C;
  for (int d = 2; d < x.dim(); ++d) dims.push_back(d);
  const Tensor xf = x.to(acc), gf = g.to(acc);
  Tensor mu, rstd;
  if (training) {
    mu = mean(xf, dims, true);
    const Tensor xc = sub(xf, mu);
    rstd = rsqrt(add(mean(mul(xc, xc), dims, true), Scalar(eps)));
  } else {
    mu = rm.to(acc).reshape(cshape);
    rstd = rsqrt(add(rv.to(acc).reshape(cshape), Scalar(eps)));
  }
  const Tensor xhat = mul(sub(xf, mu), rstd);                            // [N, C, *]
  const Tensor wc = w.defined() ? w.to(acc).reshape(cshape) : Tensor();  // [1, C, 1...]
  const Tensor gh = wc.defined() ? mul(gf, wc) : gf;                     // d/d xhat
  auto per_channel = [&](const Tensor& t, const Tensor& like) { return sum(t, dims).reshape(like.sizes()); };
  autograd::Grads r(5);
  if (n.needs(0)) {
    if (training) {
      r[0] = mul(sub(sub(gh, mean(gh, dims, true)), mul(xhat, mean(mul(gh, xhat), dims, true))), rstd);
    } else {
      r[0] = mul(gh, rstd);
    }
  }
  if (n.needs(1)) r[1] = per_channel(mul(gf, xhat), w);
  if (n.needs(2)) r[2] = sum(gf, dims).reshape(bias_shape);
  if (!training && n.needs(3)) r[3] = per_channel(neg(mul(gh, rstd)), rm);
  if (!training && n.needs(4)) r[4] = per_channel(mul(mul(gh, xhat), mul(rstd, rstd)), rv);
  if (r[4].defined()) r[4] = mul(r[4], Scalar(-0.5));
  return r;
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
  autograd::Record rec("batch_norm", {&x, &weight, &bias, &running_mean, &running_var});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0)
    ops::batch_norm(device, x, running_mean, running_var, weight, bias, training, momentum, eps, out);
  if (training) {  // the running statistics were updated in place
    autograd::wrote(running_mean);
    autograd::wrote(running_var);
  }
  if (rec)
    rec.finish("NativeBatchNormBackward0", {&out},
               {x, weight, training ? Tensor() : running_mean, training ? Tensor() : running_var},
               [training, eps, bs = bias.defined() ? bias.sizes() : Shape{}](autograd::FnNode& n,
                                                                             autograd::Grads& g) {
                 return batch_norm_backward(n, g[0], training, eps, bs);
               });
  return out;
}

}  // namespace kiln
