// Scratch memory for kernels and op front-ends, from kiln's caching allocator.
#pragma once

#include <cstddef>

#include "kiln/allocator.h"

namespace kiln {

// Scratch memory for one call: a block from allocate() (64-byte aligned,
// cached), given back when the scope ends, exceptions included.
class ScratchBlock {
 public:
  explicit ScratchBlock(size_t nbytes) : p_(nbytes ? allocate(nbytes) : nullptr), n_(nbytes) {}
  ~ScratchBlock() {
    if (p_) deallocate(p_, n_);
  }
  ScratchBlock(const ScratchBlock&) = delete;
  ScratchBlock& operator=(const ScratchBlock&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_;
  size_t n_;
};

}  // namespace kiln
