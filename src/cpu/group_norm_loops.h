// The memory-bound loops of the group_norm kernel (cpu/ops/group_norm.cc),
// compiled for every SIMD target and dispatched at run time. Plain loops with
// a fixed order of operations: the same bits on every target.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Sum of x[0, len) and sum of squared deviations from their mean, both in
// float64, each in eight lanes reduced in a fixed order (len > 0).
void chunk_moments(const float* x, int64_t len, double* sum, double* m2);
void chunk_moments(const double* x, int64_t len, double* sum, double* m2);

// y[i] = x[i] * a + b in float64, rounded to the element type.
void scale_shift(const float* x, float* y, int64_t n, double a, double b);
void scale_shift(const double* x, double* y, int64_t n, double a, double b);

}  // namespace kiln::cpu
