// softmax / log_softmax front-ends: validate, cast, view the reduced dim as
// rows and pick the kernel (float32 SIMD rows; float64 scalar rows). Other
// layouts (a dim that is not innermost, narrow dtypes) go through a float32
// copy with the dim moved last, then one converting copy into the result.
#include "cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/softmax.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

const char* op_name(bool log) { return log ? "log_softmax" : "softmax"; }

bool softmax_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

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

void run(const Tensor& x_in, int dim, const Tensor& out, bool log) {
  const char* op = op_name(log);
  const DType rd = out.dtype();
  if (x_in.numel() == 0) return;
  Tensor x = x_in.dim() == 0 ? x_in.view({1}) : x_in;
  Tensor y = out.dim() == 0 ? out.view({1}) : out;
  const int d = wrap_dim(dim, x.dim(), op);
  const int last = x.dim() - 1;
  const int64_t n = x.size(d);
  const int64_t rows = x.numel() / n;
  int64_t sx = 0, sy = 0;
  if (rd == DType::Float32 && x.dtype() == DType::Float32 && d == last && as_rows(x, &sx) &&
      as_rows(y, &sy)) {
    cpu::softmax_rows_f32(x.data<float>(), sx, y.data<float>(), sy, rows, n, log);
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
    cpu::softmax_rows_f32(xt.data<float>(), n, yt.data<float>(), n, rows, n, log);
  }
  if (!direct) yv.copy_(yt);
}

DType result_dtype(const Tensor& x, std::optional<DType> dtype, const char* op) {
  const DType rd = dtype.value_or(x.dtype());
  if (!softmax_dtype(rd)) {
    const std::string what =
        dtype ? std::string("dtype=") + name(rd) : std::string("input dtype ") + name(rd);
    throw TypeError(std::string("[") + op + "] unsupported " + what +
                    "; expected float16, bfloat16, float32 or float64 (pass dtype= to cast)");
  }
  if (is_complex(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[") + op + "] unsupported input dtype " + name(x.dtype()));
  return rd;
}

Tensor softmax_impl(const Tensor& x, int dim, std::optional<DType> dtype, bool log) {
  const char* op = op_name(log);
  const DType rd = result_dtype(x, dtype, op);
  wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
  Tensor out = empty(x.sizes(), rd);
  run(x.dtype() == rd ? x : x.to(rd), dim, out, log);
  return out;
}

void softmax_out_impl(const Tensor& x, int dim, const Tensor& out, bool log) {
  const char* op = op_name(log);
  const DType rd = result_dtype(x, out.dtype(), op);
  KILN_CHECK(out.sizes() == x.sizes(), ValueError,
             "[" << op << "] out has shape " << out.shape_str() << ", expected " << x.shape_str());
  wrap_dim(dim, x.dim() == 0 ? 1 : x.dim(), op);
  assert_no_internal_overlap(out, op);
  run(x.dtype() == rd || x.dtype() == DType::Float32 ? x : x.to(rd), dim, out, log);
}

}  // namespace

Tensor softmax(const Tensor& x, int dim, std::optional<DType> dtype) {
  return softmax_impl(x, dim, dtype, false);
}
Tensor log_softmax(const Tensor& x, int dim, std::optional<DType> dtype) {
  return softmax_impl(x, dim, dtype, true);
}
void softmax_out(const Tensor& x, int dim, const Tensor& out) { softmax_out_impl(x, dim, out, false); }
void log_softmax_out(const Tensor& x, int dim, const Tensor& out) { softmax_out_impl(x, dim, out, true); }

}  // namespace kiln
