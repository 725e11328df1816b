// Memory per device. Each device has one caching allocator behind the
// Allocator interface; allocator_for(device) finds it. The host's: 64-byte
// aligned blocks; freed blocks are kept and reused for later requests of a
// similar size, so a token loop that allocates the same shapes every step
// touches the system allocator only once. The free functions below are the
// host allocator's shortcuts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kiln/device.h"

namespace kiln {

struct MemoryStats {
  size_t current_bytes = 0;   // held by live tensors
  size_t peak_bytes = 0;      // max of current_bytes since start or the last reset
  size_t reserved_bytes = 0;  // current + cached blocks not yet returned to the system
  uint64_t alloc_count = 0;   // allocations served
  uint64_t cache_hits = 0;    // of which served from the cache
};

// One device's caching allocator. Storage calls allocate/deallocate once per
// tensor; the rest is for memory reports and tuning.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Throws OutOfMemoryError (carrying nbytes) when the device refuses.
  virtual void* allocate(size_t nbytes) = 0;
  // nbytes: what allocate() was asked for.
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual MemoryStats stats() = 0;
  virtual void reset_peak_stats() = 0;
  // Returns every cached (unused) block to the device.
  virtual void empty_cache() = 0;
  virtual size_t cache_limit() = 0;
  virtual void set_cache_limit(size_t bytes) = 0;
};

// The host (CPU) caching allocator.
Allocator& cpu_allocator();
// Whether this build has memory for `device`: the CPU always, another device
// when its backend has registered an allocator that serves it.
bool device_available(Device device);
// The allocator of `device` ("cuda" is "cuda:0"); NotImplementedError "[op]
// device cuda:0 is not available in this build; only cpu is" otherwise.
Allocator& allocator_for(Device device, const char* op = "allocator_for");

// A backend's allocators for its device kind: the one serving `device` (an
// indexed device of that kind), or null when that index does not exist.
using AllocatorLookup = Allocator* (*)(Device device);
// Called once by a backend's registration (src/backends.cc), before any tensor
// of that kind exists; null unregisters (tests). The CPU's cannot be replaced.
void register_device_allocators(DeviceKind kind, AllocatorLookup lookup);

// ---- the host allocator's shortcuts ----
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
