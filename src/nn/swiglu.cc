// silu(gate) * up, fused: one read of each input, one write. float32 in SIMD
// lanes (Highway Exp); bfloat16/float16 widened in L1-sized blocks; float64
// scalar.
#include "kiln/nn.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nn/swiglu.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: math-inl.h must follow highway.h
#include <hwy/contrib/math/math-inl.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace kiln::nn_kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y = g / (1 + exp(-g)) * u over n floats. exp's argument is capped at 100
// (already inf in float32), inside Highway's valid range.
void SwigluF32(const float* HWY_RESTRICT g, const float* HWY_RESTRICT u, float* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto one = hn::Set(d, 1.0f), cap = hn::Set(d, 100.0f);
  auto body = [&](auto gv, auto uv) {
    const auto e = hn::Exp(d, hn::Min(hn::Neg(gv), cap));
    return hn::Mul(hn::Div(gv, hn::Add(one, e)), uv);
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(body(hn::LoadU(d, g + i), hn::LoadU(d, u + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float bg[hn::MaxLanes(d)] = {}, bu[hn::MaxLanes(d)] = {};
    for (int64_t j = 0; j < n - i; ++j) {
      bg[j] = g[i + j];
      bu[j] = u[i + j];
    }
    hn::Store(body(hn::Load(d, bg), hn::Load(d, bu)), d, bg);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = bg[j];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::nn_kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cmath>

#include "kiln/thread_pool.h"
#include "nn/nn_util.h"
#include "nn/swiglu.h"

namespace kiln {
namespace nn_kernels {
HWY_EXPORT(SwigluF32);
}

void nn_detail::swiglu_f32(const float* g, const float* u, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(nn_kernels::SwigluF32)(g, u, y, n);
}

namespace {
constexpr int64_t kBlock = 1024;

template <typename T>
void swiglu_range(const T* g, const T* u, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    nn_detail::swiglu_f32(g, u, y, n);
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
      nn_detail::swiglu_f32(bg, bu, bg, m);
      for (int64_t j = 0; j < m; ++j) y[b + j] = T(bg[j]);
    }
  }
}
}  // namespace

void swiglu_out(const Tensor& gate, const Tensor& up, const Tensor& out) {
  nn_detail::check_float(gate, "swiglu", "gate");
  KILN_CHECK(up.dtype() == gate.dtype() && up.sizes() == gate.sizes(), ValueError,
             "[swiglu] up " << up.shape_str() << " " << name(up.dtype()) << " must match gate "
                            << gate.shape_str() << " " << name(gate.dtype()));
  KILN_CHECK(out.sizes() == gate.sizes(), ValueError,
             "[swiglu] out has shape " << out.shape_str() << ", expected " << gate.shape_str());
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

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  nn_detail::check_float(gate, "swiglu", "gate");
  Tensor out = empty(gate.sizes(), gate.dtype());
  swiglu_out(gate, up, out);
  return out;
}

}  // namespace kiln
#endif
