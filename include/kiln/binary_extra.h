// More binary elementwise ops with PyTorch's names and semantics, following
// the conventions of kiln/binary.h (overloads with Scalars, out=, in-place
// op_, broadcasting, torch.result_type promotion, FP8 raises TypeError).
//   - hypot, logaddexp, logaddexp2, nextafter: floating operands only.
//   - xlogy, ldexp: integers give float32. xlogy(0, y) = 0 unless y is NaN.
//     ldexp(x, e) = x * 2^e.
//   - fmax, fmin: as maximum/minimum, but a NaN operand yields the other one.
//   - gcd, lcm: integer operands only; non-negative results.
//   - float_power: computed and returned in float64 (complex128 for complex).
//   - isclose: |a - b| <= atol + rtol * |b|, or a == b (equal infinities);
//     NaNs are close only with equal_nan. Both tensors share one dtype.
#pragma once

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

#define KILN_BINARY_EXTRA_OP(op)                                             \
  Tensor op(const Tensor& a, const Tensor& b, const Tensor& out = Tensor()); \
  Tensor op(const Tensor& a, const Scalar& b, const Tensor& out = Tensor()); \
  Tensor op(const Scalar& a, const Tensor& b, const Tensor& out = Tensor()); \
  const Tensor& op##_(const Tensor& self, const Tensor& other);              \
  const Tensor& op##_(const Tensor& self, const Scalar& other)
KILN_BINARY_EXTRA_OP(hypot);
KILN_BINARY_EXTRA_OP(logaddexp);
KILN_BINARY_EXTRA_OP(logaddexp2);
KILN_BINARY_EXTRA_OP(xlogy);
KILN_BINARY_EXTRA_OP(fmax);
KILN_BINARY_EXTRA_OP(fmin);
KILN_BINARY_EXTRA_OP(gcd);
KILN_BINARY_EXTRA_OP(lcm);
KILN_BINARY_EXTRA_OP(ldexp);
KILN_BINARY_EXTRA_OP(nextafter);
KILN_BINARY_EXTRA_OP(float_power);
#undef KILN_BINARY_EXTRA_OP

Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
// all(isclose(a, b, ...)) over the broadcast shape.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
// Same shape and every element equal (after promotion, as eq).
bool equal(const Tensor& a, const Tensor& b);

}  // namespace kiln
