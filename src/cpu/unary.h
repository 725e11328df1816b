// SIMD kernels (Highway, dynamic dispatch) for the hot floating-point unary ops
// on contiguous float32, and on contiguous bfloat16/float16 by widening to
// float32 in blocks. Threaded with parallel_for. Lanes outside a kernel's
// accurate range (NaN, inf, overflow, huge trig arguments) are recomputed with
// the scalar bodies of cpu/unary_scalar.h.
#pragma once

#include <cstdint>

#include "cpu/unary_scalar.h"
#include "kiln/dtype.h"

namespace kiln::cpu {

// True when `k` has a SIMD kernel for `dtype` (float32, bfloat16, float16).
bool unary_has_kernel(UOp k, DType dtype);

// y[i] = k(x[i]) for n contiguous elements of `dtype`; y may equal x.
// Requires unary_has_kernel(k, dtype).
void unary_contiguous(UOp k, DType dtype, const void* x, void* y, int64_t n);

}  // namespace kiln::cpu
