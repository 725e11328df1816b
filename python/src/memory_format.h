// kiln.memory_format objects (kiln.contiguous_format, kiln.channels_last,
// kiln.channels_last_3d, kiln.preserve_format) and their conversion.
#pragma once

#include <nanobind/nanobind.h>

#include "kiln/memory_format.h"

namespace kiln::py {

// A kiln.memory_format (or torch's of the same name); None gives `fallback`.
// TypeError naming `op` otherwise.
MemoryFormat to_memory_format(nanobind::handle h, const char* op,
                              MemoryFormat fallback = MemoryFormat::Preserve);

}  // namespace kiln::py
