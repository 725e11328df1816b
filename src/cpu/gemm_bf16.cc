// The packed GEMM on AVX512-BF16 or AMX-BF16 (see gemm.h, bf16_gemm): y[M, N]
// = bf16(x)[M, K] @ (W * scale)^T + bias for bf16, e4m3fn and e5m2 weights
// with no scale or a tensor or row scale. It needs AVX512-VBMI too, for the
// FP8 byte tables (fp8_bf16_x86.h): every CPU with AMX has it, and so do Zen
// 4 and 5; Cooper Lake, which lacks it, keeps the FMA path.
//
// vdpbf16ps multiplies 32 pairs of bf16 and adds each pair's two products
// into one of 16 float32 lanes: 64 flops an instruction against an FMA's 32,
// and a Zen 5 core issues two of either a cycle (1.83x the FMA peak, measured
// by `kiln bench linear`'s compute roof). AMX's tdpbf16ps does the same for
// a 16 x 16 tile of sums from a 16 x 32 and a 32 x 16 tile of bf16: 16384
// flops an instruction, ~14x a Sapphire Rapids-class core's FMA peak. The
// products of two bf16 values are exact in float32, and the sums are float32
// sums, so the only rounding beyond float32 accumulation is x's own: x is
// rounded to bf16 (round to nearest even), off by at most 2^-8 of itself. An
// x that is already bf16 (bf16 activations) is not changed by it. Both units
// read subnormal bf16 inputs as zero and flush subnormal results: x below
// 2^-126 is lost. The units add a pair's products in their own order, so
// their sums may differ in the last bits.
//
// Layout (the same loop nest as gemm_packed.cc):
//   x is packed once (PackX) into token blocks of NR = 16 or 32 tokens,
//     pairs of consecutive k in one uint32, k-pair-major within each block of
//     kKC along K: xp[tb][kb][kp][NR], tokens past M and k past K zero (to
//     whole 16-pair steps). A 16-pair x 16-token slice of it is an AMX tile
//     of x as tdpbf16ps reads it, in place;
//   W's rows are turned into bf16 kNG at a time, one K block at a time, into
//     a panel wp[kNG][kKC / 2] of pairs, without the scale: bf16 rows are
//     copied, FP8 codes widened exactly through byte tables (every e4m3fn and
//     e5m2 value is a bf16 value). On AMX, bf16 rows in whole 32-row tiles
//     of whole 32-k steps are read by the tiles where they lie instead;
//   the AVX-512 micro-kernel broadcasts one weight pair per panel row and
//     multiplies it with MR x NV token vectors; the AMX one keeps 32 rows x
//     NR tokens of sums in tiles. The scale, bias and accumulate are applied
//     as the float32 sums go to y.
// Many tokens on AMX take the operands the other way round (x_by_rows,
// rows_amx_long): x rows as they lie, W packed per panel in tdpbf16ps's
// pair-interleaved B layout, sums in y's own order.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "cpu/amx.h"
#include "cpu/env_switch.h"
#include "cpu/gemm.h"
#include "cpu/gemm_bf16_parts.h"
#include "cpu/gemv_store.h"
#include "kiln/bf16_gemm.h"
#include "kiln/error.h"
#include "kiln/float_types.h"
#include "kiln/thread_pool.h"
#ifdef KILN_BF16_GEMM_X86
#include <immintrin.h>

#include "cpu/fp8_bf16_x86.h"
#include "cpu/transpose_x86.h"
#endif

namespace kiln::cpu {

namespace {
bool cpu_default_bf16_gemm() {
  // AMD: measured on Zen 5 (1.83x the FMA peak). Intel's cores with
  // AVX512-BF16 (Cooper Lake, Sapphire and Emerald Rapids) issue vdpbf16ps on
  // one port and FMAs on two, the same flops a cycle: the rounding of x buys
  // nothing there unless the AMX tiles take the products.
  return cpu_kind() == CpuKind::Amd || amx_tiles_active();
}
EnvSwitch g_bf16_gemm("KILN_BF16_GEMM", cpu_default_bf16_gemm);
}  // namespace

bool bf16_gemm() { return g_bf16_gemm.get(); }

void set_bf16_gemm(bool on) { g_bf16_gemm.set(on); }

#ifdef KILN_BF16_GEMM_X86
namespace {
bool cpu_has_bf16_gemm() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
}
}  // namespace
#endif

