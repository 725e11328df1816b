// The float32 SwiGLU kernel behind nn::swiglu, for callers inside nn that hold
// raw rows (moe_ffn's gate and up halves of one buffer).
#pragma once

#include <cstdint>

namespace kiln::nn_detail {

// y[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n, in SIMD lanes; y may be g or u.
void swiglu_f32(const float* g, const float* u, float* y, int64_t n);

}  // namespace kiln::nn_detail
