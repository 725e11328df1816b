// kiln.special's Bessel, Airy, normal-quantile, Hurwitz zeta, polygamma and
// incomplete gamma functions (include/kiln/special.h): elementwise kernels of
// the scalar functions in cpu/special_functions.h, computed in double and
// rounded once to the result dtype.
#pragma once

#include <cstdint>

#include "core/op.h"
#include "ops/registry/unary.h"

namespace kiln::ops {

// a, b: [*] in out's dtype, expanded to its shape; out: [*] float.
using SpecialBinary = void(const Tensor& a, const Tensor& b, const Tensor& out);
// x: [*] in out's dtype; out: [*] float; n >= 0.
using Polygamma = void(const Tensor& x, int64_t n, const Tensor& out);

// The unary ones take x already in out's (float) dtype.
#define KILN_OPS_SPECIAL(X)                   \
  X(special_bessel_j0, Unary)                 \
  X(special_bessel_j1, Unary)                 \
  X(special_bessel_y0, Unary)                 \
  X(special_bessel_y1, Unary)                 \
  X(special_modified_bessel_k0, Unary)        \
  X(special_modified_bessel_k1, Unary)        \
  X(special_scaled_modified_bessel_k0, Unary) \
  X(special_scaled_modified_bessel_k1, Unary) \
  X(special_i0e, Unary)                       \
  X(special_i1, Unary)                        \
  X(special_i1e, Unary)                       \
  X(special_airy_ai, Unary)                   \
  X(special_ndtri, Unary)                     \
  X(special_zeta, SpecialBinary)              \
  X(special_gammainc, SpecialBinary)          \
  X(special_gammaincc, SpecialBinary)         \
  X(special_polygamma, Polygamma)

}  // namespace kiln::ops
