// The kiln CLI restarts itself once with OPENBLAS_CORETYPE set when OpenBLAS
// fell back to pre-AVX kernels (a masked CPU model under a hypervisor):
// OpenBLAS reads the variable only when it loads, and with SSE3 kernels prefill
// GEMMs and LAPACK run several times slower.
#pragma once

namespace kiln::cli {

// Returns only when no restart happened (or exec failed: carry on as we are).
void maybe_restart_for_openblas();

}  // namespace kiln::cli
