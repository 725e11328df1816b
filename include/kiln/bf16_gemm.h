// The AVX512-BF16 GEMM switch. Linear layers and grouped products of more
// than a few rows (prefill, MoE experts, training) with bf16, e4m3fn or e5m2
// weights (no scale, a tensor or a row scale) may run on the CPU's bf16
// dot-product instruction (vdpbf16ps): ~1.8x the multiply-add rate of
// float32 FMAs on a Zen 5. It rounds float32 activations to bf16 (to nearest
// even: each product off by at most 2^-8 of itself, as torch's bf16 F.linear
// rounds them before its call); bf16 activations and FP8 inputs of scaled_mm
// lose nothing, and the sums stay float32. Allowed by default on AMD CPUs
// that have the instruction; KILN_BF16_GEMM=on|off sets the default, and
// allow_bf16_gemm(false) keeps every product exact to float32.
#pragma once

namespace kiln {

void allow_bf16_gemm(bool allow);
bool bf16_gemm_allowed();
// Allowed, and this CPU and the SIMD dispatch target (KILN_SIMD_TARGET) have it.
bool bf16_gemm_active();

}  // namespace kiln
