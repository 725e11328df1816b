// CPU kernel of batch_norm (ops/registry/nn.h) over x [N, C, *]: per-channel
// statistics across N and the spatial dims (float64 accumulation: not a
// per-token op), the running-stat update in training mode, then
// y = (x - mean) / sqrt(var + eps) * w + b.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/ops/nn.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// t's C values as float64, or C copies of fill when t is undefined.
std::vector<double> channel_values(const Tensor& t, int64_t C, double fill) {
  std::vector<double> v(size_t(C), fill);
  if (!t.defined()) return v;
  const Tensor d = t.to(DType::Float64).contiguous();
  for (int64_t c = 0; c < C; ++c) v[size_t(c)] = d.data<double>()[c];
  return v;
}

void batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                const Tensor& bias, bool training, double momentum, double eps, const Tensor& out) {
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t inner = C == 0 || N == 0 ? 0 : x.numel() / (N * C);
  const int64_t count = N * inner;  // values per channel
  const std::vector<double> w = channel_values(weight, C, 1.0);
  const std::vector<double> b = channel_values(bias, C, 0.0);
  std::vector<double> rm = channel_values(running_mean, C, 0.0);
  std::vector<double> rv = channel_values(running_var, C, 1.0);
  if (x.numel() == 0) return;
  // [N, C, inner] as float64.
  const Tensor xd = x.to(DType::Float64).contiguous();
  const double* xp = xd.data<double>();
  std::vector<double> mean(static_cast<size_t>(C)), var(static_cast<size_t>(C));
  if (training) {
    parallel_for(0, C, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < inner; ++i) s += xp[(n * C + c) * inner + i];
        const double m = s / double(count);
        double q = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < inner; ++i) {
            const double dv = xp[(n * C + c) * inner + i] - m;
            q += dv * dv;
          }
        mean[size_t(c)] = m;
        var[size_t(c)] = q / double(count);
      }
    });
    // Running stats: blend in the batch mean and the unbiased variance.
    if (running_mean.defined()) {
      for (int64_t c = 0; c < C; ++c)
        rm[size_t(c)] = (1 - momentum) * rm[size_t(c)] + momentum * mean[size_t(c)];
      Tensor(running_mean).copy_(from_buffer_copy(rm.data(), running_mean.sizes(), DType::Float64));
    }
    if (running_var.defined()) {
      const double unbias = double(count) / double(count - 1);
      for (int64_t c = 0; c < C; ++c)
        rv[size_t(c)] = (1 - momentum) * rv[size_t(c)] + momentum * var[size_t(c)] * unbias;
      Tensor(running_var).copy_(from_buffer_copy(rv.data(), running_var.sizes(), DType::Float64));
    }
  } else {
    mean = rm;
    var = rv;
  }
  Tensor yd = empty(x.sizes(), DType::Float64);
  double* yp = yd.data<double>();
  parallel_for(0, N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t nc = b0; nc < b1; ++nc) {
                   const int64_t c = nc % C;
                   const double inv = 1.0 / std::sqrt(var[size_t(c)] + eps);
                   const double a = inv * w[size_t(c)], sh = b[size_t(c)] - mean[size_t(c)] * a;
                   for (int64_t i = 0; i < inner; ++i) yp[nc * inner + i] = xp[nc * inner + i] * a + sh;
                 }
               });
  Tensor(out).copy_(yd);
}

}  // namespace

void register_batch_norm_kernels() { ops::batch_norm.set_kernel(DeviceKind::CPU, batch_norm); }

}  // namespace kiln::cpu