bool bf16_gemm_active() {
#ifdef KILN_BF16_GEMM_X86
  // Decided once, after KILN_SIMD_TARGET's cap (see bf16_dot_active).
  static const bool has = cpu_has_bf16_gemm() && dispatch_runs_avx3();
  return has && bf16_gemm();
#else
  return false;
#endif
}

bool bf16_gemm_covers(DType w_dtype, ScaleKind scale_kind) {
  (void)scale_kind;  // every layout: block scales per 128-k block of sums
  return bf16_gemm_active() && (w_dtype == DType::BFloat16 || w_dtype == DType::Float16 ||
                                w_dtype == DType::Float8_e4m3fn || w_dtype == DType::Float8_e5m2);
}

bool bf16_gemm_takes(DType w_dtype, const GemvArgs& a) {
  return !a.x_exact && (!a.w_kmajor || w_dtype == DType::BFloat16) && bf16_gemm_covers(w_dtype, a.scale_kind);
}

#ifdef KILN_BF16_GEMM_X86
namespace {

using namespace bf16_gemm_parts;

constexpr int64_t kKC = 256;  // K per block (kKC / 2 pairs)
constexpr int64_t kKP = kKC / 2;
constexpr int kMR = 12;  // weight rows per micro tile
// The float32 sums of one block of tokens by one panel stay within this many
// bytes (L2): at M = 2048 (4096 x 4096, Zen 5) 1.5 MiB of them ran at 0.92x
// the speed of 512 KiB blocks; 256 KiB and 1 MiB were alike.
constexpr int64_t kCBytes = int64_t(512) << 10;

int64_t token_lanes(int64_t M) { return M <= 16 ? 16 : 32; }
int64_t k_blocks(int64_t K) { return (K + kKC - 1) / kKC; }

// blk[kp][NR] = the bf16 pair (x[t, k0 + 2kp], x[t, k0 + 2kp + 1]) of token
// t0 + t for t < tn, zero past them and past kc: one K block of one token
// block. 16 tokens x 32 k at a time: each token's 32 values rounded to 16
// pairs, then a 16 x 16 transpose puts each pair index's 16 tokens in a row.
KILN_BF16_GEMM_TARGET void pack_block(const GemvArgs& a, int64_t t0, int64_t tn, int64_t k0, int64_t kc,
                                      int64_t NR, uint32_t* __restrict blk) {
  for (int64_t tg = 0; tg < NR; tg += 16) {
    for (int64_t j = 0; j < kc; j += 32) {
      const int64_t n = std::min<int64_t>(32, kc - j);
      const __mmask16 m0 = __mmask16(n >= 16 ? 0xFFFF : (1u << n) - 1u);
      const __mmask16 m1 = __mmask16(n >= 32 ? 0xFFFF : n <= 16 ? 0 : (1u << (n - 16)) - 1u);
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        if (tg + i >= tn) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        if (a.x_bf16) {  // already pairs
          r[i] = _mm512_maskz_loadu_epi16(__mmask32(m0) | (__mmask32(m1) << 16),
                                          a.x_bf16 + (t0 + tg + i) * a.ldx + k0 + j);
          continue;
        }
        const float* src = a.x + (t0 + tg + i) * a.ldx + k0 + j;
        const __m512 lo = _mm512_maskz_loadu_ps(m0, src), hi = _mm512_maskz_loadu_ps(m1, src + 16);
        r[i] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      }
      transpose16(r);
      // All 16 pair rows, zero past kp_n: the AMX kernel reads 16 at a time.
      for (int64_t i = 0; i < 16; ++i) _mm512_storeu_si512(blk + (j / 2 + i) * NR + tg, r[i]);
    }
  }
}

