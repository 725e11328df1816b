// Runtime controls: memory statistics of the caching allocator, the thread pool,
// version and SIMD target.
#include <nanobind/stl/string.h>

#include "bind_util.h"
#include "kiln/bf16_gemm.h"
#include "kiln/sysinfo.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kiln::py {

void init_runtime(nb::module_& m) {
  m.attr("__version__") = kVersion;
  m.def("memory_stats", [] {
    const MemoryStats s = memory_stats();
    nb::dict d;
    d["current_bytes"] = s.current_bytes;
    d["peak_bytes"] = s.peak_bytes;
    d["reserved_bytes"] = s.reserved_bytes;
    d["alloc_count"] = s.alloc_count;
    d["cache_hits"] = s.cache_hits;
    return d;
  }, "The caching allocator's counters: current_bytes (held by live tensors), peak_bytes, "
     "reserved_bytes (current + cached), alloc_count, cache_hits.");
  m.def("reset_peak_memory_stats", &reset_peak_memory_stats, "Sets peak_bytes to current_bytes.");
  m.def("empty_cache", &empty_cache, "Returns every cached (unused) block to the system.");
  m.def("get_num_threads", &num_threads, "Threads used by parallel ops.");
  m.def("set_num_threads", [](int n) {
    if (n < 1) throw ValueError("[set_num_threads] expected a positive number of threads, got " + std::to_string(n));
    set_num_threads(n);
  }, "n"_a, "Resizes the thread pool (KILN_NUM_THREADS sets the initial size).");
  m.def("simd_target", [] { return std::string(sys::simd_target_name()); },
        "The SIMD target the kernels dispatch to on this CPU (e.g. 'AVX2').");
  m.def("allow_bf16_gemm", &allow_bf16_gemm, "allow"_a,
        "Whether products of many rows with bf16/FP8 weights may run on the CPU's AVX512-BF16 unit, "
        "rounding float32 activations to bf16 (each product off by at most 2^-8 of itself). False keeps "
        "them exact to float32. Default: allowed on AMD CPUs with the unit and on CPUs with AMX "
        "(KILN_BF16_GEMM=on|off).");
  m.def("bf16_gemm_allowed", &bf16_gemm_allowed, "The allow_bf16_gemm setting.");
  m.def("bf16_gemm_active", &bf16_gemm_active,
        "Allowed, and this CPU and the SIMD target (KILN_SIMD_TARGET) have AVX512-BF16.");
  m.def("allow_amx_tiles", &allow_amx_tiles, "allow"_a,
        "Where the CPU has AMX, whether the bf16 GEMM runs on its tiles (default; KILN_AMX=on|off) or, "
        "with False, on AVX512-BF16. The two may differ in the last bits of a sum.");
  m.def("amx_tiles_allowed", &amx_tiles_allowed, "The allow_amx_tiles setting.");
  m.def("amx_tiles_active", &amx_tiles_active,
        "Allowed, and this CPU, the OS and the SIMD target (KILN_SIMD_TARGET) have AMX-BF16 tiles.");
}

}  // namespace kiln::py
