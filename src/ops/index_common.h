// Shared validation of the indexing front-ends: index dtype checks and the
// range check of gather/scatter/index_select/index_add indices, run to
// completion before a kernel writes anything. The IndexError it raises is the
// one the kernels of take/put/index/index_put raise from their offset pass
// (core/index_bounds.h).
#pragma once

#include <string>

#include "core/index_bounds.h"
#include "core/strided_loop.h"
#include "kiln/tensor.h"

namespace kiln::index_detail {

// The index tensor as int64 (int32 is converted); other dtypes throw TypeError.
inline Tensor index_to_int64(const Tensor& idx, const char* op, const char* what = "index") {
  if (!idx.defined()) throw ValueError(std::string("[") + op + "] " + what + " is undefined");
  if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32)
    throw TypeError(std::string("[") + op + "] expected " + what + " of dtype int64 or int32, got " +
                    name(idx.dtype()));
  return idx.to(DType::Int64);
}

// Throws IndexError unless every element of idx (int64, any strides) lies in
// [0, size), or [-size, size) with allow_negative. Reads only.
inline void check_indices(const Tensor& idx, int64_t size, bool allow_negative, const char* op, int dim) {
  if (idx.numel() == 0) return;
  const Tensor* ops[1] = {&idx};
  const StridedLoop loop = StridedLoop::make(idx.shape(), ops);
  const int64_t lo = allow_negative ? -size : 0;
  BadIndex bad;
  for_each(loop, kElementwiseGrain, [&](char** p, const int64_t* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = load_i64(p[0] + i * s[0]);
      if (v < lo || v >= size) {
        bad.report(v);
        return;
      }
    }
  });
  bad.throw_if_any(op, dim, size);
}

}  // namespace kiln::index_detail
