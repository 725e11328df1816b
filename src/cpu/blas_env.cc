// The OpenBLAS environment (include/kiln/blas_env.h): which kernel set this CPU
// should run and whether OpenBLAS picked it. CPU-backend business: it asks
// OpenBLAS and the CPU-feature probe of cpu/gemm.cc.
#include "kiln/blas_env.h"

#include <cstdlib>
#include <cstring>

#include "cpu/gemm.h"
#include "cpu/lapack.h"

namespace kiln::linalg {

const char* preferred_openblas_core() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

const char* openblas_core() { return openblas_get_corename(); }

bool openblas_core_misdetected() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || preferred_openblas_core() == nullptr) return false;
  const char* core = openblas_get_corename();
  for (const char* old : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Katmai", "Coppermine",
                          "Northwood", "Banias", "Atom", "Unknown"})
    if (std::strcmp(core, old) == 0) return true;
  // An AVX-512 CPU that this OpenBLAS does not know (Debian's 0.3.21 runs its
  // AVX2 "Haswell" kernels on a Zen 5): its SkylakeX sgemm is ~1.8x faster there
  // (M = 512, 4096 x 4096: 48 against 84-90 ms).
  return std::strcmp(preferred_openblas_core(), "SkylakeX") == 0 && !cpu::openblas_runs_avx512();
}

}  // namespace kiln::linalg
