// Peak multiply-add rates (see compute_roof.h). Each thread runs 24
// independent accumulator chains, enough to cover the latency of every unit
// kiln targets (4-6 cycles at two issues a cycle), unrolled so they stay in
// registers; the operands never change, and an empty asm statement keeps the
// compiler from folding the loop.
#include "bench/compute_roof.h"

#include <algorithm>
#include <chrono>

#include "internal/bench_hooks.h"  // cpu::dispatch_runs_avx3, cpu::AmxTileConfig, amx_bf16_usable
#include "kiln/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_ROOF_X86 1
#endif

namespace kiln::cli::bench {
namespace {

constexpr int kChains = 24;

#ifdef KILN_ROOF_X86
// Each returns the flops of n steps (and folds the sums into sink).
__attribute__((target("avx512f"))) double fma512(int64_t n, float* sink) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t s = 0; s < n; ++s) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(a));
  }
  __m512 t = acc[0];
  for (int i = 1; i < kChains; ++i) t = _mm512_add_ps(t, acc[i]);
  alignas(64) float o[16];
  _mm512_store_ps(o, t);  // (GCC 12 warns inside _mm512_reduce_add_ps)
  for (float v : o) *sink += v;
  return double(n) * kChains * 32;
}
__attribute__((target("avx2,fma"))) double fma256(int64_t n, float* sink) {
  // 16 registers: 12 chains.
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t s = 0; s < n; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(a));
  }
  alignas(32) float o[8];
  __m256 t = acc[0];
  for (int i = 1; i < 12; ++i) t = _mm256_add_ps(t, acc[i]);
  _mm256_store_ps(o, t);
  for (float v : o) *sink += v;
  return double(n) * 12 * 16;
}
__attribute__((target("avx512f,avx512bf16"))) double dpbf16(int64_t n, float* sink) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3400);
  for (int64_t s = 0; s < n; ++s) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(a));
  }
  __m512 t = acc[0];
  for (int i = 1; i < kChains; ++i) t = _mm512_add_ps(t, acc[i]);
  alignas(64) float o[16];
  _mm512_store_ps(o, t);  // (GCC 12 warns inside _mm512_reduce_add_ps)
  for (float v : o) *sink += v;
  return double(n) * kChains * 64;
}
// AMX: six independent tiles of sums (tdpbf16ps's latency is a few times
// its issue interval), the two operand tiles loaded once.
__attribute__((target("amx-tile,amx-bf16"))) double tdpbf16(int64_t n, float* sink) {
  static const cpu::AmxTileConfig config;
  alignas(64) static const uint16_t ones[16 * 32] = {};  // zeros: the sums stay finite
  alignas(64) float out[16 * 16];
  _tile_loadconfig(&config);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  for (int64_t s = 0; s < n; ++s) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  *sink += out[0];
  return double(n) * 6 * 16 * 16 * 32 * 2;
}
#endif

volatile float g_sink;  // the kernels' sums end here, so their loops are not dropped

// GFLOP/s of `kernel` on every thread at once, best of `passes`.
double measure(double (*kernel)(int64_t, float*), int passes) {
  const int threads = num_threads();
  float sink = 0;
  kernel(1 << 14, &sink);  // warm up the unit (AVX-512 clocks settle)
  // Steps for ~20 ms, from one short timed run.
  auto t0 = std::chrono::steady_clock::now();
  kernel(1 << 16, &sink);
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t steps = std::max<int64_t>(1 << 16, int64_t(double(1 << 16) * 0.02 / std::max(dt, 1e-6)));
  const double flops = kernel(steps, &sink) * threads;  // also the first pass's warm-up
  g_sink = sink;
  double best = 0;
  for (int p = 0; p < passes; ++p) {
    t0 = std::chrono::steady_clock::now();
    parallel_for(0, threads, 1, [&](int64_t b, int64_t e) {
      float s = 0;
      for (int64_t i = b; i < e; ++i) kernel(steps, &s);
      g_sink = s;
    });
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, flops / dt / 1e9);
  }
  return best;
}

}  // namespace

ComputeRoof measure_compute_roof(int passes) {
  ComputeRoof r;
  r.threads = num_threads();
#ifdef KILN_ROOF_X86
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && cpu::dispatch_runs_avx3();
  if (avx512)
    r.fma_f32_gflops = measure(fma512, passes);
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    r.fma_f32_gflops = measure(fma256, passes);
  if (avx512 && __builtin_cpu_supports("avx512bf16")) r.bf16_dot_gflops = measure(dpbf16, passes);
  if (cpu::amx_bf16_usable()) r.amx_bf16_gflops = measure(tdpbf16, passes);
#else
  (void)passes;
#endif
  return r;
}

}  // namespace kiln::cli::bench
