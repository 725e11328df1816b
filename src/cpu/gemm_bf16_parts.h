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
// Rows [n0, n1) of y for W of type T (bfloat16, half, float8_e4m3fn, float8_e5m2),
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

// Block scales (ScaleKind::Block) on the units: each 128-k block's sums t
// come from the unit on their own and join c scaled, c = (first ? 0 : c) +
// s * t, as the FMA kernels apply them. The scale of W's row n in k block kb
// (zero past N: padding rows).
inline float block_scale(const GemvArgs& a, int64_t n, int64_t kb) {
  return n < a.N ? a.scale[(n / kScaleBlock) * a.scale_ld + kb] : 0.0f;
}
// c[r][NR] (+)= s(n + r) * t[r][NR], r < rows: rows of c are W's rows.
KILN_BF16_GEMM_TARGET inline void add_block_rows(const GemvArgs& a, float* __restrict c,
                                                 const float* __restrict t, int64_t rows, int64_t NR,
                                                 int64_t n, int64_t kb, bool first) {
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 s = _mm512_set1_ps(block_scale(a, n + r, kb));
    for (int64_t v = r * NR; v < (r + 1) * NR; v += 16) {
      const __m512 o = _mm512_mul_ps(s, _mm512_loadu_ps(t + v));
      _mm512_storeu_ps(c + v, first ? o : _mm512_add_ps(_mm512_loadu_ps(c + v), o));
    }
  }
}
// c[t][32] (+)= s(n + j) * t[t][32] for j < 32, t < 32: columns of c are W's rows.
KILN_BF16_GEMM_TARGET inline void add_block_cols(const GemvArgs& a, float* __restrict c,
                                                 const float* __restrict t, int64_t n, int64_t kb,
                                                 bool first) {
  alignas(64) float sv[32];
  for (int64_t j = 0; j < 32; ++j) sv[j] = block_scale(a, n + j, kb);
  const __m512 s0 = _mm512_load_ps(sv), s1 = _mm512_load_ps(sv + 16);
  for (int64_t v = 0; v < 32 * 32; v += 32) {
    const __m512 o0 = _mm512_mul_ps(s0, _mm512_loadu_ps(t + v)),
                 o1 = _mm512_mul_ps(s1, _mm512_loadu_ps(t + v + 16));
    _mm512_storeu_ps(c + v, first ? o0 : _mm512_add_ps(_mm512_loadu_ps(c + v), o0));
    _mm512_storeu_ps(c + v + 16, first ? o1 : _mm512_add_ps(_mm512_loadu_ps(c + v + 16), o1));
  }
}

// A k-major bf16 W (GemvArgs::w_kmajor): v[i] = the 16 pairs (W(n + c, k0 +
// 2i), W(n + c, k0 + 2i + 1)) for c < 16, i < 16; zero for c >= cols and for
// k >= k_end. Two rows of W^T interleaved: tdpbf16ps's B layout as it is, and
// the transpose of its A layout.
KILN_BF16_GEMM_TARGET inline void kmajor_pairs(const GemvArgs& a, int64_t n, int64_t cols, int64_t k0,
                                               int64_t k_end, __m512i* v) {
  constexpr __mmask16 kAll = 0xFFFF;
  const __mmask16 cm = __mmask16(cols >= 16 ? 0xFFFF : (1u << cols) - 1u);
  const uint16_t* w = static_cast<const uint16_t*>(a.w) + n;
  for (int64_t i = 0; i < 16; ++i) {
    const int64_t k = k0 + 2 * i;
    const __m256i e = k < k_end ? _mm256_maskz_loadu_epi16(cm, w + k * a.ldw) : _mm256_setzero_si256();
    const __m256i o =
        k + 1 < k_end ? _mm256_maskz_loadu_epi16(cm, w + (k + 1) * a.ldw) : _mm256_setzero_si256();
    v[i] = _mm512_or_si512(_mm512_maskz_cvtepu16_epi32(kAll, e),
                           _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, o), 16));
  }
}

// 32 f16 weights (w0 the first 16) as two bf16 vectors whose sum is each
// weight exactly: hi its float32 value cut to bf16's 8 significant bits, lo
// = w - hi (an f16 has 11 significant bits, so lo's at most 3 fit bf16; the
// smallest f16 is far above bf16's subnormals, which the units flush). So x
// . hi + x . lo is x . w within float32 accumulation, at twice the products
// of bf16 weights. Infinities keep a zero lo (inf - inf would be NaN); NaN
// stays NaN.
KILN_BF16_GEMM_TARGET inline void f16_hi_lo(__m256i w0, __m256i w1, __m512i& hi, __m512i& lo) {
  // (GCC 12 wants the maskz forms: the plain ones read an uninitialised source.)
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 v0 = _mm512_maskz_cvtph_ps(kAll, w0), v1 = _mm512_maskz_cvtph_ps(kAll, w1);
  const __m512i cut = _mm512_set1_epi32(int(0xFFFF0000u));
  const __m512 h0 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v0), cut));
  const __m512 h1 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v1), cut));
  constexpr int kInf = 0x08 | 0x10;  // fpclass: +inf, -inf
  const __m512 l0 = _mm512_maskz_sub_ps(__mmask16(~_mm512_fpclass_ps_mask(h0, kInf)), v0, h0);
  const __m512 l1 = _mm512_maskz_sub_ps(__mmask16(~_mm512_fpclass_ps_mask(h1, kInf)), v1, h1);
  hi = (__m512i)_mm512_cvtne2ps_pbh(h1, h0);  // exact: both already bf16 values
  lo = (__m512i)_mm512_cvtne2ps_pbh(l1, l0);
}
#endif

}  // namespace kiln::cpu::bf16_gemm_parts
