// The bf16 GEMM (gemm_bf16.cc) for many tokens on AMX tiles.
//
// Many tokens on AMX (rows_amx_long) take the operands the other way round:
// x is the tiles' A operand, 16 tokens' rows of 32 k as they lie, and W the B
// operand, packed per panel. Their sums come out as y's own rows, with no
// transpose on the way in (pack_block) or out (store_panel): 1.2-1.3x at
// 2048 tokens over K = N = 1024 (Sapphire Rapids-class core).
//
// x packed for it: xq[tb][s][t][16] = the bf16 pairs of token 32 tb + t, k in
// [32 s, 32 s + 32): each step's two A tiles lie together (2 KiB), token
// blocks one after another. Tokens past M and k past K are zero.
#include <algorithm>
#include <type_traits>

#include "cpu/amx.h"
#include "cpu/gemm_bf16_parts.h"
#include "cpu/gemv_store.h"
#include "kiln/float_types.h"

#ifdef KILN_BF16_GEMM_X86
#include <immintrin.h>

#include "cpu/fp8_bf16_x86.h"
#include "cpu/transpose_x86.h"

namespace kiln::cpu::bf16_gemm_parts {

namespace {

// The bf16 pairs of W's rows n .. n + 16 (rows past `rows` zero), k in
// [k0, k0 + 32 * nv), one __m512i per row and step: r[v][j] = row j's 16
// pairs of step v (zero past K). f16 rows: one step, r[0] its hi parts and
// r[1] its lo parts (f16_hi_lo).
template <class T, int NVS>
KILN_BF16_GEMM_TARGET void load_w_steps(const GemvArgs& a, int64_t n, int64_t rows, int64_t k0,
                                        __m512i (*r)[16]) {
  for (int64_t j = 0; j < 16; ++j) {
    if (j >= rows) {
      for (int v = 0; v < NVS; ++v) r[v][j] = _mm512_setzero_si512();
      continue;
    }
    const T* src = static_cast<const T*>(a.w) + (n + j) * a.ldw + k0;
    const int64_t cnt = std::clamp<int64_t>(a.K - k0, 0, std::is_same_v<T, half> ? 32 : 32 * NVS);
    if constexpr (std::is_same_v<T, half>) {
      const __mmask32 m = cnt >= 32 ? ~__mmask32(0) : __mmask32((1u << cnt) - 1u);
      f16_hi_lo(_mm256_maskz_loadu_epi16(__mmask16(m), src),
                _mm256_maskz_loadu_epi16(__mmask16(m >> 16), src + 16), r[0][j], r[1][j]);
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      r[0][j] = _mm512_maskz_loadu_epi16(cnt >= 32 ? ~__mmask32(0) : __mmask32((1u << cnt) - 1u), src);
    } else {
      const __mmask64 m = cnt >= 64 ? ~__mmask64(0) : (__mmask64(1) << cnt) - 1u;
      static const typename Fp8ToBf16<T>::State st = Fp8ToBf16<T>::start();
      __m512i v[2];
      Fp8ToBf16<T>::ordered(st, _mm512_maskz_loadu_epi8(m, src), v);
      r[0][j] = v[0];
      r[1][j] = v[1];
    }
  }
}

// The panel of W's rows [n, n + rows) as tdpbf16ps's B operand: wv[g][s][kp]
// [16] = the pairs (W[n + 16 g + c][32 s + 2 kp], ..[+ 1]) for column c, one
// 1 KiB tile per 16 rows and step, groups up to rpad / 16 (rows past `rows`
// zero). Read into registers a row at a time and transposed 16 x 16. f16
// rows: their hi parts in wv, their lo parts in the same layout at wlo.
template <class T>
KILN_BF16_GEMM_TARGET void pack_panel_vnni(const GemvArgs& a, int64_t n, int64_t rows, int64_t rpad,
                                           uint32_t* __restrict wv, uint32_t* __restrict wlo) {
  constexpr bool hi_lo = std::is_same_v<T, half>;
  // Vectors per load: one step of 32 bf16, two of 64 FP8 codes, or a step's
  // hi and lo parts of 32 f16.
  constexpr int NVS = std::is_same_v<T, bfloat16> ? 1 : 2;
  constexpr int64_t adv = hi_lo ? 1 : NVS;  // steps per load
  const int64_t S = k_steps(a.K);
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (a.w_kmajor) {  // the B layout as W^T's rows lie, pairs of rows interleaved
      for (int64_t g = 0; g < rpad / 16; ++g)
        for (int64_t s = 0; s < S; ++s) {
          __m512i v[16];
          kmajor_pairs(a, n + 16 * g, std::max<int64_t>(0, rows - 16 * g), 32 * s, a.K, v);
          uint32_t* __restrict d = wv + (g * S + s) * 256;
          for (int i = 0; i < 16; ++i) _mm512_storeu_si512(d + 16 * i, v[i]);
        }
      return;
    }
  }
  for (int64_t g = 0; g < rpad / 16; ++g)
    for (int64_t s = 0; s < S; s += adv) {
      __m512i r[NVS][16];
      load_w_steps<T, NVS>(a, n + 16 * g, rows - 16 * g, 32 * s, r);
      for (int v = 0; v < NVS && s + v * (1 - hi_lo) < S; ++v) {
        transpose16(r[v]);
        uint32_t* __restrict d = hi_lo ? (v ? wlo : wv) + (g * S + s) * 256 : wv + (g * S + s + v) * 256;
        for (int i = 0; i < 16; ++i) _mm512_storeu_si512(d + 16 * i, r[v][i]);
      }
    }
}

// y[m0 + t, n + c] (+)= c[t][c] * scale(n + c) + bias(n + c), t < mc, c <
// cols (<= 32; sc and bs hold the 32 columns' scales and biases); a bf16 or
// f16 y rounded to nearest even.
KILN_BF16_GEMM_TARGET void store_rows(const GemvArgs& a, const float* __restrict c, int64_t m0, int64_t mc,
                                      int64_t n, int64_t cols, const float* sc, const float* bs) {
  for (int64_t h = 0; h < std::min<int64_t>(cols, 32); h += 16) {
    const int64_t cn = std::min<int64_t>(16, cols - h);
    const __mmask16 cm = __mmask16(cn >= 16 ? 0xFFFF : (1u << cn) - 1u);
    const __m512 scv = _mm512_loadu_ps(sc + h), bsv = _mm512_loadu_ps(bs + h);
    for (int64_t t = 0; t < mc; ++t) {
      const int64_t at = (m0 + t) * a.ldy + n + h;
      store_y(a, at, _mm512_fmadd_ps(_mm512_loadu_ps(c + t * 32 + h), scv, bsv), cm);
    }
  }
}

}  // namespace