// wp[r * ldp + kp] = rows n + r of W, K block [k0, k0 + kc), as bf16 pairs (a
// last odd k paired with zero), r < rows; rows up to rpad zero, and zero
// pairs from kp_n to the next multiple of 16 (the AMX kernel's tile width).
// f16 rows: their hi parts there, their lo parts (f16_hi_lo) at wlo.
template <class T>
KILN_BF16_GEMM_TARGET void widen_panel(const GemvArgs& a, int64_t n, int64_t rows, int64_t rpad, int64_t k0,
                                       int64_t kc, uint32_t* __restrict wp, int64_t ldp = kKP,
                                       uint32_t* __restrict wlo = nullptr) {
  const int64_t kp_pad = (kc + 31) / 32 * 16;
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (a.w_kmajor) {
      for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        const int64_t rn = std::min<int64_t>(16, rows - r0);
        for (int64_t kp0 = 0; kp0 < kp_pad; kp0 += 16) {
          __m512i v[16];
          kmajor_pairs(a, n + r0, rn, k0 + 2 * kp0, k0 + kc, v);
          transpose16(v);  // v[j]: row n + r0 + j's 16 pairs from kp0
          for (int64_t j = 0; j < rn; ++j) _mm512_storeu_si512(wp + (r0 + j) * ldp + kp0, v[j]);
        }
      }
      for (int64_t r = rows; r < rpad; ++r) std::fill(wp + r * ldp, wp + r * ldp + kp_pad, 0u);
      return;
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const T* __restrict src = static_cast<const T*>(a.w) + (n + r) * a.ldw + k0;
    uint16_t* __restrict d = reinterpret_cast<uint16_t*>(wp + r * ldp);
    if constexpr (std::is_same_v<T, half>) {
      uint16_t* __restrict dl = reinterpret_cast<uint16_t*>(wlo + r * ldp);
      for (int64_t j = 0; j < kc; j += 32) {
        const int64_t cnt = std::min<int64_t>(32, kc - j);
        const __mmask32 m = cnt >= 32 ? ~__mmask32(0) : __mmask32((1u << cnt) - 1u);
        __m512i hi, lo;
        f16_hi_lo(_mm256_maskz_loadu_epi16(__mmask16(m), src + j),  // zero past kc
                  _mm256_maskz_loadu_epi16(__mmask16(m >> 16), src + j + 16), hi, lo);
        _mm512_storeu_si512(d + j, hi);
        _mm512_storeu_si512(dl + j, lo);
      }
    } else if constexpr (std::is_same_v<T, bfloat16>) {
      for (int64_t j = 0; j < kc; j += 32) {
        const int64_t cnt = std::min<int64_t>(32, kc - j);
        const __mmask32 m = cnt >= 32 ? ~__mmask32(0) : __mmask32((1u << cnt) - 1u);
        _mm512_storeu_si512(d + j, _mm512_maskz_loadu_epi16(m, src + j));  // zero past kc
      }
    } else {
      const typename Fp8ToBf16<T>::State st = Fp8ToBf16<T>::start();
      for (int64_t j = 0; j < kc; j += 64) {
        const int64_t cnt = std::min<int64_t>(64, kc - j);
        const __mmask64 m = cnt >= 64 ? ~__mmask64(0) : (__mmask64(1) << cnt) - 1u;
        __m512i v[2];
        Fp8ToBf16<T>::ordered(st, _mm512_maskz_loadu_epi8(m, src + j), v);  // code 0 (+0) past kc
        _mm512_storeu_si512(d + j, v[0]);
        if (cnt > 32) _mm512_storeu_si512(d + j + 32, v[1]);
      }
    }
  }
  for (int64_t r = rows; r < rpad; ++r) {
    std::fill(wp + r * ldp, wp + r * ldp + kp_pad, 0u);
    if (wlo) std::fill(wlo + r * ldp, wlo + r * ldp + kp_pad, 0u);
  }
}

