// What the machine is: CPU model, logical cores, cache sizes and memory, read
// from /proc and /sys on Linux. Used by `kiln info` and by the benchmarks to
// size buffers that the last-level cache cannot hold.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::sys {

struct SystemInfo {
  std::string cpu_model;   // "unknown" when the OS does not say
  int logical_cores = 1;   // online logical CPUs
  // Per-instance sizes in bytes of cpu0's caches; 0 when not reported.
  int64_t l1d_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t l3_bytes = 0;
  int64_t mem_total_bytes = 0;      // 0 when unknown
  int64_t mem_available_bytes = 0;  // 0 when unknown

  // The largest cache reported (L3, else L2, else L1d); 0 when none is.
  int64_t llc_bytes() const;
};

// Reads the machine once per process (cached).
const SystemInfo& system_info();

// Memory a new allocation can have now (read afresh on every call): MemAvailable,
// lowered to the room left under this process's cgroup v2 limit when it has one;
// 0 when the OS does not say.
int64_t available_memory_bytes();

// Parses a sysfs cache size such as "48K", "2048K", "32M" or "1G" into bytes;
// returns 0 for anything else.
int64_t parse_cache_size(const std::string& text);

// "48 KiB", "2 MiB", "1.5 GiB": a byte count for people.
std::string format_bytes(int64_t bytes);

}  // namespace kiln::sys
