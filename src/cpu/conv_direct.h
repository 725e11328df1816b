// SIMD row primitives of the direct convolution kernels (cpu/ops/conv.cc):
// the depthwise and other one-channel-per-group convolutions, whose gemm
// would have a single row, run as sums of scaled rows instead.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// y[j] += w * x[j] for j < n (a fused multiply-add per lane where the CPU has one).
void conv_axpy(float w, const float* x, float* y, int64_t n);
void conv_axpy(double w, const double* x, double* y, int64_t n);
// sum_j x[j] * y[j] for j < n, in a fixed lane-then-tail order.
float conv_dot(const float* x, const float* y, int64_t n);
double conv_dot(const double* x, const double* y, int64_t n);

}  // namespace kiln::cpu
