// Matrix-vector kernels for decode-time linear layers: y[m, n] = sum_k x[m, k] *
// W[n, k] * scale + bias[n] for a handful of activation rows m (tiles of up to 4; linear
// uses them up to kLinearGemvMaxRows rows, MoE expert groups up to 16) against a
// weight matrix W [N, K] in float32, bfloat16, float16 or FP8. Weights are
// widened to float32 in registers; the scale is applied once per row (or once
// per 128x128 block); the bias is added in the epilogue, and each output is
// narrowed to its dtype on store. One translation unit per weight type
// (gemv_<type>.cc) bounds compile time; gemv.cc threads over N.
#pragma once

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln {

// The number of activation rows up to which linear takes the matrix-vector
// path: its cost grows with every row, while the packed GEMM's micro-tile
// computes a whole vector of rows at once; on 4096x4096 they cross near 6-8
// rows (bf16, FP8, float32 alike).
inline constexpr int64_t kLinearGemvMaxRows = 6;

}  // namespace kiln

namespace kiln::cpu {

// How W's scale is laid out.
enum class ScaleKind : uint8_t {
  None,    // no scale
  Tensor,  // one float: scale[0]
  Row,     // one float per output row: scale[n]
  Block,   // one float per 128x128 block: scale[(n / 128) * scale_ld + k / 128]
};
inline constexpr int64_t kScaleBlock = 128;

struct GemvArgs {
  const void* w = nullptr;  // W [N, K], rows ldw elements apart, k contiguous
  int64_t ldw = 0;
  int64_t N = 0, K = 0;
  const float* x = nullptr;  // x [M, K] float32, rows ldx apart, k contiguous
  // Or x as bf16 bits, rows ldx apart, with x null: only the AVX512-BF16 GEMM
  // takes it (gemm.h, bf16_gemm_covers), which then reads no float32 copy.
  const uint16_t* x_bf16 = nullptr;
  int64_t ldx = 0;
  int64_t M = 0;
  void* y = nullptr;  // y [M, N] of y_dtype (f32, bf16 or f16), rows ldy apart, n contiguous
  int64_t ldy = 0;
  DType y_dtype = DType::Float32;
  ScaleKind scale_kind = ScaleKind::None;
  const float* scale = nullptr;
  int64_t scale_ld = 0;         // Block: blocks per scale row (ceil(K / 128))
  const float* bias = nullptr;  // [N] float32 or null
  bool accumulate = false;      // y += result (y must be float32)
  // W given k-major, as the [K, N] matrix W^T: element (n, k) at w[k * ldw +
  // n]. Only the bf16 GEMM takes it, for bf16 W (bf16_gemm_takes): matmul's
  // row-major B, and the input gradient's W in a backward pass.
  bool w_kmajor = false;
  // x's float32 values must be kept as they are: the bf16 GEMM, which
  // rounds x to bf16, declines (bf16_gemm_takes). scaled_mm's x with its
  // block scales folded in.
  bool x_exact = false;
  // W (float8_e4m3fn) is known to hold no NaN code: the caller scanned it
  // (fp8_has_nan_code), so the kernel skips its own per-step test.
  bool w_no_nan = false;
  // W (float8_e4m3fn)'s subnormal codes, all of them, as listed by
  // fp8_find_subnormals (kiln/quantize.h): row n's columns are
  // sub_col[sub_row_start[n] .. sub_row_start[n + 1]), ascending. Null: not
  // known. Where the kernel would otherwise test each step for them (Intel),
  // it runs with denormal inputs read as zero (MXCSR.DAZ) and adds these terms
  // after, exactly. DAZ also drops what the exact kernels keep of a sum that
  // falls below ~2^-124 of its row's largest |x| (seen only when the weights
  // that meet x's largest elements are zero) and block scales below 2^-126.
  // Not used with accumulate.
  const int64_t* sub_row_start = nullptr;
  const int32_t* sub_col = nullptr;
  const int32_t* sub_row = nullptr;   // each listed code's row
  const uint8_t* sub_code = nullptr;  // and the code itself
};

// Rows [n0, n1) of y, all M activation rows, on the calling thread. w_dtype is
// W's dtype. A NaN weight code (float8_e4m3fn S.1111.111 too) makes its
// rows NaN, as in IEEE arithmetic (unless w_no_nan says there is none: such a
// code then reads as a finite number).
void gemv_rows(DType w_dtype, const GemvArgs& a, int64_t n0, int64_t n1);

// All of y, split over N across kiln's thread pool.
void gemv(DType w_dtype, const GemvArgs& a);

// The same arithmetic in double precision, one element at a time: the oracle
// the tests compare the SIMD kernels against.
void gemv_reference(DType w_dtype, const GemvArgs& a);

// How the x86 e4m3 kernel (AVX2 and AVX-512) meets subnormal weight codes,
// which its integer widening turns into float32 denormals (gemv_widen-inl.h).
// Both are exact:
//   Test: for cores where an FMA on a denormal costs ~70x (Intel): AVX-512
//         tests each step of 64 codes and sends those to a scalar path;
//         AVX2, with no cheap test, widens through f16 instead;
//   Fma:  the FMAs take them as they are, where denormals cost nothing (AMD
//         Zen 3 and Zen 4 measured; older AMD cores assumed alike): ~10%
//         faster on AVX-512, ~1.4x on AVX2.
// The default follows the CPU (GemvTuning::denormal_fma_fast below);
// KILN_E4M3_SUBNORMALS=test|fma sets it for a process. Other targets and
// dtypes do not depend on it.
enum class E4M3Subnormals { Test, Fma };
E4M3Subnormals e4m3_subnormals();
void set_e4m3_subnormals(E4M3Subnormals mode);

// Whether bf16 and FP8 weights may go through AVX512-BF16's dot-product
// instruction (gemv_dot.cc) for one activation row, on CPUs that have it (and
// AVX512-VBMI, for the FP8 lookup) when dispatch runs AVX-512: ~1.2x the read
// speed of widening on a Zen 5. It splits x into two bf16 parts (16
// significant bits: each term off by at most 2^-17 of itself) and drops terms
// below 2^-126; rows that come out NaN and x with inf or NaN take the exact
// kernel. On by default except on Intel (GemvTuning::bf16_dot_by_default);
// KILN_BF16_DOT=on|off (or set_bf16_dot) overrides, and off keeps every row
// exact to float32.
bool bf16_dot();
void set_bf16_dot(bool on);
// bf16_dot() and this CPU and the dispatch target allow the dot kernel. The
// CPU and target part is decided at the first call (after KILN_SIMD_TARGET's
// cap): later hwy::SetSupportedTargetsForTest calls do not change it.
bool bf16_dot_active();
// Whether run-time dispatch may run an AVX-512 target (the kernels written
// for AVX-512 extensions outside Highway follow it). Decided at the first
// call, after KILN_SIMD_TARGET's cap: hwy::SupportedTargets() runs CPUID on
// every call, which a VM traps to its hypervisor.
bool dispatch_runs_avx3();
// bf16_dot_active() and weights of this dtype and scale layout (bf16, e4m3fn,
// e5m2 without block scales): what one activation row takes the kernel for.
bool bf16_dot_covers(DType w_dtype, ScaleKind scale_kind);
// Rows [n0, n1) of W in w_dtype (bf16, e4m3fn, e5m2) through the dot kernel
// when it applies (bf16_dot_active(), M == 1, no block scales, an x with no
// inf or NaN); false when it does not, and nothing was written. exact_rows
// recomputes rows whose sum is NaN.
bool gemv_rows_dot(DType w_dtype, const GemvArgs& a, int64_t n0, int64_t n1,
                   void (*exact_rows)(const GemvArgs&, int64_t, int64_t));

// The widening kernels' choices that depend on the CPU, made once per process
// from its kind (CpuKind): Intel's were measured on an Ice Lake server core
// and, where they differ, on an Emerald Rapids one; the others are what the
// kernels were tuned with on Zen 3 and Zen 5 (see Tile and RowOrder in
// gemv-inl.h).
struct GemvTuning {
  // The next tile's rows are prefetched into L1 (prefetcht0), else into L2
  // (prefetcht1). Ice Lake: the L2 hint cost 1.03-1.17x against L1 (geomean
  // over 14 decode shapes: FP8, bf16, f32).
  bool prefetch_to_l1;
  // With one activation row, weight rows of at most this many bytes (FP8
  // rows, rows of wider types) are read whole, row_runs far-apart rows at a
  // time (RowsInRuns), not several side by side. Ice Lake, four runs, in an
  // in-process A/B over the 50 decode shapes of kiln bench linear: FP8 rows of
  // 4 KiB 1.01-1.07x faster than six side by side, longer rows 0.93-1.02x;
  // bf16 and f32 rows of 4 KiB 0.92-0.99x. (Two runs: rows of 2-4 KiB had
  // run 1.02-1.19x faster than side by side.)
  int64_t row_runs_max_bytes_fp8, row_runs_max_bytes;
  // How many runs: 2 or 4. Ice Lake, four against two (one row per run, or
  // two for rows up to 1.25 KiB), same A/B: FP8 1.00-1.34x, geomean 1.125
  // (38 shapes), bf16 1.04-1.14x, geomean 1.095 (10), f32 1.11-1.13x (5).
  // Two on Zen, where four were not measured.
  int64_t row_runs;
  // FMAs take float32 denormal operands at full speed (AMD: Zen 3 and Zen 4
  // measured; Intel's cost ~70x): the default E4M3Subnormals mode.
  bool denormal_fma_fast;
  // Each step prefetches every row of its tile this many bytes ahead (past
  // the row's end: the row that continues it in the next tile); 0: the next
  // tile's rows at the same k (Tile in gemv-inl.h). Ice Lake, in-process A/B
  // over the 50 decode shapes of kiln bench linear: 2048 bytes ahead ran
  // 1.044x (FP8: rows of 4 KiB and more 1.10-1.25x, shorter ones 0.98-1.08x),
  // 1.092x (bf16) and 1.075x (f32) the speed of the next-tile prefetch.
  // Emerald Rapids, same A/B (two runs of 25 alternating samples per shape):
  // 1024 bytes ahead 1.036x and 1.046x (bf16), 1.009x and 1.012x (FP8) the
  // speed of 2048; 4096 ahead 0.98x and 0.96x, the next tile 0.94x and 0.98x.
  int64_t prefetch_ahead_bytes;
  // The AVX512-BF16 dot kernel is on by default (bf16_dot) where the CPU has
  // it. Zen 5: 1.15-1.2x the widening kernels. Emerald Rapids, kiln bench
  // linear --exact-too over the 50 decode shapes: 0.91x (bf16) and 0.78x
  // (FP8) of them, so off on Intel.
  bool bf16_dot_by_default;

