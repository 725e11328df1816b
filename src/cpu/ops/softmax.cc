// CPU kernels of softmax / log_softmax (ops/registry/softmax.h): a float32
// input whose dim is innermost runs the SIMD rows of cpu/softmax.cc in place;
// float64 runs scalar rows; other layouts (a dim that is not innermost, narrow
// dtypes) go through a compute-dtype copy with the dim moved last, then one
// converting copy into the result.
#include "cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// When t's last dim has unit stride (or size 1) and the other dims collapse to
// one row stride, sets *rs to it (n for a single row) and returns true.
bool as_rows(const Tensor& t, int64_t* rs) {
  const int nd = t.dim();
  const int64_t n = t.size(nd - 1);
  if (n > 1 && t.stride(nd - 1) != 1) return false;
  int64_t stride = -1, span = 0;  // innermost outer dim seen so far
  for (int k = nd - 2; k >= 0; --k) {
    if (t.size(k) == 1) continue;
    if (stride < 0) {
      stride = t.stride(k);
      if (stride < n) return false;  // rows would overlap
      span = stride * t.size(k);
    } else {
      if (t.stride(k) != span) return false;
      span *= t.size(k);
    }
  }
  *rs = stride < 0 ? n : stride;
  return true;
}

// float64 rows, scalar: [rows, n] contiguous.
void softmax_rows_f64(const double* x, double* y, int64_t rows, int64_t n, bool log) {
  parallel_for(0, rows, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const double* xr = x + r * n;
      double* yr = y + r * n;
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        nan |= std::isnan(xr[i]);
        m = xr[i] > m ? xr[i] : m;
      }
      if (nan || !std::isfinite(m)) {
        for (int64_t i = 0; i < n; ++i) yr[i] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(xr[i] - m);
      if (log) {
        const double l = std::log(s);
        for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) - l;
      } else {
        for (int64_t i = 0; i < n; ++i) yr[i] = std::exp(xr[i] - m) / s;
      }
    }
  });
}

// x: [*, n at dim, *] in y's dtype or float32; y: x's shape. dim is wrapped.
void run(const Tensor& x, int d, const Tensor& y, bool log) {
  const DType rd = y.dtype();
  const int last = x.dim() - 1;
  const int64_t n = x.size(d);
  const int64_t rows = x.numel() / n;
  int64_t sx = 0, sy = 0;
  if (rd == DType::Float32 && x.dtype() == DType::Float32 && d == last && as_rows(x, &sx) &&
      as_rows(y, &sy)) {
    softmax_rows_f32(x.data<float>(), sx, y.data<float>(), sy, rows, n, log);
    return;
  }
  const DType cd = rd == DType::Float64 ? DType::Float64 : DType::Float32;
  // [.., n]: the dim moved last, contiguous, in the compute dtype.
  const Tensor xt = x.transpose(d, last).to(cd).contiguous();
  Tensor yv = y.transpose(d, last);
  const bool direct = yv.dtype() == cd && yv.is_contiguous();
  Tensor yt = direct ? yv : empty(xt.sizes(), cd);
  if (cd == DType::Float64) {
    softmax_rows_f64(xt.data<double>(), yt.data<double>(), rows, n, log);
  } else {
    softmax_rows_f32(xt.data<float>(), n, yt.data<float>(), n, rows, n, log);
  }
  if (!direct) yv.copy_(yt);
}

}  // namespace

void register_softmax_kernels() {
  ops::softmax.set_kernel(DeviceKind::CPU,
                          [](const Tensor& x, int dim, const Tensor& out) { run(x, dim, out, false); });
  ops::log_softmax.set_kernel(DeviceKind::CPU,
                              [](const Tensor& x, int dim, const Tensor& out) { run(x, dim, out, true); });
}

}  // namespace kiln::cpu
