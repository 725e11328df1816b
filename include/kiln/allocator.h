// The caching host allocator: 64-byte aligned blocks; freed blocks are kept and
// reused for later requests of a similar size, so a token loop that allocates
// the same shapes every step touches the system allocator only once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

struct MemoryStats {
  size_t current_bytes = 0;   // held by live tensors
  size_t peak_bytes = 0;      // max of current_bytes since start or the last reset
  size_t reserved_bytes = 0;  // current + cached blocks not yet returned to the system
  uint64_t alloc_count = 0;   // allocations served
  uint64_t cache_hits = 0;    // of which served from the cache
};

// Throws OutOfMemoryError (carrying nbytes) when the system refuses.
void* allocate(size_t nbytes);
void deallocate(void* ptr, size_t nbytes);
MemoryStats memory_stats();
void reset_peak_memory_stats();
// Returns every cached (unused) block to the system.
void empty_cache();
// The most freed memory the cache keeps (default: KILN_ALLOC_CACHE_MB, else a
// quarter of physical memory); setting it returns what no longer fits.
size_t cache_limit();
void set_cache_limit(size_t bytes);

}  // namespace kiln
