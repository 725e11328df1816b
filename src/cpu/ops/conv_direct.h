// Direct convolution kernels for the shapes whose im2col gemm would have a
// single row per group: one channel per group on the side the kernel slides
// over (depthwise convolutions and their gradients). Called by the
// convolution kernels of conv.cc; each output plane (or weight row) is summed
// by one thread in a fixed order, so the bits do not depend on the thread count.
#pragma once

#include <cstdint>

#include "ops/registry/conv.h"

namespace kiln::cpu {

// The patch geometry: `big` spatial sizes S (the side the kernel slides
// over), `small` sizes O (one column per position), kernel K; position o
// reads big index o * stride - padding + k * dilation.
struct ConvGeo {
  int64_t S[3], O[3], K[3], s[3], p[3], d[3];
  int64_t big() const { return S[0] * S[1] * S[2]; }
  int64_t small() const { return O[0] * O[1] * O[2]; }
  int64_t kn() const { return K[0] * K[1] * K[2]; }
};

// The source index that patch entry k of output coordinate r reads along dim i,
// or -1: forward outputs (the small side) read the big side at r * s - p + k * d;
// transposed outputs (the big side) read the small position o with
// o * s - p + k * d == r.
inline int64_t conv_source(const ConvGeo& g, bool transposed, int i, int64_t r, int64_t k) {
  if (!transposed) {
    const int64_t q = r * g.s[i] - g.p[i] + k * g.d[i];
    return q >= 0 && q < g.S[i] ? q : -1;
  }
  const int64_t t = r + g.p[i] - k * g.d[i];
  if (t < 0 || t % g.s[i] != 0 || t / g.s[i] >= g.O[i]) return -1;
  return t / g.s[i];
}

// Whether the direct kernels take a convolution whose big side has big_cg
// channels per group and whose small side small_cg.
inline bool conv_direct_fits(int64_t big_cg, int64_t small_cg) { return big_cg == 1 && small_cg <= 8; }

// Forward (y [N, C_out, O] from x [N, C_in, S]) or transposed (y [N, C_out, S]
// from x [N, C_in, O]) convolution, weight as the op takes it, bias or null.
template <typename T>
void conv_direct(const T* x, const T* w, const T* bias, const ops::ConvParams& p, const ConvGeo& g, int64_t N,
                 int64_t C_in, int64_t C_out, T* y);
// grad_weight [C_a, C_s / G, K] = sum over images and positions of
// a [N, C_a, O] times src [N, C_s, S] at the patch offsets.
template <typename T>
void conv_direct_weight(const T* src, const T* a, const ops::ConvParams& p, const ConvGeo& g, int64_t N,
                        int64_t C_s, int64_t C_a, T* gw);

}  // namespace kiln::cpu
