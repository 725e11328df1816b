// Dispatch of the matrix-vector kernels by weight dtype, the split over N
// across the thread pool, and the double-precision reference.
#include "cpu/gemv.h"

#include <hwy/highway.h>

#include <algorithm>
#include <string>

#include "kiln/error.h"
#include "kiln/float_types.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {

void gemv_rows(DType w_dtype, const GemvArgs& a, int64_t n0, int64_t n1) {
  if (n1 <= n0 || a.M <= 0) return;
  switch (w_dtype) {
    case DType::Float32:
      return gemv_rows_f32(a, n0, n1);
    case DType::BFloat16:
      return gemv_rows_bf16(a, n0, n1);
    case DType::Float16:
      return gemv_rows_f16(a, n0, n1);
    case DType::Float8_e4m3fn:
      return gemv_rows_e4m3(a, n0, n1);
    case DType::Float8_e5m2:
      return gemv_rows_e5m2(a, n0, n1);
    default:
      throw TypeError(std::string("[gemv] unsupported weight dtype ") + name(w_dtype));
  }
}

GemvTuning gemv_tuning_for(CpuKind kind) {
  // Zen 3 / Zen 5 (and CPUs not measured): FP8 rows of exactly 2 KiB ran
  // 0.7-0.8x as two runs on Zen 5, bf16 rows of 2 KiB 1.15-1.5x (gemv-inl.h,
  // RowOrder); denormal FMAs are fast on Zen 3 and Zen 4, older AMD cores
  // assumed alike.
  GemvTuning t{false, 2047, 2048, 2, false, 0, true};
  if (kind == CpuKind::Intel || kind == CpuKind::IntelBf16) t = {true, 4096, 4095, 4, false, 2048, false};
  if (kind == CpuKind::IntelBf16) t.prefetch_ahead_bytes = 1024;  // Emerald Rapids
  if (kind == CpuKind::Amd) t.denormal_fma_fast = true;
  return t;
}

bool dispatch_runs_avx3() {
  // Decided once: asked per GEMV call, hwy::SupportedTargets()'s CPUID (libhwy
  // 1.0) took 30% of a MoE decode step on a Zen 5 VM. KILN_SIMD_TARGET's cap
  // is applied at start-up (convert.cc), before this first runs.
  static const bool avx3 = [] {
    // The best target run-time dispatch may use: lower bits are better
    // targets, and every AVX3 flavour is at or below HWY_AVX3.
    const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
    return (targets & -targets) <= int64_t(HWY_AVX3);
  }();
  return avx3;
}

CpuKind cpu_kind() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  if (__builtin_cpu_is("intel"))
    return __builtin_cpu_supports("avx512bf16") ? CpuKind::IntelBf16 : CpuKind::Intel;
  if (__builtin_cpu_is("amd")) return CpuKind::Amd;
#endif
  return CpuKind::Other;
}

namespace {
GemvTuning& tuning_in_force() {
  static GemvTuning t = gemv_tuning_for(cpu_kind());
  return t;
}
}  // namespace

const GemvTuning& gemv_tuning() { return tuning_in_force(); }
void set_gemv_tuning(const GemvTuning& tuning) { tuning_in_force() = tuning; }

void gemv(DType w_dtype, const GemvArgs& a) {
  if (a.N <= 0 || a.M <= 0) return;
  // Chunks of at least ~256 KiB of weights, so a hand-off to another thread
  // pays for itself; boundaries on multiples of 8 rows (the kernel's row group)
  // and, for block scales, not needed: the kernel handles any row range.
  const int64_t row_bytes = std::max<int64_t>(1, a.K * int64_t(itemsize(w_dtype)));
  const int64_t grain_rows = std::max<int64_t>(8, (int64_t(32) << 10) / row_bytes);
  const int64_t groups = (a.N + 7) / 8;
  parallel_for(0, groups, std::max<int64_t>(1, grain_rows / 8),
               [&](int64_t g0, int64_t g1) { gemv_rows(w_dtype, a, g0 * 8, std::min(a.N, g1 * 8)); });
}

namespace {
double weight_at(DType d, const void* w, int64_t i) {
  switch (d) {
    case DType::Float32:
      return static_cast<const float*>(w)[i];
    case DType::BFloat16:
      return float(static_cast<const bfloat16*>(w)[i]);
    case DType::Float16:
      return float(static_cast<const half*>(w)[i]);
    case DType::Float8_e4m3fn:
      return float(static_cast<const float8_e4m3fn*>(w)[i]);
    case DType::Float8_e5m2:
      return float(static_cast<const float8_e5m2*>(w)[i]);
    default:
      throw TypeError(std::string("[gemv] unsupported weight dtype ") + name(d));
  }
}
}  // namespace

void gemv_reference(DType w_dtype, const GemvArgs& a) {
  for (int64_t m = 0; m < a.M; ++m)
    for (int64_t n = 0; n < a.N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < a.K; ++k) {
        double sc = 1.0;
        switch (a.scale_kind) {
          case ScaleKind::Tensor:
            sc = a.scale[0];
            break;
          case ScaleKind::Row:
            sc = a.scale[n];
            break;
          case ScaleKind::Block:
            sc = a.scale[(n / kScaleBlock) * a.scale_ld + k / kScaleBlock];
            break;
          case ScaleKind::None:
            break;
        }
        s += weight_at(w_dtype, a.w, n * a.ldw + k) * sc * double(a.x[m * a.ldx + k]);
      }
      if (a.bias) s += a.bias[n];
      char* row = static_cast<char*>(a.y) + m * a.ldy * int64_t(itemsize(a.y_dtype));
      switch (a.y_dtype) {
        case DType::BFloat16:
          reinterpret_cast<uint16_t*>(row)[n] = float_to_bf16_bits(float(s));
          break;
        case DType::Float16:
          reinterpret_cast<uint16_t*>(row)[n] = float_to_f16_bits(float(s));
          break;
        default: {
          float* o = reinterpret_cast<float*>(row) + n;
          *o = a.accumulate ? float(*o + s) : float(s);
        }
      }
    }
}

}  // namespace kiln::cpu
