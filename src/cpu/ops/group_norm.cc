// CPU kernels of group_norm / group_norm_backward (ops/registry/group_norm.h)
// over x [N, C, HxW]: float64 statistics per fixed chunk (mean, then squared
// deviations of the cached chunk) combined in chunk order, so the bits do not
// depend on the thread count. float16/bfloat16 compute in float32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/group_norm_loops.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// t's n values as float64 (fill when t is undefined).
std::vector<double> values(const Tensor& t, int64_t n, double fill) {
  std::vector<double> v(size_t(n), fill);
  if (!t.defined()) return v;
  const Tensor d = t.to(DType::Float64).contiguous();
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = d.data<double>()[i];
  return v;
}

DType compute_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

// Elements per statistics chunk: small enough that the chunk's second pass
// reads it from cache, so the statistics cost one pass over memory.
constexpr int64_t kChunk = 4096;

// Count, mean and sum of squared deviations of a run of values.
struct Moments {
  double n = 0, mean = 0, m2 = 0;
};

// The moments of x[0, len) (0 < len <= kChunk): the chunk's mean, then its
// squared deviations (two passes over cached data).
template <typename T>
Moments moments(const T* x, int64_t len) {
  double s = 0, m2 = 0;
  chunk_moments(x, len, &s, &m2);
  return {double(len), s / double(len), m2};
}

// Chan's pairwise combination of two runs' moments.
Moments combine(const Moments& a, const Moments& b) {
  if (a.n == 0) return b;
  const double n = a.n + b.n, d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

// x [N, C, HW] of T; y, mean, rstd of T (the compute dtype). Statistics per
// fixed chunk in parallel, combined per (sample, group) in chunk order; then
// y = x * a[n, c] + b[n, c] in float64 in parallel by element range. The chunk
// boundaries do not depend on the thread count, nor do the bits.
template <typename T>
void forward(const T* x, const std::vector<double>& w, const std::vector<double>& b, int64_t N, int64_t C,
             int64_t HW, int64_t G, double eps, T* y, T* mean, T* rstd) {
  const int64_t D = C / G, len = D * HW, groups = N * G;
  const int64_t nc = std::max<int64_t>(1, (len + kChunk - 1) / kChunk);  // chunks per group
  std::vector<Moments> part(size_t(groups * nc));
  parallel_for(0, groups * nc, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = t / nc, k = t % nc, o = k * kChunk, e = std::min(len, o + kChunk);
      if (e > o) part[size_t(t)] = moments(x + i * len + o, e - o);
    }
  });
  std::vector<double> a(size_t(N * C)), sh(size_t(N * C));
  for (int64_t i = 0; i < groups; ++i) {
    Moments mo;
    for (int64_t k = 0; k < nc; ++k) mo = combine(mo, part[size_t(i * nc + k)]);
    const double m = mo.mean;
    const double r = 1.0 / std::sqrt((len > 0 ? mo.m2 / double(len) : 0.0) + eps);
    mean[i] = T(m);
    rstd[i] = T(r);
    const int64_t n = i / G, g = i % G;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t c = g * D + d;
      a[size_t(n * C + c)] = r * w[size_t(c)];
      sh[size_t(n * C + c)] = b[size_t(c)] - m * a[size_t(n * C + c)];
    }
  }
  if (HW == 0) return;
  parallel_for(0, N * C * HW, 32768, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1;) {
      const int64_t row = e / HW, end = std::min(e1, (row + 1) * HW);
      scale_shift(x + e, y + e, end - e, a[size_t(row)], sh[size_t(row)]);
      e = end;
    }
  });
}

void group_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t G, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2);
  const std::vector<double> w = values(weight, C, 1.0), b = values(bias, C, 0.0);
  const DType cd = compute_dtype(x.dtype());
  const Tensor xc = x.to(cd).contiguous();
  const Tensor y = x.dtype() == cd ? out : empty(out.sizes(), cd, out.device());
  if (cd == DType::Float64)
    forward(xc.data<double>(), w, b, N, C, HW, G, eps, y.data<double>(), mean.data<double>(),
            rstd.data<double>());
  else
    forward(xc.data<float>(), w, b, N, C, HW, G, eps, y.data<float>(), mean.data<float>(),
            rstd.data<float>());
  if (x.dtype() != cd) Tensor(out).copy_(y);
}

