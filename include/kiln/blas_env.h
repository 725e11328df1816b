// OpenBLAS kernel choice for programs that use kiln (the kiln CLI does): OpenBLAS reads
// OPENBLAS_CORETYPE once, when it loads, and under hypervisors that mask the
// CPU model Debian's OpenBLAS falls back to SSE3 kernels. See
// python/kiln/_blas_env.py for the Python side of the same rule.
#pragma once

namespace kiln::linalg {

// The OPENBLAS_CORETYPE this CPU should use ("SkylakeX" with AVX-512,
// "Haswell" with AVX2 + FMA), or nullptr to keep OpenBLAS's own choice.
const char* preferred_openblas_core();
// The kernel set OpenBLAS is running with now.
const char* openblas_core();
// True when OPENBLAS_CORETYPE is unset and OpenBLAS picked kernels older than
// the CPU: pre-AVX ones on a CPU that has AVX2, or AVX2 ones on a CPU with
// AVX-512. Restarting the program with the variable set (see
// preferred_openblas_core) runs LAPACK several times faster, sgemm ~1.8x.
bool openblas_core_misdetected();

}  // namespace kiln::linalg
