// Shared validation of the indexing front-ends: index dtype checks and the
// range check of gather/scatter/index_select/index_add indices, run to
// completion before a kernel writes anything. The IndexError it raises is the
// one the kernels of take/put/index/index_put raise from their offset pass.
#pragma once

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "core/strided_loop.h"
#include "kiln/tensor.h"

namespace kiln::index_detail {

inline int64_t load_i64(const char* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The index tensor as int64 (int32 is converted); other dtypes throw TypeError.
inline Tensor index_to_int64(const Tensor& idx, const char* op, const char* what = "index") {
  if (!idx.defined()) throw ValueError(std::string("[") + op + "] " + what + " is undefined");
  if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32)
    throw TypeError(std::string("[") + op + "] expected " + what + " of dtype int64 or int32, got " +
                    name(idx.dtype()));
  return idx.to(DType::Int64);
}

[[noreturn]] inline void throw_out_of_bounds(const char* op, int64_t value, int dim, int64_t size) {
  throw IndexError(std::string("[") + op + "] index " + std::to_string(value) +
                   " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                   std::to_string(size));
}

// Collects the first bad index seen by any thread of a parallel scan.
class BadIndex {
 public:
  void report(int64_t v) {
    if (found_.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (!found_.load(std::memory_order_relaxed)) {
      value_ = v;
      found_.store(true);
    }
  }
  void throw_if_any(const char* op, int dim, int64_t size) const {
    if (found_.load()) throw_out_of_bounds(op, value_, dim, size);
  }

 private:
  std::atomic<bool> found_{false};
  std::mutex mu_;
  int64_t value_ = 0;
};

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