// 2048 tokens, 14336 x 4096 ran 1.2x rows_nv's speed, 512 tokens 0.97-1.03x (4096 x 4096)
// and 1.1-1.2x (K = 1024-2048), 256 tokens 0.95x (4096 x 4096). A K of
// 14336 (x's blocks 900 KiB, panels of 32 rows) ran 0.4x: such K stay in
// rows_nv, which blocks K.
bool x_by_rows(int64_t M, int64_t K) {
  return amx_tiles_active() && ((M >= 512 && K <= 8192) || (M > 128 && K <= 2048));
}

KILN_BF16_GEMM_TARGET void pack_rows(const GemvArgs& a, int64_t tb, uint32_t* __restrict xq) {
  const int64_t S = k_steps(a.K), t0 = tb * 32, tn = std::min<int64_t>(32, a.M - t0);
  for (int64_t t = 0; t < 32; ++t) {
    uint32_t* __restrict d = xq + t * 16;
    for (int64_t s = 0; s < S; ++s, d += 32 * 16) {
      const int64_t n = t < tn ? std::min<int64_t>(32, a.K - 32 * s) : 0;
      const __mmask16 m0 = __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1u);
      const __mmask16 m1 = __mmask16(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1u);
      __m512i r;
      if (a.x_bf16) {
        r = _mm512_maskz_loadu_epi16(__mmask32(m0) | (__mmask32(m1) << 16),
                                     a.x_bf16 + (t0 + std::min(t, tn - 1)) * a.ldx + 32 * s);
      } else {
        const float* src = a.x + (t0 + std::min(t, tn - 1)) * a.ldx + 32 * s;
        r = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, src + 16), _mm512_maskz_loadu_ps(m0, src));
      }
      _mm512_storeu_si512(d, r);
    }
  }
}