// tile[r][NR] (+)= sum over pairs kp < kp_n of wp[r][kp] . xb[kp][NR], r < MR.
template <int MR, int NV>
KILN_BF16_GEMM_TARGET inline void micro(const uint32_t* __restrict wp, const uint32_t* __restrict xb,
                                        int64_t kp_n, bool first, float* __restrict tile) {
  constexpr int64_t NR = NV * 16;
  __m512 acc[MR * NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r * NV + v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(tile + r * NR + v * 16);
  for (int64_t kp = 0; kp < kp_n; ++kp) {
    __m512bh xv[NV];
    for (int v = 0; v < NV; ++v) xv[v] = (__m512bh)_mm512_loadu_si512(xb + kp * NR + v * 16);
    for (int r = 0; r < MR; ++r) {
      const __m512bh w = (__m512bh)_mm512_set1_epi32(int(wp[r * kKP + kp]));
      for (int v = 0; v < NV; ++v) acc[r * NV + v] = _mm512_dpbf16_ps(acc[r * NV + v], w, xv[v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(tile + r * NR + v * 16, acc[r * NV + v]);
}

// Where a micro call's weight rows from panel row r0 start, and the bytes
// between them: rows below rw are bf16 rows of W read in place (from row ng,
// column k0), the others the widened panel wp's (its row 0 is panel row rw,
// ldp words apart).
template <class T>
std::pair<const char*, int64_t> amx_slice(const GemvArgs& a, int64_t ng, int64_t k0, int64_t r0, int64_t rw,
                                          const uint32_t* wp, int64_t ldp) {
  if (r0 < rw)
    return {reinterpret_cast<const char*>(static_cast<const T*>(a.w) + (ng + r0) * a.ldw + k0),
            a.ldw * int64_t(sizeof(T))};
  return {reinterpret_cast<const char*>(wp + (r0 - rw) * ldp), ldp * 4};
}

// y[m0 + t, ng + r] (+)= c[t / NR][r][t % NR] * scale(ng + r) + bias, t < mc,
// r < rows: 16 x 16 blocks transposed in registers, the row tails masked;
// a bf16 or f16 y (never accumulated) rounded to nearest even.
KILN_BF16_GEMM_TARGET void store_panel(const GemvArgs& a, const float* __restrict c, int64_t NR, int64_t m0,
                                       int64_t mc, int64_t ng, int64_t rows) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t rn = std::min<int64_t>(16, rows - r0);
    const __mmask16 rm = __mmask16(rn >= 16 ? 0xFFFF : (1u << rn) - 1u);
    alignas(64) float sc[16] = {}, bs[16] = {};
    for (int64_t r = 0; r < rn; ++r) {
      sc[r] = gemv_store::row_scale(a, ng + r0 + r);
      bs[r] = a.bias ? a.bias[ng + r0 + r] : 0.0f;
    }
    const __m512 scv = _mm512_load_ps(sc), bsv = _mm512_load_ps(bs);
    for (int64_t t0 = 0; t0 < mc; t0 += 16) {
      // c's tile rows r0.. hold 16 tokens from t0 (NR is 16 or 32: a token
      // group never straddles two blocks).
      const float* src = c + ((t0 / NR) * kNG + r0) * NR + t0 % NR;
      __m512i v[16];
      for (int64_t r = 0; r < 16; ++r)
        v[r] = r < rn ? _mm512_castps_si512(_mm512_loadu_ps(src + r * NR)) : _mm512_setzero_si512();
      transpose16(v);
      const int64_t tn = std::min<int64_t>(16, mc - t0);
      for (int64_t t = 0; t < tn; ++t) {
        const int64_t at = (m0 + t0 + t) * a.ldy + ng + r0;
        store_y(a, at, _mm512_fmadd_ps(_mm512_castsi512_ps(v[t]), scv, bsv), rm);
      }
    }
  }
}

// The loop nest (see gemm_packed.cc's Rows): per block of up to ~16 MiB of
// packed x, per panel of kNG weight rows, per K block: widen the panel, then
// every token block times every micro tile of it; the sums go to y after the
// last K block. 16 MiB of x (2048 tokens at K = 4096) keeps each weight
// widened once per call: the copy reads W from memory, ~10% of the time at
// M = 512 when it was done twice (2 MiB blocks), while x is read from the L3
// once per panel.
template <class T, int NV, bool Amx>
KILN_BF16_GEMM_TARGET void rows_nv(const GemvArgs& a, const uint32_t* __restrict xp, int64_t n0, int64_t n1) {
  constexpr int64_t NR = NV * 16;
  constexpr int64_t mr = Amx ? 32 : kMR;  // weight rows per micro tile (kNG is a multiple of both)
  const int64_t kblocks = k_blocks(a.K);
  const int64_t ntb_all = (a.M + NR - 1) / NR;
  const int64_t x_cap = (int64_t(16) << 20) / (4 * kblocks * kKP * NR), c_cap = kCBytes / (4 * kNG * NR);
  const int64_t mc_blocks = std::min(ntb_all, std::max<int64_t>(1, std::min(x_cap, c_cap)));
  // On AMX, up to 128 tokens run each 32-row slice of the panel over every
  // token block, the slice staying in L1; more run each token block over
  // the whole panel, x's block staying in L1 (Sapphire Rapids-class core,
  // 4096 x 4096: 1.13x at 64 tokens, 0.95x at 512 for the slice first).
  const bool slice_outer = Amx && ntb_all * NR <= 128;
  // FP8 rows for up to 64 tokens are widened over all of K at once, row by
  // row, into a panel of ~512 KiB: each row is then one stream that the
  // hardware prefetcher follows, where the K-blocked widen reads 192 rows
  // 256 bytes at a time and waited on memory (4096 x 4096 from memory, 64
  // tokens: 1.35x; 16 tokens: 1.4x; 256 KiB and 1 MiB panels: 0.8x and
  // 0.74x). More tokens reread x once per panel, which the smaller panels
  // make dearer (128 tokens: 0.93x), as does a long K (14336: 0.87x).
  const bool whole_k = Amx && !std::is_same_v<T, bfloat16> && ntb_all * NR <= 64 && a.K <= 4096;
  const int64_t P = whole_k
                        ? std::clamp<int64_t>((int64_t(512) << 10) / (kblocks * kKP * 4) / 32 * 32, 32, kNG)
                        : kNG;  // panel rows
  const int64_t ldp = whole_k ? kblocks * kKP : kKP;
  constexpr bool hi_lo = std::is_same_v<T, half>;  // f16 weights: two bf16 panels
  const bool block = a.scale_kind == ScaleKind::Block;
  thread_local Scratch<uint32_t> wbuf;
  thread_local Scratch<float> cbuf;
  uint32_t* __restrict wp = wbuf.get(size_t(P * ldp * (hi_lo ? 2 : 1)));
  uint32_t* __restrict wlo = hi_lo ? wp + P * ldp : nullptr;
  // Block scales: one 128-k block's sums of one micro tile at a time.
  float* __restrict c = cbuf.get(size_t(mc_blocks * kNG * NR + (block ? mr * NR : 0)));
  float* __restrict tb_sums = c + mc_blocks * kNG * NR;
  for (int64_t tb0 = 0; tb0 < ntb_all; tb0 += mc_blocks) {
    const int64_t ntb = std::min(mc_blocks, ntb_all - tb0);
    const int64_t m0 = tb0 * NR, mc = std::min(ntb * NR, a.M - m0);
    for (int64_t ng = n0; ng < n1; ng += P) {
      const int64_t rows = std::min(P, n1 - ng), rpad = (rows + mr - 1) / mr * mr;
      if (whole_k) widen_panel<T>(a, ng, rows, rpad, 0, a.K, wp, ldp, wlo);
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        const int64_t k0 = kb * kKC, kc = std::min(kKC, a.K - k0), kp_n = (kc + 1) / 2;
        // The tiles read bf16 weights where they lie, in whole 32-row tiles
        // of whole 32-k steps (no copy: 1.25x at 64 tokens); the rows past
        // them (wp from row rw on), other weights and K tails go through the
        // bf16 panel.
        const int64_t rw =
            Amx && std::is_same_v<T, bfloat16> && !a.w_kmajor && kc % 32 == 0 ? rows / 32 * 32 : 0;
        if (!whole_k && rw < rows) widen_panel<T>(a, ng + rw, rows - rw, rpad - rw, k0, kc, wp, kKP, wlo);
        // The next panel's weights, prefetched while this one's tiles run.
        int64_t pn = ng, pk = k0 + kKC;
        if (pk >= a.K) pn += P, pk = 0;
        const int64_t prows = pn < n1 && !a.w_kmajor ? std::min(P, n1 - pn) : 0;  // (rows of W only)
        const int64_t pbytes = std::min(kKC, a.K - pk) * int64_t(sizeof(T));
        auto prefetch_slice = [&](int64_t r0) {
          for (int64_t r = r0; r < std::min<int64_t>(r0 + mr, prows); ++r) {
            const char* p0 =
                reinterpret_cast<const char*>(static_cast<const T*>(a.w) + (pn + r) * a.ldw + pk);
            for (int64_t off = 0; off < pbytes; off += 64) _mm_prefetch(p0 + off, _MM_HINT_T1);
          }
        };
        // out (+)= the micro tile at panel row r0 times token block tb over
        // the pairs [kp0, kp0 + kpn) of this K block (kp0 a multiple of 16).
        auto product = [&](int64_t tb, int64_t r0, int64_t kp0, int64_t kpn, bool first, float* out) {
          const uint32_t* __restrict xk = xp + ((tb0 + tb) * kblocks + kb) * kKP * NR + kp0 * NR;
          const int64_t kw = (whole_k ? kb * kKP : 0) + kp0;  // the panels' column
          if constexpr (Amx) {
            const AmxOperand X{reinterpret_cast<const char*>(xk), NR * 4, 64, 16 * NR * 4};
            const auto [w, ldw] = amx_slice<T>(a, ng, k0 + 2 * kp0, r0, rw, wp + kw, ldp);
            amx_product(NV, {w, ldw, 16 * ldw, 64}, X, (kpn + 15) / 16, first, out);
            if constexpr (hi_lo) {
              const char* l = reinterpret_cast<const char*>(wlo + r0 * ldp + kw);
              amx_product(NV, {l, ldp * 4, 16 * ldp * 4, 64}, X, (kpn + 15) / 16, false, out);
            }
          } else {
            micro<kMR, NV>(wp + r0 * kKP + kp0, xk, kpn, first, out);
            if constexpr (hi_lo) micro<kMR, NV>(wlo + r0 * kKP + kp0, xk, kpn, false, out);
          }
        };
        auto tile = [&](int64_t tb, int64_t r0) {
          float* __restrict ct = c + (tb * kNG + r0) * NR;
          if (!block) return product(tb, r0, 0, kp_n, kb == 0, ct);
          constexpr int64_t kBP = kScaleBlock / 2;  // pairs a scale block
          for (int64_t kp0 = 0; kp0 < kp_n; kp0 += kBP) {
            product(tb, r0, kp0, std::min(kBP, kp_n - kp0), true, tb_sums);
            add_block_rows(a, ct, tb_sums, mr, NR, ng + r0, (k0 + 2 * kp0) / kScaleBlock,
                           kb == 0 && kp0 == 0);
          }
        };
        // After the last K block each token block's sums go to y.
        auto store = [&](int64_t tb) {
          if (kb + 1 == kblocks)
            store_panel(a, c + tb * kNG * NR, NR, m0 + tb * NR, std::min(NR, mc - tb * NR), ng, rows);
        };
        if (slice_outer) {
          for (int64_t r0 = 0; r0 < rpad; r0 += mr) {
            prefetch_slice(r0);
            for (int64_t tb = 0; tb < ntb; ++tb) tile(tb, r0);
          }
          for (int64_t tb = 0; tb < ntb; ++tb) store(tb);
          continue;
        }
        for (int64_t tb = 0; tb < ntb; ++tb) {
          for (int64_t r0 = 0; r0 < rpad; r0 += mr) {
            if (tb == 0) prefetch_slice(r0);
            tile(tb, r0);
          }
          store(tb);  // while the sums are still in L1
        }
      }
    }
  }
}

template <class T>
void rows_for(const GemvArgs& a, const uint32_t* xp, int64_t n0, int64_t n1) {
  const bool narrow = token_lanes(a.M) == 16;
  if (!amx_tiles_active())
    return narrow ? rows_nv<T, 1, false>(a, xp, n0, n1) : rows_nv<T, 2, false>(a, xp, n0, n1);
  amx_begin();
  try {
    // Many tokens: x as the tiles' A operand (see x_by_rows); else the
    // K-blocked loop with W as A.
    if (x_by_rows(a.M, a.K))
      rows_amx_long<T>(a, xp, n0, n1);
    else if (narrow)
      rows_nv<T, 1, true>(a, xp, n0, n1);
    else
      rows_nv<T, 2, true>(a, xp, n0, n1);
  } catch (...) {  // (scratch allocation)
    amx_end();
    throw;
  }
  amx_end();
}

}  // namespace
#endif  // KILN_BF16_GEMM_X86

int64_t gemm_bf16_x_words(int64_t M, int64_t K) {
#ifdef KILN_BF16_GEMM_X86
  if (M <= 0 || K <= 0) return 0;
  // Also bounds x_by_rows's layout: whole 32-k steps within whole K blocks.
  const int64_t NR = token_lanes(M);
  return (M + NR - 1) / NR * NR * k_blocks(K) * kKP;
#else
  (void)M, (void)K;
  return 0;
#endif
}

void gemm_bf16_pack_x(const GemvArgs& a, uint32_t* xp) {
#ifdef KILN_BF16_GEMM_X86
  if (a.M <= 0 || a.K <= 0) return;
  KILN_CHECK(bf16_gemm_active(), NotImplementedError, "[gemm] the AVX512-BF16 GEMM is not active");
  const int64_t NR = token_lanes(a.M), kblocks = k_blocks(a.K), blocks = (a.M + NR - 1) / NR;
  // Blocks of up to 128 KiB of x per hand-off (runs inline when nested).
  const int64_t grain = std::max<int64_t>(1, (int64_t(128) << 10) / std::max<int64_t>(1, 4 * NR * a.K));
  if (x_by_rows(a.M, a.K)) {  // NR = 32
    parallel_for(0, blocks, grain, [&](int64_t b, int64_t e) {
      for (int64_t tb = b; tb < e; ++tb) pack_rows(a, tb, xp + tb * k_steps(a.K) * 32 * 16);
    });
    return;
  }
  parallel_for(0, blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t tb = b; tb < e; ++tb)
      for (int64_t kb = 0; kb < kblocks; ++kb)
        pack_block(a, tb * NR, std::min(NR, a.M - tb * NR), kb * kKC, std::min(kKC, a.K - kb * kKC), NR,
                   xp + (tb * kblocks + kb) * kKP * NR);
  });
