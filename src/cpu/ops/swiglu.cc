// CPU kernel of swiglu (ops/registry/nn.h): silu(gate) * up, fused, one read
// of each input, one write. float32 runs the SIMD rows of cpu/swiglu.cc;
// bfloat16/float16 are widened in L1-sized blocks; float64 is scalar.
#include "cpu/swiglu.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cpu/ops/nn.h"
#include "kiln/dtype.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr int64_t kBlock = 1024;

template <typename T>
void swiglu_range(const T* g, const T* u, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    swiglu_f32(g, u, y, n);
  } else if constexpr (std::is_same_v<T, double>) {
    for (int64_t i = 0; i < n; ++i) y[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  } else {
    float bg[kBlock], bu[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      for (int64_t j = 0; j < m; ++j) {
        bg[j] = float(g[b + j]);
        bu[j] = float(u[b + j]);
      }
      swiglu_f32(bg, bu, bg, m);
      for (int64_t j = 0; j < m; ++j) y[b + j] = T(bg[j]);
    }
  }
}

// gate, up: [*] one float dtype; out: gate's shape, any float dtype.
void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  const int64_t n = gate.numel();
  if (n == 0) return;
  const Tensor g = gate.contiguous(), u = up.contiguous();
  const bool direct = out.is_contiguous() && out.dtype() == gate.dtype();
  const Tensor y = direct ? out : empty(gate.sizes(), gate.dtype());
  dispatch<kFloatSet>(gate.dtype(), "swiglu", [&]<typename T>() {
    const T* gp = g.data<T>();
    const T* up_ = u.data<T>();
    T* yp = y.data<T>();
    parallel_for(0, n, 16384, [&](int64_t b, int64_t e) { swiglu_range(gp + b, up_ + b, yp + b, e - b); });
  });
  if (!direct) Tensor(out).copy_(y);
}

}  // namespace

void register_swiglu_kernels() { ops::swiglu.set_kernel(DeviceKind::CPU, swiglu); }

}  // namespace kiln::cpu
