// silu(gate) * up over float32 rows in SIMD lanes (Highway Exp): the kernel
// behind the swiglu op (cpu/ops/swiglu.cc) and the MoE FFN.
#include "cpu/swiglu.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/swiglu.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: math-inl.h must follow highway.h
#include <hwy/contrib/math/math-inl.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
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
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(SwigluF32);

void swiglu_f32(const float* g, const float* u, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SwigluF32)(g, u, y, n);
}

}  // namespace kiln::cpu
#endif
