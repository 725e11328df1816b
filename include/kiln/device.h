// Where a tensor lives: a kind (cpu, cuda) and an optional index, as
// torch.device. Only the CPU is compiled in today; a CUDA device can be named
// (parsed, printed, compared) but asking for its memory raises.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

enum class DeviceKind : uint8_t { CPU, CUDA };
inline constexpr int kDeviceKinds = 2;  // the number of DeviceKind values

// "cpu", "cuda"
const char* device_kind_name(DeviceKind kind);

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  // -1: no index given ("cpu", "cuda"), as torch's None. A CPU storage reports
  // -1 (torch: device(type='cpu')); a CUDA storage always has its index.
  int index = -1;

  bool operator==(const Device&) const = default;
  bool has_index() const { return index >= 0; }
  bool is_cpu() const { return kind == DeviceKind::CPU; }
  bool is_cuda() const { return kind == DeviceKind::CUDA; }
  // "cpu", "cpu:0", "cuda", "cuda:1": the text parse() reads back.
  std::string str() const;

  // Reads "cpu", "cuda", "cuda:1" (also "cpu:0"); ValueError naming `op` for an
  // unknown kind, a malformed or negative index, or a CPU index other than 0.
  static Device parse(std::string_view text, const char* op = "device");
  // A kind and index (-1: none); ValueError naming `op` when the index is below
  // -1 or a CPU index is not 0 (torch's rule).
  static Device make(DeviceKind kind, int index, const char* op = "device");
};

// Whether a and b name the same memory: the kinds match and, where both carry
// an index, the indices do. "cpu" and "cpu:0" are one device; so are "cuda"
// (the current device, 0 in kiln) and "cuda:0".
// Inline: every op call checks its tensors with it.
inline bool same_device(Device a, Device b) {
  if (a.kind != b.kind) return false;
  if (a.kind == DeviceKind::CPU) return true;  // one host: "cpu" and "cpu:0" alike
  // "cuda" without an index is the current device, which is cuda:0 in kiln.
  return (a.has_index() ? a.index : 0) == (b.has_index() ? b.index : 0);
}

}  // namespace kiln
