// Where a tensor lives. Only the CPU exists today; the kind/index pair leaves
// room for CUDA behind the same front-ends.
#pragma once

#include <string>

namespace kiln {

enum class DeviceKind : uint8_t { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;
  bool operator==(const Device&) const = default;
  std::string str() const { return kind == DeviceKind::CPU ? "cpu" : "cuda:" + std::to_string(index); }
};

}  // namespace kiln
