// Binary elementwise ops beyond the core family: hypot, logaddexp,
// logaddexp2, xlogy, fmax, fmin, gcd, lcm, ldexp, nextafter, float_power and
// isclose (src/ops/binary_extra.cc). Operands come as ops/registry/binary.h
// describes (promoted, broadcast, or one value). all.cc defines the Op objects
// and lists them in all_ops() beside KILN_OPS.
#pragma once

#include "core/op.h"
#include "ops/registry/binary.h"

namespace kiln::ops {

// a, b: [*] in one dtype (expanded to out or values), out: [*] bool.
using IsClose = void(const Operand& a, const Operand& b, double rtol, double atol, bool equal_nan,
                     const Tensor& out);

#define KILN_OPS_BINARY_EXTRA(X) \
  X(hypot, Binary)               \
  X(logaddexp, Binary)           \
  X(logaddexp2, Binary)          \
  X(xlogy, Binary)               \
  X(fmax, Binary)                \
  X(fmin, Binary)                \
  X(gcd, Binary)                 \
  X(lcm, Binary)                 \
  X(ldexp, Binary)               \
  X(nextafter, Binary)           \
  X(float_power, Binary)         \
  X(isclose, IsClose)


}  // namespace kiln::ops
