// Shared front-end helpers of the nn ops: dtype checks, trailing-shape checks.
#pragma once

#include <string>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::nn_detail {

// float16, bfloat16, float32, float64.
inline bool is_compute_float(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

inline void check_float(const Tensor& t, const char* op, const char* what) {
  KILN_CHECK(
      is_compute_float(t.dtype()), TypeError,
      "[" << op << "] " << what << " must be float16, bfloat16, float32 or float64, got " << name(t.dtype()));
}

// Product of the trailing dims of x given by `normalized` (which must match them).
inline int64_t trailing_numel(const Tensor& x, const Shape& normalized, const char* op) {
  const int k = int(normalized.size());
  KILN_CHECK(k >= 1 && k <= x.dim(), ValueError,
             "[" << op << "] normalized_shape " << shape_to_string(normalized)
                 << " does not fit input of shape " << x.shape_str());
  int64_t n = 1;
  for (int i = 0; i < k; ++i) {
    KILN_CHECK(x.size(x.dim() - k + i) == normalized[size_t(i)], ValueError,
               "[" << op << "] normalized_shape " << shape_to_string(normalized)
                   << " does not match the trailing dims of input " << x.shape_str());
    n *= normalized[size_t(i)];
  }
  return n;
}

}  // namespace kiln::nn_detail
