#pragma once

namespace kiln {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace kiln
