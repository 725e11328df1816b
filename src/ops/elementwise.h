// Shared machinery for elementwise op front-ends: broadcasting and output
// allocation. The typed loops that run a scalar functor over tensors are CPU
// kernels (cpu/ops/loops.h).
#pragma once

#include <span>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

// torch.broadcast_shapes for two shapes; throws ValueError naming `op`.
Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, const char* op);

}  // namespace kiln
