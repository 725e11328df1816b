// The output of a factory on a device: a contiguous, uninitialised tensor.
// On the CPU it is empty() (same checks, same messages); another device's
// storage comes from that device's allocator, which names `op` when this
// build lacks the device.
#pragma once

#include <memory>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

inline Tensor empty_on(const Shape& shape, DType dtype, Device device, const char* op) {
  if (device.is_cpu()) return empty(shape, dtype);
  const int64_t n = shape_numel(shape, op);
  size_t bytes = 0;
  if (__builtin_mul_overflow(size_t(n), itemsize(dtype), &bytes))
    throw ValueError(std::string("[") + op + "] " + std::to_string(n) + " elements of " + name(dtype) +
                     " exceed the largest possible allocation");
  auto storage = std::make_shared<Storage>(bytes, device, op);
  return Tensor(std::move(storage), dtype, shape, contiguous_strides(shape), 0, op);
}

}  // namespace kiln
