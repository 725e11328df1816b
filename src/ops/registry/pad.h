// Padding ops (include/kiln/pad.h): pad and its backward.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/pad.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*, n_1 .. n_K] any dtype, any layout; pad: 2K entries (checked by the
// front-end), (l_K, r_K, l_{K-1}, r_{K-1}, ...) as torch orders them; out:
// [*, n_k + l_k + r_k] contiguous, x's dtype. value: the constant mode's fill.
using Pad = void(const Tensor& x, const std::vector<int64_t>& pad, PadMode mode, double value,
                 const Tensor& out);
// grad: [*, m_1 .. m_K] (pad's output shape) float or complex, any layout;
// out: [*, n_1 .. n_K] contiguous, grad's dtype: each element the sum of the
// grad elements pad read it into.
using PadBackward = void(const Tensor& grad, const std::vector<int64_t>& pad, PadMode mode,
                         const Tensor& out);

#define KILN_OPS_PAD(X) \
  X(pad, Pad)           \
  X(pad_backward, PadBackward)

}  // namespace kiln::ops
