// The device rule every op front-end applies before it picks a kernel: all
// tensor arguments live on one device (torch's "Expected all tensors to be on
// the same device").
#pragma once

#include <span>

#include "kiln/device.h"
#include "kiln/tensor.h"

namespace kiln {

// Throws kiln::Error (Python RuntimeError, as torch)
// "[op] expected all tensors on the same device, got cpu and cuda:0".
[[noreturn]] void throw_device_mismatch(const char* op, Device a, Device b);

// Checks that every defined tensor is on the first one's device; undefined
// tensors (an absent bias) are skipped. The message names the first device and
// the first that differs from it. No allocation.
template <typename... Tensors>
void check_same_device(const char* op, const Tensors&... tensors) {
  const Tensor* first = nullptr;
  auto check = [&](const Tensor& t) {
    if (!t.defined()) return;
    if (first == nullptr) {
      first = &t;
    } else if (!same_device(first->device(), t.device())) {
      throw_device_mismatch(op, first->device(), t.device());
    }
  };
  (check(tensors), ...);
}

// The same for a list of tensors (cat, stack, grouped ops).
inline void check_same_device_list(const char* op, std::span<const Tensor> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (first == nullptr)
      first = &t;
    else if (!same_device(first->device(), t.device()))
      throw_device_mismatch(op, first->device(), t.device());
  }
}

}  // namespace kiln
