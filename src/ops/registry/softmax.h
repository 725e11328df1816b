// softmax / log_softmax over one dim.
#pragma once

#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*] in out's dtype or float32; out: [*] float16/bfloat16/float32/float64,
// allocated and checked by the front-end; dim already wrapped (x.dim() >= 1).
using Softmax = void(const Tensor& x, int dim, const Tensor& out);

#define KILN_OPS_SOFTMAX(X) \
  X(softmax, Softmax)       \
  X(log_softmax, Softmax)

}  // namespace kiln::ops
