// The bf16 GEMM switches. Linear layers and grouped products of more than a
// few rows (prefill, MoE experts, training) with bf16, f16, e4m3fn or e5m2
// weights (no scale, a tensor, a row or 128 x 128 block scales; f16 as two
// bf16 parts that sum to each weight exactly) may run on the CPU's bf16
// units: Intel's AMX tiles (Sapphire Rapids and later; tdpbf16ps) or the
// AVX512-BF16 dot product (vdpbf16ps; ~1.8x the multiply-add rate of
// float32 FMAs on a Zen 5). Both round float32 activations to bf16 (to
// nearest even: each product off by at most 2^-8 of itself, as torch's bf16
// F.linear rounds them before its call); bf16 activations and FP8 inputs of
// scaled_mm lose nothing, and the sums stay float32. matmul / mm / bmm of
// bf16 tensors past the matrix-vector rows take them too (nothing rounded). Allowed by default on
// AMD CPUs with AVX512-BF16 and on CPUs with AMX; KILN_BF16_GEMM=on|off sets
// the default, and allow_bf16_gemm(false) keeps every product exact to
// float32.
#pragma once

namespace kiln {

void allow_bf16_gemm(bool allow);
bool bf16_gemm_allowed();
// Allowed, and this CPU and the SIMD dispatch target (KILN_SIMD_TARGET) have it.
bool bf16_gemm_active();

// Which unit the bf16 GEMM runs on where the CPU has AMX: the tiles (the
// default; KILN_AMX=on|off sets it) or, with allow_amx_tiles(false), the
// AVX512-BF16 dot product. The results may differ in the last bits (the
// units add the pairs of products in their own order).
void allow_amx_tiles(bool allow);
bool amx_tiles_allowed();
// Allowed, and this CPU (AMX-TILE and AMX-BF16), the kernel (Linux grants
// the tile state on request) and the SIMD target have them.
bool amx_tiles_active();

}  // namespace kiln
