// Vectorized contiguous conversions between float32 and the narrow floats
// (bfloat16, float16, float8_e4m3fn, float8_e5m2), bit-identical to the scalar
// reference in kiln/float_types.h, threaded for large arrays. Part of the core's
// dtype conversions (copy_ uses them); kernels and op front-ends use them too.
#pragma once

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln {

// Converts n contiguous elements from src (dtype `from`) to dst (dtype `to`).
// Returns false, doing nothing, when the pair has no vectorized kernel.
bool convert_contiguous(const void* src, DType from, void* dst, DType to, int64_t n);

}  // namespace kiln
