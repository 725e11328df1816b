// bf16 and FP8 matrix-vector rows with AVX512-BF16's dot-product instruction
// (vdpbf16ps: 32 bf16 pairs multiplied and summed into 16 float32 lanes), for
// one activation row (see gemv.h, bf16_dot). FP8 codes become bf16 (every
// e4m3fn and e5m2 value is a bf16 value, subnormals included) through two
// 128-entry byte tables (vpermi2b, AVX512-VBMI), the sign bit copied over.
//
// Why: on a Zen 5 core a GEMV streaming bf16 rows from memory reads about as
// fast as it issues instructions. Widening (shift, mask, two FMAs per 64
// bytes) read ~15 GB/s per thread against ~27 for one vdpbf16ps per 64 bytes
// (4096 x 2048 rows, one thread; two threads 25 against 36 GB/s).
//
// x is float32, vdpbf16ps takes bf16, so x is split once per call into
// x_hi = bf16(x) and x_lo = bf16(x - x_hi): 16 significant bits, every product
// exact, so each term is off by at most 2^-17 of itself; one dot product per
// part (an x that is all bf16 values has no x_lo and takes one). The
// instruction treats subnormal inputs as zero and flushes subnormal results, so
// terms below 2^-126 (~1.2e-38) are lost. Rows whose sum comes out NaN are
// recomputed by the exact kernel: an infinite weight times an x_lo of zero
// gives NaN where the true sum is infinite. An x with inf or NaN goes to the
// exact kernel whole.
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "cpu/env_switch.h"
#include "cpu/gemv.h"
#include "cpu/gemv_store.h"
#include "kiln/float_types.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "cpu/fp8_bf16_x86.h"
#define KILN_BF16_DOT_X86 1
#endif

namespace kiln::cpu {

namespace {
bool cpu_default_bf16_dot() { return gemv_tuning_for(cpu_kind()).bf16_dot_by_default; }
EnvSwitch g_bf16_dot("KILN_BF16_DOT", cpu_default_bf16_dot);

#ifdef KILN_BF16_DOT_X86
#define KILN_BF16_DOT_TARGET KILN_FP8_BF16_TARGET

bool cpu_has_bf16_dot() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
}

// x's parts are reread for every row: beyond 16 KiB (K > 4096 with two
// parts) they contend with the weights for L1, and such rows go two at a time
// (Rows). FP8 rows of every length take this kernel: 1.0-1.25x widening
// for K = 2560-14336 (Zen 5, in-process A/B, two threads).
constexpr int64_t kMaxXBytes = 16 << 10;
// A software prefetch this many bytes ahead in the weight stream: 1.17-1.19x
// the speed without one on a Zen 5 (2 KiB: about the same, 8 KiB: 1.15x).
constexpr int64_t kPrefetchAhead = 4096;

// x[0..K) into xs[0..Kp) (hi) and xs[Kp..2Kp) (lo), Kp = K rounded up to the
// step, zero-padded. Returns 0 when some x is inf or NaN, else the number of
// parts needed (1 when every x_lo is zero).
KILN_BF16_DOT_TARGET int SplitX(const float* x, int64_t K, int64_t Kp, uint16_t* xs) {
  __mmask16 bad = 0, lo_nonzero = 0;
  for (int64_t k = 0; k < Kp; k += 16) {
    const int64_t n = std::clamp<int64_t>(K - k, 0, 16);
    const __mmask16 m = __mmask16((1u << n) - 1u);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + k);
    bad |= _mm512_fpclass_ps_mask(v, 0x99);  // QNaN, +inf, -inf, SNaN
    const __m256bh hi = _mm512_cvtneps_pbh(v);
    // hi widened back to float32 (the maskz forms: GCC 12's plain ones trip
    // its own -Wmaybe-uninitialized).
    const __m512i hi32 = _mm512_maskz_cvtepu16_epi32(0xFFFF, (__m256i)hi);
    const __m512 hi_f = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, hi32, 16));
    const __m512 r = _mm512_sub_ps(v, hi_f);  // exact
    lo_nonzero |= _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + k), (__m256i)hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(xs + Kp + k), (__m256i)_mm512_cvtneps_pbh(r));
  }
  if (bad) return 0;
  return lo_nonzero ? 2 : 1;
}