  // The longest row, in bytes, read in runs for weights of this itemsize.
  int64_t row_runs_max_bytes_for(int64_t itemsize) const {
    return itemsize == 1 ? row_runs_max_bytes_fp8 : row_runs_max_bytes;
  }
};
// Intel: Intel cores without AVX512-BF16 (Ice Lake measured); IntelBf16:
// Intel cores with it (Sapphire and Emerald Rapids; Emerald Rapids measured).
enum class CpuKind { Intel, IntelBf16, Amd, Other };
// The tuning for this kind of core, and the kind of this CPU.
GemvTuning gemv_tuning_for(CpuKind kind);
CpuKind cpu_kind();
// The tuning in force: gemv_tuning_for(cpu_kind()) unless set_gemv_tuning
// changed it. Tests use the setter to run every kind's row order on any
// CPU; it must not race kernels running on other threads.
// (denormal_fma_fast feeds e4m3_subnormals() only when that is first read.)
const GemvTuning& gemv_tuning();
void set_gemv_tuning(const GemvTuning& tuning);

// Per weight type (gemv_<type>.cc): rows [n0, n1) at the best SIMD target.
void gemv_rows_f32(const GemvArgs& a, int64_t n0, int64_t n1);
void gemv_rows_bf16(const GemvArgs& a, int64_t n0, int64_t n1);
void gemv_rows_bf16_exact(const GemvArgs& a, int64_t n0, int64_t n1);  // never the dot kernel
void gemv_rows_f16(const GemvArgs& a, int64_t n0, int64_t n1);
void gemv_rows_e4m3(const GemvArgs& a, int64_t n0, int64_t n1);
void gemv_rows_e4m3_exact(const GemvArgs& a, int64_t n0, int64_t n1);  // never the dot kernel
void gemv_rows_e5m2(const GemvArgs& a, int64_t n0, int64_t n1);
void gemv_rows_e5m2_exact(const GemvArgs& a, int64_t n0, int64_t n1);  // never the dot kernel

}  // namespace kiln::cpu