// torch's formulas: with ds = sum_hw g*x, db = sum_hw g per (n, c), and per
// (n, group) sums of w*ds, w*db over the group's channels,
// dx = rstd*w*g + c2*x + c3, c2 = (db_g*mean - ds_g) * rstd^3 / len,
// c3 = -c2*mean - db_g*rstd / len; dw = sum_n (ds - db*mean)*rstd, db = sum_n db.
template <typename T>
void backward(const T* g, const T* x, const double* mean, const double* rstd, const std::vector<double>& w,
              int64_t N, int64_t C, int64_t HW, int64_t G, T* dx, std::vector<double>& ds,
              std::vector<double>& db) {
  const int64_t D = C / G, len = D * HW;
  parallel_for(0, N * C, std::max<int64_t>(1, 16384 / std::max<int64_t>(HW, 1)), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      grad_sums(g + i * HW, x + i * HW, HW, &ds[size_t(i)], &db[size_t(i)]);
    }
  });
  if (!dx) return;
  parallel_for(0, N * G, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)),
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t n = i / G, grp = i % G;
                   double dsg = 0, dbg = 0;
                   for (int64_t d = 0; d < D; ++d) {
                     const int64_t c = grp * D + d;
                     dsg += w[size_t(c)] * ds[size_t(n * C + c)];
                     dbg += w[size_t(c)] * db[size_t(n * C + c)];
                   }
                   const double m = mean[i], r = rstd[i], s = 1.0 / double(len);
                   const double c2 = (dbg * m - dsg) * r * r * r * s;
                   const double c3 = -c2 * m - dbg * r * s;
                   for (int64_t d = 0; d < D; ++d) {
                     const double c1 = r * w[size_t(grp * D + d)];
                     const int64_t off = i * len + d * HW;
                     grad_input(g + off, x + off, dx + off, HW, c1, c2, c3);
                   }
                 }
               });
}

void group_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, int64_t G, const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2), D = C / G;
  const std::vector<double> w = values(weight, C, 1.0);
  const std::vector<double> m = values(mean, N * G, 0.0), r = values(rstd, N * G, 0.0);
  const DType cd = compute_dtype(x.dtype());
  const Tensor gc = grad_out.to(cd).contiguous(), xc = x.to(cd).contiguous();
  Tensor dx;
  if (grad_input.defined()) dx = x.dtype() == cd ? grad_input : empty(grad_input.sizes(), cd, x.device());
  std::vector<double> ds(size_t(N * C)), db(size_t(N * C));
  if (cd == DType::Float64)
    backward(gc.data<double>(), xc.data<double>(), m.data(), r.data(), w, N, C, HW, G,
             dx.defined() ? dx.data<double>() : nullptr, ds, db);
  else
    backward(gc.data<float>(), xc.data<float>(), m.data(), r.data(), w, N, C, HW, G,
             dx.defined() ? dx.data<float>() : nullptr, ds, db);
  if (dx.defined() && x.dtype() != cd) Tensor(grad_input).copy_(dx);
  // Per channel, summed over the samples in order.
  std::vector<double> gw(size_t(C), 0.0), gb(size_t(C), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const size_t i = size_t(n * C + c), s = size_t(n * G + c / D);
      gw[size_t(c)] += (ds[i] - db[i] * m[s]) * r[s];
      gb[size_t(c)] += db[i];
    }
  if (grad_weight.defined())
    Tensor(grad_weight).copy_(from_buffer_copy(gw.data(), grad_weight.sizes(), DType::Float64));
  if (grad_bias.defined())
    Tensor(grad_bias).copy_(from_buffer_copy(gb.data(), grad_bias.sizes(), DType::Float64));
}

}  // namespace

void register_group_norm_kernels() {
  ops::group_norm.set_kernel(DeviceKind::CPU, group_norm);
  ops::group_norm_backward.set_kernel(DeviceKind::CPU, group_norm_backward);
}

}  // namespace kiln::cpu