// The weight loaders: Load turns the 64 bytes at w into kVecs vectors of
// bf16 (kStep weights); x is laid out to match by Arrange.
struct LoadBF16 {
  using T = uint16_t;
  static constexpr int kVecs = 1;
  static constexpr int64_t kStep = 32;
  struct State {};
  KILN_BF16_DOT_TARGET static State Start() { return {}; }
  KILN_BF16_DOT_TARGET static void Load(const State&, __m512i v, __m512bh* out) { out[0] = (__m512bh)v; }
  KILN_BF16_DOT_TARGET static __m512i LoadTail(const T* w, int64_t n) {
    return _mm512_maskz_loadu_epi16(__mmask32((uint64_t(1) << n) - 1u), w);
  }
  KILN_BF16_DOT_TARGET static void Arrange(uint16_t*, int64_t) {}
};
// FP8 codes through the byte tables (fp8_bf16_x86.h), lane-interleaved:
// out[0] holds codes 0-7 of each 16-byte lane, out[1] codes 8-15.
template <class F8>
struct LoadFP8 {
  using T = uint8_t;
  static constexpr int kVecs = 2;
  static constexpr int64_t kStep = 64;
  using State = typename Fp8ToBf16<F8>::State;
  KILN_BF16_DOT_TARGET static State Start() { return Fp8ToBf16<F8>::start(); }
  KILN_BF16_DOT_TARGET static void Load(const State& st, __m512i c, __m512bh* out) {
    __m512i v[2];
    Fp8ToBf16<F8>::lanes(st, c, v);
    out[0] = (__m512bh)v[0];
    out[1] = (__m512bh)v[1];
  }
  KILN_BF16_DOT_TARGET static __m512i LoadTail(const T* w, int64_t n) {
    return _mm512_maskz_loadu_epi8(__mmask64(n == 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1u), w);
  }
  // Each 64-element chunk of x (natural order) into Load's order: the
  // elements 16j + 0..7 of each lane j first, then 16j + 8..15.
  KILN_BF16_DOT_TARGET static void Arrange(uint16_t* xs, int64_t n) {
    alignas(64) uint16_t ia[32], ib[32];
    for (int e = 0; e < 32; ++e) {
      ia[e] = uint16_t(16 * (e / 8) + e % 8);
      ib[e] = uint16_t(ia[e] + 8);
    }
    const __m512i va = _mm512_load_si512(ia), vb = _mm512_load_si512(ib);
    for (int64_t c = 0; c < n; c += 64) {
      const __m512i p0 = _mm512_loadu_si512(xs + c), p1 = _mm512_loadu_si512(xs + c + 32);
      _mm512_storeu_si512(xs + c, _mm512_permutex2var_epi16(p0, va, p1));
      _mm512_storeu_si512(xs + c + 32, _mm512_permutex2var_epi16(p0, vb, p1));
    }
  }
};

