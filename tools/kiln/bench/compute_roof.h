// The machine's compute roof for matrix products: the peak rate of each unit
// kiln's GEMMs use, measured by a loop of independent multiply-adds on
// registers (no memory traffic) on every thread of kiln's pool. Prefill
// cases report GFLOP/s as a fraction of the unit they ran on, as decode
// cases report GB/s as a fraction of the read roof.
#pragma once

namespace kiln::cli::bench {

struct ComputeRoof {
  double fma_f32_gflops = 0;   // float32 FMAs at the dispatch target's width
  double bf16_dot_gflops = 0;  // AVX512-BF16 vdpbf16ps; 0 where the CPU (or the target cap) lacks it
  double amx_bf16_gflops = 0;  // AMX-BF16 tdpbf16ps; 0 where the CPU or the OS lacks it
  int threads = 0;
};

// Best of `passes` timed passes of about 20 ms each per unit.
ComputeRoof measure_compute_roof(int passes = 3);

}  // namespace kiln::cli::bench
