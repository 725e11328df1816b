// Dropout ops (include/kiln/dropout.h): the fused forward and its backward,
// both drawing the keep mask from Philox4x32-10 so that the backward
// regenerates it from (seed, offset) instead of storing it.
#pragma once

#include <cstdint>

#include "core/op.h"
#include "kiln/dropout.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*] float (any layout); out: x's shape and dtype (may be x itself).
// Mask draw j covers the `m.group` row-major elements [j * group, (j + 1) *
// group) (group 1: elementwise; the feature-map size: feature dropout), and
// keeps them when word j % 4 of philox(offset + j / 4, seed) is at least
// ceil(p * 2^32). Kept: x * scale (alpha: x * a + alpha * a * p); dropped:
// x * 0 (alpha: -alpha * a * (1 - p)), with torch's constants and roundings.
using Dropout = void(const Tensor& x, const DropoutMask& m, const Tensor& out);
// grad: [*] float (any layout); out: grad's shape and dtype. out = grad *
// noise, noise the forward's multiplier of x (scale or a where kept, 0 where
// dropped), from the same mask.
using DropoutBackward = void(const Tensor& grad, const DropoutMask& m, const Tensor& out);

#define KILN_OPS_DROPOUT(X) \
  X(dropout, Dropout)       \
  X(dropout_backward, DropoutBackward)

}  // namespace kiln::ops
