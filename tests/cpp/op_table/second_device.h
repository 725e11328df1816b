// A second device for tests, in a build that has only the CPU: host memory
// registered as cuda:0, its own allocator (so tests see which device each
// tensor was allocated on), and, when asked, every registered op's CPU kernel
// as its cuda kernel. With it the op table runs every entry on "another
// device", which checks what a real backend relies on: each front-end
// allocates its outputs on its inputs' device and dispatches there.
#pragma once

#include <cstdint>

#include "kiln/allocator.h"
#include "kiln/device.h"

namespace op_table {

class SecondDevice {
 public:
  static constexpr kiln::Device kDevice{kiln::DeviceKind::CUDA, 0};

  // Registers the allocator; with_kernels: also shares every op's CPU kernel.
  explicit SecondDevice(bool with_kernels);
  // Unregisters both: the build has only the CPU again.
  ~SecondDevice();
  SecondDevice(const SecondDevice&) = delete;
  SecondDevice& operator=(const SecondDevice&) = delete;

  // Allocations served since construction.
  uint64_t allocations() const;

 private:
  bool with_kernels_;
};

}  // namespace op_table