// sum_k w_r[k] * (x_hi[k] (+ x_lo[k])) for R rows read side by side, into
// out[0 .. R). Each (row, vector, part) has its own accumulator: a chain of
// two vdpbf16ps per step (FP8's two vectors into one sum) would wait on their
// latency. next[r]: what is read after row r, where its prefetch goes past
// the row's end.
template <class L, int S, int R>
KILN_BF16_DOT_TARGET void RowDot(const typename L::T* const* w, int64_t K, const uint16_t* HWY_RESTRICT xh,
                                 const uint16_t* HWY_RESTRICT xl, const char* const* next, double* out) {
  constexpr int64_t kStep = L::kStep;
  constexpr int V = L::kVecs;
  const int64_t row_bytes = K * int64_t(sizeof(typename L::T));
  const typename L::State st = L::Start();
  // Every loop over acc fully unrolled: GCC keeps an array indexed by a loop
  // variable in memory.
  __m512 acc[R * V * S];
#pragma GCC unroll 8
  for (int i = 0; i < R * V * S; ++i) acc[i] = _mm512_setzero_ps();
  // One loop for whole steps and the tail (no lambda: GCC kept the
  // accumulators of one in memory), the tail's weights past K read as zero
  // (x is zero-padded).
  for (int64_t k = 0; k < K; k += kStep) {
    __m512bh xv[V * S];
#pragma GCC unroll 8
    for (int i = 0; i < V; ++i) {
      xv[i] = (__m512bh)_mm512_loadu_si512(xh + k + 32 * i);
      if constexpr (S == 2) xv[V + i] = (__m512bh)_mm512_loadu_si512(xl + k + 32 * i);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512i v;
      if (HWY_LIKELY(k + kStep <= K)) {
        const int64_t ahead = k * int64_t(sizeof(typename L::T)) + kPrefetchAhead;
        __builtin_prefetch(
            ahead < row_bytes ? reinterpret_cast<const char*>(w[r]) + ahead : next[r] + (ahead - row_bytes),
            0, 3);
        v = _mm512_loadu_si512(w[r] + k);
      } else {
        v = L::LoadTail(w[r] + k, K - k);
      }
      __m512bh wv[V];
      L::Load(st, v, wv);
#pragma GCC unroll 8
      for (int i = 0; i < V; ++i) {
        acc[(r * S) * V + i] = _mm512_dpbf16_ps(acc[(r * S) * V + i], wv[i], xv[i]);
        if constexpr (S == 2)
          acc[(r * S + 1) * V + i] = _mm512_dpbf16_ps(acc[(r * S + 1) * V + i], wv[i], xv[V + i]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int i = 1; i < V * S; ++i) acc[r * V * S] = _mm512_add_ps(acc[r * V * S], acc[r * V * S + i]);
    // The 16 lanes summed in double, as a tree: a serial sum was a chain of
    // 16 dependent adds per row, which rows of 1 KiB or less waited on.
    const __m512 v = acc[r * V * S];
    // (The maskz forms: GCC 12's plain ones trip its own -Wuninitialized.)
    const __m512d d8 = _mm512_add_pd(_mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_extractf32x8_ps(0xFF, v, 0)),
                                     _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_extractf32x8_ps(0xFF, v, 1)));
    const __m256d d4 =
        _mm256_add_pd(_mm512_maskz_extractf64x4_pd(0xF, d8, 0), _mm512_maskz_extractf64x4_pd(0xF, d8, 1));
    const __m128d d2 = _mm_add_pd(_mm256_castpd256_pd128(d4), _mm256_extractf128_pd(d4, 1));
    out[r] = _mm_cvtsd_f64(_mm_add_sd(d2, _mm_unpackhi_pd(d2, d2)));
  }
}

// Row n's output from its dot product (NaN: the exact kernel recomputes it).
inline void Finish(const GemvArgs& a, int64_t n, double dot,
                   void (*exact_rows)(const GemvArgs&, int64_t, int64_t)) {
  if (HWY_UNLIKELY(std::isnan(dot))) return exact_rows(a, n, n + 1);
  const float b = a.bias ? a.bias[n] : 0.0f;
  gemv_store::store_out(a, 0, n, float(dot * double(gemv_store::row_scale(a, n)) + double(b)));
}

