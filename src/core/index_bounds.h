// The index reading and out-of-bounds report that the indexing front-ends'
// range checks (ops/index_common.h) and the CPU kernels' offset passes
// (cpu/ops/index_common.h) share, so both raise the same IndexError.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "kiln/error.h"

namespace kiln::index_detail {

inline int64_t load_i64(const char* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
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

}  // namespace kiln::index_detail
