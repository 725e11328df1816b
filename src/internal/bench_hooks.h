// Internal hooks for kiln's own benchmarks (`kiln bench`, tools/kiln): the
// kernel-selection switches they flip and report, the raw entries they time,
// and the raw BLAS/LAPACK calls they time as peers. Not API and never installed; a program using
// kiln reaches the library through include/kiln/ alone.
#pragma once

#include "cpu/amx.h"               // cpu::amx_bf16_usable, amx_tiles_active
#include "cpu/gemm.h"              // cpu::BlasThreads, bf16_gemm_active
#include "cpu/gemv.h"              // cpu::bf16_dot, set_bf16_dot, bf16_dot_active, bf16_dot_covers, dispatch_runs_avx3
#include "cpu/lapack.h"            // cpu::lapack: getrf, geqrf, orgqr, gesdd
#include "cpu/ops/linalg_batch.h"  // linalg::detail::BlasThreads, kBlasThreadMinN
#include "nn/sampling.h"           // sample_row_
