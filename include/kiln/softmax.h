// softmax and log_softmax with torch's names and semantics.
//
//   softmax(x, dim, dtype): exp(x - max) / sum over `dim`. `dtype` (floating)
//   casts x first and is the result dtype; otherwise x must be floating
//   (float16, bfloat16, float32, float64) and the result keeps its dtype.
//   float16/bfloat16 compute in float32 and round once on store.
//   A slice whose max is NaN or +-inf (it holds a NaN or +inf, or is all -inf)
//   comes out all NaN, as torch's. Empty tensors give empty results; a 0-dim
//   tensor takes dim 0 / -1 and gives 1 (log_softmax: 0).
//
// The *_out forms write into a caller-provided tensor of x's shape (its dtype is
// the compute/result dtype) and allocate nothing when x is float32 (or already
// of out's dtype), `dim` is the last dim with unit stride and out is contiguous:
// the per-token path of the LLM runtime.
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln {

Tensor softmax(const Tensor& x, int dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int dim, std::optional<DType> dtype = std::nullopt);

void softmax_out(const Tensor& x, int dim, const Tensor& out);
void log_softmax_out(const Tensor& x, int dim, const Tensor& out);

}  // namespace kiln
