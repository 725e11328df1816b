// Complex parts: conj, real, imag, angle, and the constructors complex(re, im)
// and polar(abs, angle) (src/ops/complex.cc). The front-end has allocated
// `out` (x's shape; real/imag/angle: the real dtype of x, the constructors: the
// complex dtype of their float inputs). Joined into KILN_OPS by all.h.
#pragma once

#include "ops/registry/unary.h"

namespace kiln::ops {

// a, b: [*] the same float dtype, already expanded to out's shape; out: [*]
// complex of that precision.
using MakeComplex = void(const Tensor& a, const Tensor& b, const Tensor& out);

#define KILN_OPS_COMPLEX(X) \
  X(conj, Unary)            \
  X(real, Unary)            \
  X(imag, Unary)            \
  X(angle, Unary)           \
  X(complex, MakeComplex)   \
  X(polar, MakeComplex)

}  // namespace kiln::ops
