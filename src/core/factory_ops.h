// The range factories' ops (arange, linspace, logspace): their front-ends are
// in core/factories.cc, the kernels a backend's (src/cpu/ops/factories.cc).
// Listed in ops/registry/all.h. eye is zeros and a fill_ of the diagonal view,
// so it runs on the copy/fill ops of core/copy_ops.h.
#pragma once

#include "core/op.h"
#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// out: [n] contiguous, any dtype but bool. out[i] = start + i * step, in int64
// (two's-complement wrap) when start and step are both integral Scalars, else
// in double; then cast to out's dtype.
using Arange = void(const Tensor& out, const Scalar& start, const Scalar& step);
// out: [steps] contiguous, any dtype but bool: steps points from start to end,
// evaluated symmetrically in double (the last one is exactly end).
using Linspace = void(const Tensor& out, double start, double end);
// out: [steps] contiguous, any dtype but bool: base ** linspace(start, end).
using Logspace = void(const Tensor& out, double start, double end, double base);

#define KILN_OPS_FACTORIES(X) \
  X(arange, Arange)           \
  X(linspace, Linspace)       \
  X(logspace, Logspace)

extern Op<Arange> arange;
extern Op<Linspace> linspace;
extern Op<Logspace> logspace;

}  // namespace kiln::ops
