// The parts of system_info() (kiln/sysinfo.h) that are not API, for tests.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/sysinfo.h"

namespace kiln::sys {

// Parses a sysfs cache size such as "48K", "2048K", "32M" or "1G" into bytes;
// returns 0 for anything else.
int64_t parse_cache_size(const std::string& text);

}  // namespace kiln::sys