#else
  (void)a, (void)xp;
  KILN_CHECK(false, NotImplementedError, "[gemm] the AVX512-BF16 GEMM is not built for this CPU");
#endif
}

void gemm_bf16_rows(DType w_dtype, const GemvArgs& a, const uint32_t* xp, int64_t n0, int64_t n1) {
#ifdef KILN_BF16_GEMM_X86
  KILN_CHECK(bf16_gemm_takes(w_dtype, a), TypeError,
             "[gemm] the AVX512-BF16 GEMM does not take "
                 << name(w_dtype) << " weights with this scale, or an exact float32 x");
  KILN_CHECK(a.y_dtype == DType::Float32 ||
                 (!a.accumulate && (a.y_dtype == DType::BFloat16 || a.y_dtype == DType::Float16)),
             TypeError, "[gemm] y must be float32, or bf16/f16 without accumulate, not " << name(a.y_dtype));
  if (n1 <= n0 || a.M <= 0) return;
  switch (w_dtype) {
    case DType::BFloat16:
      return rows_for<bfloat16>(a, xp, n0, n1);
    case DType::Float16:
      return rows_for<half>(a, xp, n0, n1);
    case DType::Float8_e4m3fn:
      return rows_for<float8_e4m3fn>(a, xp, n0, n1);
    default:
      return rows_for<float8_e5m2>(a, xp, n0, n1);
  }
#else
  (void)w_dtype, (void)a, (void)xp, (void)n0, (void)n1;
  KILN_CHECK(false, NotImplementedError, "[gemm] the AVX512-BF16 GEMM is not built for this CPU");
#endif
}

}  // namespace kiln::cpu

namespace kiln {

void allow_bf16_gemm(bool allow) { cpu::set_bf16_gemm(allow); }
bool bf16_gemm_allowed() { return cpu::bf16_gemm(); }
bool bf16_gemm_active() { return cpu::bf16_gemm_active(); }
void allow_amx_tiles(bool allow) { cpu::set_amx_tiles(allow); }
bool amx_tiles_allowed() { return cpu::amx_tiles(); }
bool amx_tiles_active() { return cpu::amx_tiles_active(); }

}  // namespace kiln
