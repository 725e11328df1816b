// torch._grouped_mm / F.grouped_mm: many matrix products in one call, groups
// delimited by `offs` (int32 cumulative end indices, non-decreasing):
//   2-D x 3-D: a [T, K], b [G, K, N]        -> out [T, N],    out[s:e] = a[s:e] @ b[g]
//   3-D x 2-D: a [G, M, K], b [K, T]        -> out [M, T],    out[:, s:e] = a[g] @ b[:, s:e]
//   2-D x 2-D: a [M, T], b [T, N]           -> out [G, M, N], out[g] = a[:, s:e] @ b[s:e]
//   3-D x 3-D: a [G, M, K], b [G, K, N]     -> out [G, M, N] (bmm; no offs)
// with s = offs[g - 1] (0 for g = 0), e = offs[g]. Rows/columns past offs[-1]
// are zero. Work items are (group, N-chunk) pairs, run in parallel: groups of
// up to kLinearGemvMaxRows rows (decode) run a matrix-vector product, larger
// ones the packed GEMM on x rows packed once per group.
#pragma once

#include <optional>

#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln {

// a, b: float32, bfloat16 or float16, one dtype; in the 2-D x 3-D form b may
// instead be FP8 with b_scale [G, N] or [G, N, 1] (per expert, per output
// column; beyond PyTorch). bias (2-D x 3-D only): [G, N]. out_dtype: a's
// dtype or float32.
Tensor grouped_mm(const Tensor& a, const Tensor& b, const Tensor& offs = Tensor(),
                  const Tensor& bias = Tensor(), std::optional<DType> out_dtype = std::nullopt,
                  const Tensor& b_scale = Tensor());

namespace detail {
// The work loop behind the 2-D x 3-D form and the MoE FFN, in the linear
// layout: y[s:e, :] (+)= x[s:e, :] @ (W[g] * scale[g])^T (+ bias[g]).
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
  Fp8Codes codes = Fp8Codes::Unchecked;  // what the caller knows of FP8 W (kiln/quantize.h)
  const Fp8Subnormals* subnormals = nullptr;  // W's G matrices' subnormal codes, or null (unchecked)
};
void grouped_linear(const GroupedLinear& p);
}  // namespace detail

}  // namespace kiln