// Per panel of about 1 MiB of packed weights (in L2), per token block of 32:
// every 32-row column pair's 32 x 32 sums over K, in passes of KS steps, then
// to y once. The next token block's x is prefetched into L2 meanwhile.
template <class T>
KILN_BF16_GEMM_TARGET void rows_amx_long(const GemvArgs& a, const uint32_t* __restrict xq, int64_t n0,
                                         int64_t n1) {
  const int64_t S = k_steps(a.K), ntb = (a.M + 31) / 32;
  constexpr bool hi_lo = std::is_same_v<T, half>;  // f16 weights: two bf16 panels
  constexpr int64_t panels = hi_lo ? 2 : 1;
  const bool block = a.scale_kind == ScaleKind::Block;
  // About 1 MiB of panel: 512 KiB ran 0.90x and 1.5 MiB 0.93x the speed
  // (4096 x 4096, 2048 tokens).
  const int64_t R = std::clamp<int64_t>((int64_t(1) << 20) / (S * 64 * panels) / 32 * 32, 32, kNG);
  // Steps of K per pass over the panel's column pairs: x's 16 KiB of them
  // stay in L1 while each pair's tiles of W stream from L2, the pairs' sums
  // waiting in c (L1) between passes. Sums in the tiles over all of K read
  // both operands from L2 and ran 0.84x (2048 tokens, 1024 x 1024; 4 and 16
  // steps: 0.89x and 0.82x).
  // Block scales: passes of one 128-k scale block, its sums in t, then
  // scaled into c.
  const int64_t KS = block ? kScaleBlock / 32 : 8;
  thread_local Scratch<uint32_t> wbuf;
  thread_local Scratch<float> cbuf;
  uint32_t* __restrict wv = wbuf.get(size_t(R * S * 16 * panels));
  uint32_t* __restrict wlo = hi_lo ? wv + R * S * 16 : nullptr;
  float* __restrict c = cbuf.get(size_t(R * 32 + 2 * kNG + 1024));
  float *sc = c + R * 32, *bs = sc + kNG, *t = bs + kNG;
  const int64_t xbytes = S * 2048;  // one token block of xq
  for (int64_t ng = n0; ng < n1; ng += R) {
    const int64_t rows = std::min(R, n1 - ng), rpad = (rows + 31) / 32 * 32;
    pack_panel_vnni<T>(a, ng, rows, rpad, wv, wlo);
    for (int64_t r = 0; r < rpad; ++r) {
      sc[r] = r < rows ? gemv_store::row_scale(a, ng + r) : 0.0f;
      bs[r] = r < rows && a.bias ? a.bias[ng + r] : 0.0f;
    }
    const int64_t pairs = rpad / 32, lps = (xbytes / 64 + pairs * S - 1) / (pairs * S);
    for (int64_t tb = 0; tb < ntb; ++tb) {
      const char* xk = reinterpret_cast<const char*>(xq) + tb * xbytes;
      const char* nx = tb + 1 < ntb ? xk + xbytes : nullptr;
      const int64_t m0 = tb * 32, mc = std::min<int64_t>(32, a.M - m0);
      for (int64_t s0 = 0; s0 < S; s0 += KS) {
        const int64_t steps = std::min(KS, S - s0);
        for (int64_t p = 0; p < pairs; ++p) {
          const int64_t done = (s0 * pairs + p * steps) * lps * 64;
          const char* pf = nx ? nx + done : nullptr;
          const int64_t pl = nx ? std::clamp<int64_t>((xbytes - done) / 64 / steps, 0, lps) : 0;
          const AmxOperand X{xk + s0 * 2048, 64, 1024, 2048};
          float* out = block ? t : c + p * 1024;
          const char* w = reinterpret_cast<const char*>(wv + (2 * p * S + s0) * 256);
          amx_product(2, X, {w, 64, S * 1024, 1024}, steps, block || s0 == 0, out, pf, pl);
          if constexpr (hi_lo) {
            const char* l = reinterpret_cast<const char*>(wlo + (2 * p * S + s0) * 256);
            amx_product(2, X, {l, 64, S * 1024, 1024}, steps, false, out);
          }
          if (block) add_block_cols(a, c + p * 1024, t, ng + 32 * p, s0 * 32 / kScaleBlock, s0 == 0);
        }
      }
      for (int64_t p = 0; p < pairs; ++p)
        store_rows(a, c + p * 1024, m0, mc, ng + 32 * p, std::min<int64_t>(32, rows - 32 * p), sc + 32 * p,
                   bs + 32 * p);
    }
  }
}

template void rows_amx_long<bfloat16>(const GemvArgs&, const uint32_t*, int64_t, int64_t);
template void rows_amx_long<half>(const GemvArgs&, const uint32_t*, int64_t, int64_t);
template void rows_amx_long<float8_e4m3fn>(const GemvArgs&, const uint32_t*, int64_t, int64_t);
template void rows_amx_long<float8_e5m2>(const GemvArgs&, const uint32_t*, int64_t, int64_t);

}  // namespace kiln::cpu::bf16_gemm_parts

#endif  // KILN_BF16_GEMM_X86
