// What the bf16 GEMM's two files share (gemm_bf16.cc: the K-blocked loop
// and the entry points; gemm_bf16_long.cc: many tokens on AMX with x as the
// tiles' A operand). Private to them.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "cpu/gemv.h"
#include "kiln/dtype.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_BF16_GEMM_X86 1
#define KILN_BF16_GEMM_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi,f16c")))
#endif

namespace kiln::cpu::bf16_gemm_parts {

constexpr int64_t kNG = 192;  // weight rows per panel: a multiple of the micro tiles' rows

// A per-thread buffer, 64-byte aligned: the micro-kernel's loads of the
// panel stay within cache lines.
template <typename T>
struct Scratch {
  T* p = nullptr;
  size_t n = 0;
  ~Scratch() { std::free(p); }
  T* get(size_t need) {
    if (need > n) {
      std::free(p);
      p = static_cast<T*>(std::aligned_alloc(64, (need * sizeof(T) + 63) / 64 * 64));
      if (p == nullptr) throw std::bad_alloc();
      n = need;
    }
    return p;
  }
};

// Whether a product of M tokens over K takes rows_amx_long (x packed by
// pack_rows) rather than the K-blocked loop (x packed by pack_block). Chosen
// by (M, K) alone, so that packing x and the rows agree.
bool x_by_rows(int64_t M, int64_t K);
// 32-k steps along K.
inline int64_t k_steps(int64_t K) { return (K + 31) / 32; }
// Token block tb of x, packed for rows_amx_long at xq (k_steps(K) * 512 words).
void pack_rows(const GemvArgs& a, int64_t tb, uint32_t* xq);
// Rows [n0, n1) of y for W of type T (bfloat16, float8_e4m3fn, float8_e5m2),
// between amx_begin() and amx_end().
template <class T>
void rows_amx_long(const GemvArgs& a, const uint32_t* xq, int64_t n0, int64_t n1);

#ifdef KILN_BF16_GEMM_X86
// y's 16 elements from a.y + at (its dtype's elements), lanes in m, get o:
// added to a float32 y when a.accumulate, else stored; a bf16 or f16 y (never
// accumulated) rounded to nearest even.
KILN_BF16_GEMM_TARGET inline void store_y(const GemvArgs& a, int64_t at, __m512 o, __mmask16 m) {
  if (a.y_dtype == DType::Float32) {
    float* dst = static_cast<float*>(a.y) + at;
    if (a.accumulate) o = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst), o);
    _mm512_mask_storeu_ps(dst, m, o);
  } else {
    const __m256i h = a.y_dtype == DType::BFloat16
                          ? (__m256i)_mm512_cvtneps_pbh(o)
                          : _mm512_maskz_cvtps_ph(0xFFFF, o, _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(a.y) + at, m, h);
  }
}
#endif

}  // namespace kiln::cpu::bf16_gemm_parts
