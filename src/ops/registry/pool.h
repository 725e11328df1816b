// Pooling ops (include/kiln/pool.h): max, average and adaptive pooling over
// 1-3 spatial dims and their backward ops.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::ops {

// The geometry of one pooling call as 3 spatial dims (unused leading dims have
// size 1, kernel 1, stride 1, padding 0, dilation 1). planes = N * C.
struct PoolGeom {
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
};

// x: [planes, in...] float (any layout); out: [planes, out...] contiguous, x's
// dtype; indices: int64 [planes, out...] contiguous (flat positions in the plane).
using MaxPool = void(const Tensor& x, const PoolGeom& g, const Tensor& out, const Tensor& indices);
// divisor != 0 overrides the window count.
using AvgPool = void(const Tensor& x, const PoolGeom& g, bool count_include_pad, int64_t divisor,
                     const Tensor& out);
// Adaptive windows from g.in / g.out (k, s, p, d unused).
using AdaptiveAvgPool = void(const Tensor& x, const PoolGeom& g, const Tensor& out);
using AdaptiveMaxPool = void(const Tensor& x, const PoolGeom& g, const Tensor& out, const Tensor& indices);

// Fractional max pooling (Graham's pseudo-random windows of size g.k):
// samples [planes, nd] contiguous, x's compute dtype, each in [0, 1), in
// torch's order: (W, H) for 2 dims, (T, H, W) for 3; out and indices as
// MaxPool's.
using FractionalMaxPool = void(const Tensor& x, const Tensor& samples, const PoolGeom& g, int nd,
                               const Tensor& out, const Tensor& indices);

// grad: [planes, out...] float (any layout); indices: int64 [planes, out...];
// grad_in: [planes, in...] contiguous, grad's dtype (fully written).
using MaxPoolBackward = void(const Tensor& grad, const Tensor& indices, const PoolGeom& g,
                             const Tensor& grad_in);
using AvgPoolBackward = void(const Tensor& grad, const PoolGeom& g, bool count_include_pad, int64_t divisor,
                             const Tensor& grad_in);
using AdaptiveAvgPoolBackward = void(const Tensor& grad, const PoolGeom& g, const Tensor& grad_in);

#define KILN_OPS_POOL(X)                    \
  X(max_pool, MaxPool)                      \
  X(avg_pool, AvgPool)                      \
  X(adaptive_avg_pool, AdaptiveAvgPool)     \
  X(adaptive_max_pool, AdaptiveMaxPool)     \
  X(fractional_max_pool, FractionalMaxPool) \
  X(max_pool_backward, MaxPoolBackward)     \
  X(avg_pool_backward, AvgPoolBackward)     \
  X(adaptive_avg_pool_backward, AdaptiveAvgPoolBackward)

}  // namespace kiln::ops
