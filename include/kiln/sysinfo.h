// What the machine is: CPU model, logical cores, cache sizes and memory, read
// from /proc and /sys on Linux, and the SIMD target kiln's kernels run on.
// `kiln info` prints it; the runtime sizes buffers by it; the benchmarks size
// buffers that the last-level cache cannot hold.
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

// "48 KiB", "2 MiB", "1.5 GiB": a byte count for people.
std::string format_bytes(int64_t bytes);

// The SIMD target the kernels run on (e.g. "AVX2", "AVX3_ZEN4"): the best one
// compiled in and supported by this CPU, capped by KILN_SIMD_TARGET when set.
const char* simd_target_name();

}  // namespace kiln::sys
