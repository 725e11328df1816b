#include "kiln/device.h"

#include <charconv>

#include "core/device_check.h"
#include "kiln/error.h"

namespace kiln {

const char* device_kind_name(DeviceKind kind) { return kind == DeviceKind::CPU ? "cpu" : "cuda"; }

std::string Device::str() const {
  std::string s = device_kind_name(kind);
  if (has_index()) {
    s += ':';
    s += std::to_string(index);
  }
  return s;
}

Device Device::make(DeviceKind kind, int index, const char* op) {
  if (index < -1)
    throw ValueError(std::string("[") + op + "] device index must not be negative, got " +
                     std::to_string(index));
  if (kind == DeviceKind::CPU && index > 0)
    throw ValueError(std::string("[") + op + "] CPU device index must be 0 (or none), got " +
                     std::to_string(index));
  return Device{kind, index};
}

Device Device::parse(std::string_view text, const char* op) {
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  DeviceKind kind;
  if (name == "cpu") {
    kind = DeviceKind::CPU;
  } else if (name == "cuda") {
    kind = DeviceKind::CUDA;
  } else {
    throw ValueError(std::string("[") + op +
                     "] expected a device type of cpu or cuda at the start of the "
                     "device string, got '" +
                     std::string(text) + "'");
  }
  if (colon == std::string_view::npos) return Device{kind, -1};
  const std::string_view digits = text.substr(colon + 1);
  int index = -1;
  // Digits only, as torch: no sign, no spaces, no leading zeros ("cuda:01").
  const bool digits_only = !digits.empty() &&
                           digits.find_first_not_of("0123456789") == std::string_view::npos &&
                           !(digits.size() > 1 && digits[0] == '0');
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (!digits_only || ec != std::errc() || end != digits.data() + digits.size())
    throw ValueError(std::string("[") + op + "] invalid device string '" + std::string(text) +
                     "': expected <type> or <type>:<index> with a non-negative index");
  return make(kind, index, op);
}

void throw_device_mismatch(const char* op, Device a, Device b) {
  throw Error(std::string("[") + op + "] expected all tensors on the same device, got " + a.str() + " and " +
              b.str());
}

}  // namespace kiln
