// The ops core itself runs: copy_ (with dtype conversion) and fill_. Tensor's
// methods are their front-ends (core/copy.cc); the kernels are a backend's
// (src/cpu/ops/copy.cc). Listed in ops/registry/all.h with the other ops.
#pragma once

#include "core/op.h"
#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// dst: [*], src: [*] (same shape, src already expanded; any dtypes). The
// front-end has removed overlap (a source that overlaps dst is a clone). The
// kernel of a device also serves copies between the host and that device
// (one end on the CPU): Tensor::copy_ picks the non-CPU end's kernel.
using Copy = void(const Tensor& dst, const Tensor& src);
// dst: [*] (non-empty, no internal overlap) = value in dst's dtype.
using Fill = void(const Tensor& dst, const Scalar& value);

#define KILN_OPS_COPY(X) \
  X(copy, Copy)          \
  X(fill, Fill)

extern Op<Copy> copy;
extern Op<Fill> fill;

}  // namespace kiln::ops
