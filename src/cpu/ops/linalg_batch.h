// How the CPU kernels of kiln.linalg run a batch of LAPACK calls: across
// kiln's threads for small matrices, with OpenBLAS threading inside each call
// for large ones.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/gemm.h"
#include "kiln/thread_pool.h"

namespace kiln::linalg::detail {
// OpenBLAS's own threads for one op (cpu::BlasThreads): 1 below
// `kBlasThreadMinN` (where its thread hand-offs cost more than they save -- on
// a busy 2-core machine a 128x128 QR took 2.5 s threaded vs 0.8 ms not),
// kiln's thread count above.
inline constexpr int64_t kBlasThreadMinN = 512;
using cpu::BlasThreads;

// Runs fn(b) for every matrix b in [0, count): across kiln's threads for small
// matrices (where one LAPACK call is too little work to thread), one after the
// other (letting OpenBLAS thread inside each call when they are large) else.
template <typename F>
void for_each_matrix(int64_t count, int64_t n, F&& fn) {
  if (n <= 96 && count > 1) {
    BlasThreads one(1);
    kiln::parallel_for(0, count, std::max<int64_t>(1, 4096 / (n * n + 1)), [&](int64_t s, int64_t e) {
      for (int64_t b = s; b < e; ++b) fn(b);
    });
  } else {
    BlasThreads bt(n >= kBlasThreadMinN ? kiln::num_threads() : 1);
    for (int64_t b = 0; b < count; ++b) fn(b);
  }
}
}  // namespace kiln::linalg::detail
