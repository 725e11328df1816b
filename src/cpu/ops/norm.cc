// CPU kernels of rms_norm and layer_norm (ops/registry/nn.h): rows of n
// contiguous elements, statistics in float32 lanes (float64 for float64), one
// rounding on store. Per-row work is O(n); rows split across threads.
#include <algorithm>
#include <cmath>

#include "cpu/ops/nn.h"
#include "kiln/dtype.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr int kLanes = 16;  // independent partial sums: lets the compiler vectorize

template <typename C, typename T>
C sum_sq(const T* x, int64_t n) {
  C acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const C v = C(x[i + j]);
      acc[j] += v * v;
    }
  for (; i < n; ++i) acc[0] += C(x[i]) * C(x[i]);
  C s = 0;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

template <typename C, typename T>
C sum_of(const T* x, int64_t n, C shift) {
  C acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += C(x[i + j]) - shift;
  for (; i < n; ++i) acc[0] += C(x[i]) - shift;
  C s = 0;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

template <typename C, typename T>
C sum_sq_dev(const T* x, int64_t n, C mean) {
  C acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const C v = C(x[i + j]) - mean;
      acc[j] += v * v;
    }
  for (; i < n; ++i) acc[0] += (C(x[i]) - mean) * (C(x[i]) - mean);
  C s = 0;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

// y = ((x - mean) * inv) * w + b; W, B = void means absent.
template <typename C, typename T, typename W, typename B>
void normalize(const T* x, T* y, int64_t n, C mean, C inv, const W* w, const B* b) {
  for (int64_t i = 0; i < n; ++i) {
    C v = (C(x[i]) - mean) * inv;
    if constexpr (!std::is_void_v<W>) v *= C(w[i]);
    if constexpr (!std::is_void_v<B>) v += C(b[i]);
    y[i] = T(v);
  }
}

// x, y: [rows, n] contiguous.
template <typename T, typename W, typename B>
void norm_rows(const T* x, T* y, int64_t rows, int64_t n, const W* w, const B* b, double eps, bool rms) {
  using C = compute_t<T>;
  parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      C mean = 0, var;
      if (rms) {
        var = sum_sq<C>(xr, n) / C(n);
      } else {
        // Two passes (shifted by the first element for stability in f32).
        const C shift = C(xr[0]);
        mean = shift + sum_of<C>(xr, n, shift) / C(n);
        var = sum_sq_dev<C>(xr, n, mean) / C(n);
      }
      const C inv = C(1) / std::sqrt(var + C(eps));
      normalize<C>(xr, yr, n, mean, inv, w, b);
    }
  });
}

// Dispatches x/y dtype T, weight dtype W, bias dtype B.
void norm_dispatch(const Tensor& x, const Tensor& y, int64_t rows, int64_t n, const Tensor& w,
                   const Tensor& b, double eps, bool rms, const char* op) {
  dispatch<kFloatSet>(x.dtype(), op, [&]<typename T>() {
    auto with_b = [&]<typename W>(const W* wp) {
      if (!b.defined()) {
        norm_rows<T, W, void>(x.data<T>(), y.data<T>(), rows, n, wp, nullptr, eps, rms);
      } else {
        dispatch<kFloatSet>(b.dtype(), op, [&]<typename Bt>() {
          norm_rows<T, W, Bt>(x.data<T>(), y.data<T>(), rows, n, wp, b.data<Bt>(), eps, rms);
        });
      }
    };
    if (!w.defined()) {
      with_b(static_cast<const void*>(nullptr));
    } else {
      dispatch<kFloatSet>(w.dtype(), op, [&]<typename W>() { with_b(w.data<W>()); });
    }
  });
}

// Writes the normalization of x (rows of n) into out; out has x's shape and
// may have another float dtype (converted on the way).
void norm_into(const Tensor& x, const Tensor& w, const Tensor& b, int64_t n, double eps, const Tensor& out,
               bool rms, const char* op) {
  if (x.numel() == 0) return;
  const int64_t rows = x.numel() / n;
  const Tensor xc = x.contiguous();
  const Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  const bool direct = out.is_contiguous() && out.dtype() == x.dtype();
  const Tensor y = direct ? out : empty(x.sizes(), x.dtype());
  norm_dispatch(xc, y, rows, n, wc, bc, eps, rms, op);
  if (!direct) Tensor(out).copy_(y);
}

}  // namespace

void register_norm_kernels() {
  ops::rms_norm.set_kernel(DeviceKind::CPU,
                           [](const Tensor& x, const Tensor& w, int64_t n, double eps, const Tensor& out) {
                             norm_into(x, w, Tensor(), n, eps, out, true, "rms_norm");
                           });
  ops::layer_norm.set_kernel(DeviceKind::CPU,
                             [](const Tensor& x, const Tensor& w, const Tensor& b, int64_t n, double eps,
                                const Tensor& out) { norm_into(x, w, b, n, eps, out, false, "layer_norm"); });
}

}  // namespace kiln::cpu
