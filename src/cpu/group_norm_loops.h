// The memory-bound loops of the group_norm kernel (cpu/ops/group_norm.cc),
// compiled for every SIMD target and dispatched at run time. Plain loops with
// a fixed order of operations: the same bits on every target.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Sum of x[0, len) and sum of squared deviations from their mean, both in
// float64, each in 32 lanes reduced in a fixed order (len > 0).
void chunk_moments(const float* x, int64_t len, double* sum, double* m2);
void chunk_moments(const double* x, int64_t len, double* sum, double* m2);

// y[i] = x[i] * a + b in float64, rounded to the element type.
void scale_shift(const float* x, float* y, int64_t n, double a, double b);
void scale_shift(const double* x, double* y, int64_t n, double a, double b);

// sum(g * x) and sum(g) over n elements in float64, 32 lanes each.
void grad_sums(const float* g, const float* x, int64_t n, double* gx, double* gs);
void grad_sums(const double* g, const double* x, int64_t n, double* gx, double* gs);

// dx[i] = c1 * g[i] + c2 * x[i] + c3 in float64, rounded to the element type.
void grad_input(const float* g, const float* x, float* dx, int64_t n, double c1, double c2, double c3);
void grad_input(const double* g, const double* x, double* dx, int64_t n, double c1, double c2, double c3);

}  // namespace kiln::cpu