// Rows [n0, n1) in address order: one at a time (one read stream per thread
// read fastest: see the file comment), or, with two_runs, row n0 + i beside
// row n0 + h + i (h: half the range), which shares each load of x's parts
// between two rows: for x's parts beyond L1 (K > 4096) 1.10-1.18x the
// widening kernel on bf16 rows, where one row at a time read 0.6-0.9x (and
// blocks of K over all rows, to keep x in L1, 0.8x).
template <class L, int S>
void Rows(const GemvArgs& a, const uint16_t* xh, const uint16_t* xl, int64_t n0, int64_t n1, bool two_runs,
          void (*exact_rows)(const GemvArgs&, int64_t, int64_t)) {
  using T = typename L::T;
  const T* w = static_cast<const T*>(a.w);
  const auto row = [&](int64_t n) { return w + n * a.ldw; };
  // Where row n's prefetch goes past its end: the next row, or (the last
  // row of the range) the row itself, not past the rows it may read.
  const auto after = [&](int64_t n) { return reinterpret_cast<const char*>(row(n + 1 < n1 ? n + 1 : n)); };
  int64_t n = n0;
  if (two_runs) {
    const int64_t h = (n1 - n0) / 2;
    for (int64_t i = 0; i < h; ++i) {
      const T* rows[2] = {row(n0 + i), row(n0 + h + i)};
      const char* next[2] = {after(n0 + i), after(n0 + h + i)};
      double dot[2];
      RowDot<L, S, 2>(rows, a.K, xh, xl, next, dot);
      Finish(a, n0 + i, dot[0], exact_rows);
      Finish(a, n0 + h + i, dot[1], exact_rows);
    }
    n = n0 + 2 * h;
  }
  for (; n < n1; ++n) {
    const T* rows[1] = {row(n)};
    const char* next[1] = {after(n)};
    double dot;
    RowDot<L, S, 1>(rows, a.K, xh, xl, next, &dot);
    Finish(a, n, dot, exact_rows);
  }
}
#endif  // KILN_BF16_DOT_X86
}  // namespace

bool bf16_dot() { return g_bf16_dot.get(); }

void set_bf16_dot(bool on) { g_bf16_dot.set(on); }

bool bf16_dot_active() {
#ifdef KILN_BF16_DOT_X86
  // Decided once (dispatch_runs_avx3).
  static const bool has = cpu_has_bf16_dot() && dispatch_runs_avx3();
  return has && bf16_dot();
#else
  return false;
#endif
}

#ifdef KILN_BF16_DOT_X86
namespace {
template <class L>
bool RowsWith(const GemvArgs& a, int64_t n0, int64_t n1,
              void (*exact_rows)(const GemvArgs&, int64_t, int64_t)) {
  const int64_t Kp = (a.K + L::kStep - 1) / L::kStep * L::kStep;
  thread_local std::vector<uint16_t> xs;
  if (xs.size() < size_t(2 * Kp)) xs.resize(size_t(2 * Kp));
  const int parts = SplitX(a.x, a.K, Kp, xs.data());
  if (parts == 0) return false;
  const bool two_runs = parts * Kp * 2 > kMaxXBytes;
  L::Arrange(xs.data(), Kp);
  if (parts == 1) {
    Rows<L, 1>(a, xs.data(), nullptr, n0, n1, two_runs, exact_rows);
  } else {
    L::Arrange(xs.data() + Kp, Kp);
    Rows<L, 2>(a, xs.data(), xs.data() + Kp, n0, n1, two_runs, exact_rows);
  }
  return true;
}
}  // namespace
#endif

bool bf16_dot_covers(DType w_dtype, ScaleKind scale_kind) {
  return bf16_dot_active() && scale_kind != ScaleKind::Block &&
         (w_dtype == DType::BFloat16 || w_dtype == DType::Float8_e4m3fn || w_dtype == DType::Float8_e5m2);
}

bool gemv_rows_dot(DType w_dtype, const GemvArgs& a, int64_t n0, int64_t n1,
                   void (*exact_rows)(const GemvArgs&, int64_t, int64_t)) {
#ifdef KILN_BF16_DOT_X86
  if (a.M != 1 || a.K == 0 || !bf16_dot_covers(w_dtype, a.scale_kind)) return false;
  switch (w_dtype) {
    case DType::BFloat16:
      return RowsWith<LoadBF16>(a, n0, n1, exact_rows);
    case DType::Float8_e4m3fn:
      return RowsWith<LoadFP8<float8_e4m3fn> >(a, n0, n1, exact_rows);
    case DType::Float8_e5m2:
      return RowsWith<LoadFP8<float8_e5m2> >(a, n0, n1, exact_rows);
    default:
      return false;
  }
#else
  (void)w_dtype, (void)a, (void)n0, (void)n1, (void)exact_rows;
  return false;
#endif
}

}  // namespace kiln::cpu
