// The grouped linear work loop behind grouped_mm's 2-D x 3-D form and the MoE
// FFN (CPU kernels), in the linear layout: y[s:e, :] (+)= x[s:e, :] @ (W[g] * scale[g])^T
// (+ bias[g]) for each group g of rows [s, e). Private to the library.
#pragma once

#include <cstdint>

#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

// x [T, K] float32 (row stride ldx), W [G, N, K] of w_dtype (rows ldw apart,
// experts w_stride apart), scale: null or [G, N] per-row float32,
// bias: null or [G, N] float32, ends [G] validated cumulative ends,
// y [T, N] float32 (row stride ldy).
struct GroupedLinear {
  const float* x = nullptr;
  int64_t ldx = 0;
  const void* w = nullptr;
  DType w_dtype = DType::Float32;
  int64_t ldw = 0, w_stride = 0;
  int64_t G = 0, N = 0, K = 0;
  const float* scale = nullptr;
  const float* bias = nullptr;
  const int32_t* ends = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  Fp8Codes codes = Fp8Codes::Unchecked;       // what the caller knows of FP8 W (kiln/quantize.h)
  const Fp8Subnormals* subnormals = nullptr;  // W's G matrices' subnormal codes, or null (unchecked)
};

// The one way to fill GroupedLinear from tensors. w [G, N, K] with K
// contiguous, rows and groups not overlapping; scale, bias: undefined or
// [G, N] float32 contiguous. x [T, K] and y [T, N] are contiguous float32 rows.
// Reads only tensor metadata: no allocation, no copy.
GroupedLinear grouped_linear_args(const float* x, const Tensor& w, const Tensor& scale, const Tensor& bias,
                                  const int32_t* ends, float* y, Fp8Codes codes = Fp8Codes::Unchecked,
                                  const Fp8Subnormals* subnormals = nullptr);

void grouped_linear(const GroupedLinear& p);

// Groups of up to this many rows take the matrix-vector kernels (x exact);
// larger ones the packed GEMM, which on the bf16 unit (cpu/gemm.h) rounds x
// to bf16. Depends on the weights, their scales and the active unit.
int64_t grouped_gemv_max_rows(DType w_dtype, bool row_scaled);

}  // namespace kiln::cpu
