// torch._grouped_mm / F.grouped_mm: many matrix products in one call, groups
// delimited by `offs` (int32 cumulative end indices, non-decreasing):
//   2-D x 3-D: a [T, K], b [G, K, N]        -> out [T, N],    out[s:e] = a[s:e] @ b[g]
//   3-D x 2-D: a [G, M, K], b [K, T]        -> out [M, T],    out[:, s:e] = a[g] @ b[:, s:e]
//   2-D x 2-D: a [M, T], b [T, N]           -> out [G, M, N], out[g] = a[:, s:e] @ b[s:e]
//   3-D x 3-D: a [G, M, K], b [G, K, N]     -> out [G, M, N] (bmm; no offs)
// with s = offs[g - 1] (0 for g = 0), e = offs[g]. Rows/columns past offs[-1]
// are zero. The 2-D x 3-D form runs (group, N-chunk) work items in parallel:
// small groups (decode) a matrix-vector product, larger ones the packed GEMM
// on x rows packed once per group.
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln {

// a, b: float32, bfloat16 or float16, one dtype; in the 2-D x 3-D form b may
// instead be FP8 with b_scale [G, N] or [G, N, 1] (per expert, per output
// column; beyond PyTorch). bias (2-D x 3-D only): [G, N]. out_dtype: a's
// dtype or float32.
Tensor grouped_mm(const Tensor& a, const Tensor& b, const Tensor& offs = Tensor(),
                  const Tensor& bias = Tensor(), const Tensor& b_scale = Tensor(),
                  std::optional<DType> out_dtype = std::nullopt);

}  // namespace kiln
