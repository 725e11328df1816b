// The float32 SwiGLU kernel: behind the swiglu op (cpu/ops/swiglu.cc), and
// for callers that hold raw rows (the MoE FFN's gate and up halves of one buffer).
#pragma once

#include <cstdint>

namespace kiln::cpu {

// y[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n, in SIMD lanes; y may be g or u.
void swiglu_f32(const float* g, const float* u, float* y, int64_t n);

}  // namespace kiln::cpu
