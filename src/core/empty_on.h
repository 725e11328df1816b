// The output of a factory on a device: empty(shape, dtype, device), except
// that a device this build lacks is refused naming the factory (`op`) rather
// than empty.
#pragma once

#include "kiln/allocator.h"
#include "kiln/tensor.h"

namespace kiln {

inline Tensor empty_on(const Shape& shape, DType dtype, Device device, const char* op) {
  if (!device.is_cpu()) allocator_for(device, op);  // NotImplementedError "[op] device ... not available"
  return empty(shape, dtype, device);
}

}  // namespace kiln
