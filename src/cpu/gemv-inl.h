// The SIMD body of the matrix-vector kernels (see gemv.h), compiled once per
// Highway target by each gemv_<type>.cc. A tile is R weight rows x MT
// activation rows: every widened weight vector is used MT times and every
// activation vector R times, with R * MT independent FMA chains.
//
// The weights are widened to f32 in registers by the loaders of
// gemv_widen-inl.h.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_GEMV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_GEMV_INL_H_
#undef KILN_CPU_GEMV_INL_H_
#else
#define KILN_CPU_GEMV_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/gemv.h"
#include "cpu/gemv_store.h"
#include "cpu/gemv_widen-inl.h"
#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace gemv {

// A read prefetch of a line used a whole tile later: into L2 (prefetcht1),
// or into L1 (prefetcht0) where gemv_tuning() says so.
HWY_INLINE void PrefetchAhead(const void* p, bool to_l1) {
#if defined(__GNUC__) || defined(__clang__)
  if (to_l1)
    __builtin_prefetch(p, 0, 3);
  else
    __builtin_prefetch(p, 0, 2);
#else
  (void)p;
  (void)to_l1;
#endif
}

using gemv_store::row_scale;
using gemv_store::store_out;

// GemvArgs as the tiles see them. For the listed-subnormal loader: the terms
// of the listed codes that the vector part reads as zero, per output,
// listed[(n - listed_n0) * M + m], scaled like the vector sums (ListedTerms).
struct TileArgs : GemvArgs {
  explicit TileArgs(const GemvArgs& g) : GemvArgs(g) {}
  const double* listed = nullptr;
  int64_t listed_n0 = 0;
};

// The listed subnormal codes of rows [n0, n1) (GemvArgs::sub_row_start) that
// fall in the vector part of a tile reading CL codes per step (those in a K
// tail are added there), summed per output in double from x's exact values:
// one pass in list order, so no branch depends on where the codes are.
// (e4m3 only: the one loader that lists its subnormal codes.)
template <class W>
const double* ListedTerms(const GemvArgs& a, int64_t n0, int64_t n1, int64_t CL) {
  thread_local std::vector<double> buf;
  const size_t size = size_t((n1 - n0) * a.M);
  if (buf.size() < size) buf.resize(size);
  double* HWY_RESTRICT t = buf.data();
  std::fill_n(t, size, 0.0);
  const int64_t K = a.K, kv = K / CL * CL;
  const bool block = a.scale_kind == ScaleKind::Block;
  for (int64_t j = a.sub_row_start[n0]; j < a.sub_row_start[n1]; ++j) {
    const int64_t n = a.sub_row[j], k = a.sub_col[j];
    // With block scales each 128-code block ends in its own tail (128 is a
    // multiple of CL, so only the last block can have one).
    if (k >= kv) continue;
    // The code from the list: W's cold lines would cost a miss each.
    double wv = double(e4m3fn_bits_to_float(a.sub_code[j]));
    if (block) wv *= ExactDouble(a.scale[(n / kScaleBlock) * a.scale_ld + k / kScaleBlock]);
    for (int64_t m = 0; m < a.M; ++m) t[(n - n0) * a.M + m] += wv * ExactDouble(a.x[m * a.ldx + k]);
  }
  return t;
}

// Full unrolling of the loops over a tile's rows and accumulators: an
// accumulator array indexed by a run-time loop variable anywhere in Tile is
// kept in memory by the compiler, and every FMA then round-trips the stack
// (measured: the tiny-float FP8 tile ran at ~1.3 instructions per cycle).
#define KILN_UNROLL _Pragma("GCC unroll 64")

// The exact scalar terms of the codes flagged in `sub` (bit j: weight k + j)
// of one weight row, into tail[0 .. MT).
template <class W, int MT>
HWY_NOINLINE void AddFlaggedTerms(const typename W::T* HWY_RESTRICT wr, int64_t k, uint64_t sub,
                                  const float* HWY_RESTRICT const* x, float* HWY_RESTRICT tail) {
  for (uint64_t b = sub; b != 0; b &= b - 1) {
    const int64_t j = k + __builtin_ctzll(b);
    const float wj = W::One(wr[j]);
    for (int m = 0; m < MT; ++m) tail[m] += wj * x[m][j];
  }
}

// y[m0 .. m0+MT, n0 .. n0+R] for one tile. xp: activations in the loaders'
// chunk order (rows ldxp apart), used for the vector part; a.x for the tail.
// vfac (or null for 1): per activation row, what the vector sums are
// multiplied by to undo the scaling of xp (the tiny-float loader's).
// Weight rows n0 + r % P + (r / P) * rs (r < R): runs of P adjacent rows, rs
// apart (P = R: all R rows adjacent) x activation rows m0 .. m0 + MT.
template <class W, int R, int MT, bool kBlock, int P = R>
HWY_NOINLINE void Tile(const TileArgs& a, const float* HWY_RESTRICT xp, int64_t ldxp, const double* vfac,
                       int64_t n0, int64_t m0, int64_t rs = 1) {
  static_assert(R % P == 0, "runs of P adjacent rows");
  using T = typename W::T;
  constexpr int C = W::kChunk;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t CL = C * L;
  const int64_t K = a.K;
  const T* HWY_RESTRICT w[R];
  KILN_UNROLL
  for (int r = 0; r < R; ++r) w[r] = static_cast<const T*>(a.w) + (n0 + r % P + r / P * rs) * a.ldw;
  const float* HWY_RESTRICT x[MT];
  const float* HWY_RESTRICT xq[MT];
  KILN_UNROLL
  for (int m = 0; m < MT; ++m) {
    x[m] = a.x + (m0 + m) * a.ldx;
    xq[m] = xp + (m0 + m) * ldxp;
  }
  // Rows shorter than a page put several read streams in one 4 KiB page,
  // which the hardware prefetcher follows poorly (FP8 rows of 2-2.5 KiB ran
  // at ~0.6 of the roof, 4 KiB rows at ~1.2): each step also prefetches one
  // line per row. Where gemv_tuning() gives a distance (Intel), that line is
  // the distance ahead in the same row, or past its end in the row that
  // continues it in the next tile. Otherwise it is a line of the next tile's
  // rows, one tile ahead, at k + pf_shift (modulo the row): rows a multiple
  // of 4 KiB apart (bf16 K = 2048, 4096) put the R lines being read in one
  // L1 set, and the R prefetched at the same k evidently land there too and
  // evict them (Zen 3, bf16 rows of 4 KiB, hot: 2x slower); for those rows
  // the prefetch runs half a row (at most 2 KiB) ahead, in other sets.
  // The next tile: each run's P rows after this tile's.
  const int64_t next = P;
  const bool prefetch = n0 + next + (P - 1) + (R / P - 1) * rs < a.N;
  const bool to_l1 = gemv_tuning().prefetch_to_l1;
  const int64_t isz = int64_t(sizeof(T));
  const int64_t ahead = gemv_tuning().prefetch_ahead_bytes / isz;
  // Past a row's end the line is in the row that continues it in the next
  // tile (for rows shorter than the distance, further along the run): only
  // where that stays inside W for every row of the tile, all but the last
  // tiles.
  const int64_t last_row = n0 + (P - 1) + (R / P - 1) * rs;
  const bool ahead_past_end = ahead > 0 && (last_row + next) * a.ldw + ahead <= (a.N - 1) * a.ldw + K;
  const T* HWY_RESTRICT w_cont[R];
  KILN_UNROLL
  for (int r = 0; r < R; ++r) w_cont[r] = w[r] + (ahead_past_end ? next * a.ldw : 0);
  const int64_t pf_shift =
      (a.ldw * isz) % 4096 == 0 ? std::min<int64_t>(2048, K * isz / 2 / 64 * 64) / isz : 0;

  // One or two outputs per tile (rows read whole, in address order): the C
  // vectors of a step feed NA accumulators per output, so enough FMA chains
  // run at once (two outputs: at most 2 each, for the registers).
  constexpr int NA = R * MT == 1 ? C : R * MT == 2 ? (C < 2 ? C : 2) : 1;
  VF tot[R * MT];      // block kind: scaled sums of finished blocks
  float stot[R * MT];  // scalar tails (scaled like tot)
  KILN_UNROLL
  for (int i = 0; i < R * MT; ++i) {
    tot[i] = hn::Zero(df);
    stot[i] = 0.0f;
  }
  [[maybe_unused]] NanCodeSteps nan_codes;
  // The listed-subnormal loader's scalar terms (K tails and listed codes),
  // scaled like tot: in double from x's exact value, as DAZ is set.
  [[maybe_unused]] double dfix[R * MT] = {};
  const int64_t block = kBlock ? kScaleBlock : K;
  for (int64_t kb = 0; kb < K; kb += block) {
    const int64_t ke = kb + block < K ? kb + block : K;
    VF acc[R * MT * NA];
    float tail[R * MT];  // scalar terms: the K tail and, for the tiny loader, skipped steps
    [[maybe_unused]] double dtail[R * MT];  // the K tail of the listed-subnormal loader
    KILN_UNROLL
    for (int i = 0; i < R * MT * NA; ++i) acc[i] = hn::Zero(df);
    KILN_UNROLL
    for (int i = 0; i < R * MT; ++i) {
      tail[i] = 0.0f;
      dtail[i] = 0.0;
    }
    int64_t k = kb;
    for (; k + CL <= ke; k += CL) {
      if (ahead > 0) {
        const int64_t pk = k + ahead;
        if (pk < K) {
          KILN_UNROLL
          for (int r = 0; r < R; ++r) PrefetchAhead(w[r] + pk, to_l1);
        } else if (ahead_past_end) {
          KILN_UNROLL
          for (int r = 0; r < R; ++r) PrefetchAhead(w_cont[r] + (pk - K), to_l1);
        }
      } else if (prefetch) {
        int64_t pk = k + pf_shift;
        if (pk >= K) pk -= K;
        KILN_UNROLL
        for (int r = 0; r < R; ++r) PrefetchAhead(w[r] + next * a.ldw + pk, to_l1);
      }
      if constexpr (HasNanCode<W>()) {
        KILN_UNROLL
        for (int r = 0; r < R; ++r) nan_codes.Add(w[r] + k);
      }
      VF xv[MT * C];
      KILN_UNROLL
      for (int m = 0; m < MT; ++m)
        KILN_UNROLL
        for (int c = 0; c < C; ++c) xv[m * C + c] = hn::LoadU(df, xq[m] + k + c * L);
      if constexpr (TestsSubnormals<W>()) {
        // One test per step for all R rows: codes with a zero exponent field
        // (zeros and subnormals, both rare in real weights), one op per row
        // where subnormals alone take two (a standalone loop, hot, one core:
        // 1.10-1.16x; the kernel, cold: 1.017x). Only a step that holds some
        // has its subnormals picked out:
        // in a row whose step holds them, they read as zero in the vector
        // part and their terms are added exactly in scalar.
        uint64_t sub[R], any = 0;
        KILN_UNROLL
        for (int r = 0; r < R; ++r) any |= W::ZeroExponents(w[r] + k);
        if (HWY_UNLIKELY(any != 0)) {
          any = 0;
          KILN_UNROLL
          for (int r = 0; r < R; ++r) {
            sub[r] = W::Subnormals(w[r] + k);
            any |= sub[r];
          }
        }
        if (HWY_UNLIKELY(any != 0)) {
          KILN_UNROLL
          for (int r = 0; r < R; ++r) {
            if (sub[r] != 0) AddFlaggedTerms<W, MT>(w[r], k, sub[r], x, tail + r * MT);
            VF wv[C];
            W::LoadSkipping(w[r] + k, sub[r], wv);
            KILN_UNROLL
            for (int c = 0; c < C; ++c)
              KILN_UNROLL
              for (int m = 0; m < MT; ++m) {
                VF& ac = acc[(r * MT + m) * NA + (NA > 1 ? c % NA : 0)];
                ac = hn::MulAdd(wv[c], xv[m * C + c], ac);
              }
          }
          continue;
        }
      }
      KILN_UNROLL
      for (int r = 0; r < R; ++r) {
        VF wv[C];
        W::Load(w[r] + k, wv);
        KILN_UNROLL
        for (int c = 0; c < C; ++c)
          KILN_UNROLL
          for (int m = 0; m < MT; ++m) {
            VF& ac = acc[(r * MT + m) * NA + (NA > 1 ? c % NA : 0)];
            ac = hn::MulAdd(wv[c], xv[m * C + c], ac);
          }
      }
    }
    if constexpr (NA > 1) {  // each output's NA partial sums into acc[output]
      KILN_UNROLL
      for (int o = 0; o < R * MT; ++o) {
        VF t = acc[o * NA];
        KILN_UNROLL
        for (int i = 1; i < NA; ++i) t = hn::Add(t, acc[o * NA + i]);
        acc[o] = t;
      }
    }
    for (; k < ke; ++k) {
      KILN_UNROLL
      for (int r = 0; r < R; ++r) {
        if constexpr (ListsSubnormals<W>()) {
          const double wv = double(W::One(w[r][k]));
          KILN_UNROLL
          for (int m = 0; m < MT; ++m) dtail[r * MT + m] += wv * ExactDouble(x[m][k]);
        } else {
          const float wv = W::One(w[r][k]);
          KILN_UNROLL
          for (int m = 0; m < MT; ++m) tail[r * MT + m] += wv * x[m][k];
        }
      }
    }
    if constexpr (kBlock) {
      HWY_DASSERT(rs == 1);
      const float* srow = a.scale + (n0 / kScaleBlock) * a.scale_ld + kb / kScaleBlock;
      KILN_UNROLL
      for (int r = 0; r < R; ++r) {
        // Rows of a tile may straddle a 128-row block boundary, never two:
        // with block scales the rows are adjacent (rs == 1, R <= 128; the
        // tiles of RowsInRuns run without them).
        const float s = (n0 + r) / kScaleBlock == n0 / kScaleBlock ? srow[0] : srow[a.scale_ld];
        KILN_UNROLL
        for (int m = 0; m < MT; ++m) {
          tot[r * MT + m] = hn::MulAdd(acc[r * MT + m], hn::Set(df, s), tot[r * MT + m]);
          stot[r * MT + m] += tail[r * MT + m] * s;
          if constexpr (ListsSubnormals<W>()) dfix[r * MT + m] += dtail[r * MT + m] * double(s);
        }
      }
    } else {
      KILN_UNROLL
      for (int i = 0; i < R * MT; ++i) {
        tot[i] = acc[i];
        stot[i] = tail[i];
        if constexpr (ListsSubnormals<W>()) dfix[i] = dtail[i];
      }
    }
  }
  bool nan_row[R] = {};
  if constexpr (HasNanCode<W>()) {
    if (HWY_UNLIKELY(nan_codes.Any())) {
      KILN_UNROLL
      for (int r = 0; r < R; ++r) nan_row[r] = RowHasNanCode(w[r], K);
    }
  }
  KILN_UNROLL
  for (int r = 0; r < R; ++r) {
    const int64_t n = n0 + r % P + r / P * rs;
    const float sc = kBlock ? 1.0f : row_scale(a, n);
    const float b = a.bias ? a.bias[n] : 0.0f;
    // W::kMult * sc and b as doubles (from their exact values under DAZ).
    double mult = double(W::kMult * sc), db = double(b);
    if constexpr (ListsSubnormals<W>()) {
      mult = double(W::kMult) * ExactDouble(sc);
      db = ExactDouble(b);
    }
    KILN_UNROLL
    for (int m = 0; m < MT; ++m) {
      const double v = double(hn::GetLane(hn::SumOfLanes(df, tot[r * MT + m])));
      double sum = (vfac ? v * vfac[m0 + m] : v) + double(stot[r * MT + m]);
      if constexpr (ListsSubnormals<W>())
        sum += dfix[r * MT + m] + a.listed[(n - a.listed_n0) * a.M + m0 + m];
      store_out(a, m0 + m, n, nan_row[r] ? NAN : float(sum * mult + db));
    }
  }
}

// All M rows for weight rows [n0, n0 + R): activation rows in tiles of MT.
template <class W, int R, int MT, bool kBlock>
HWY_INLINE void RowGroup(const TileArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0) {
  int64_t m = 0;
  for (; m + MT <= a.M; m += MT) Tile<W, R, MT, kBlock>(a, xp, ldxp, vfac, n0, m);
  if constexpr (MT > 1) {
    for (; m < a.M; ++m) Tile<W, R, 1, kBlock>(a, xp, ldxp, vfac, n0, m);
  }
}

// One activation row, weight rows [n0, n1) read whole in address order as
// kRuns runs side by side: with h = (n1 - n0) / kRuns, a tile reads rows
// n0 + i, n0 + h + i, ... (the rows left over, fewer than kRuns, one per
// tile). Each core keeps kRuns streams going, pages apart, where rows side by
// side put several in one page and a single stream left its hardware
// prefetcher short (decode attention, read as two runs: ~1.2x).
template <class W, int kRuns>
HWY_INLINE void RowsRuns(const TileArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0,
                         int64_t n1) {
  const int64_t h = (n1 - n0) / kRuns;
  for (int64_t i = 0; i < h; ++i) Tile<W, kRuns, 1, false, 1>(a, xp, ldxp, vfac, n0 + i, 0, h);
  for (int64_t n = n0 + kRuns * h; n < n1; ++n) Tile<W, 1, 1, false>(a, xp, ldxp, vfac, n, 0);
}
template <class W>
HWY_INLINE void RowsInRuns(const TileArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0,
                           int64_t n1) {
  if (gemv_tuning().row_runs >= 4) return RowsRuns<W, 4>(a, xp, ldxp, vfac, n0, n1);
  RowsRuns<W, 2>(a, xp, ldxp, vfac, n0, n1);
}

template <class W, int R, int MT, bool kBlock>
HWY_INLINE void RowsFixed(const TileArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0,
                          int64_t n1) {
  int64_t n = n0;
  for (; n + R <= n1; n += R) RowGroup<W, R, MT, kBlock>(a, xp, ldxp, vfac, n);
  for (; n < n1; ++n) RowGroup<W, 1, MT, kBlock>(a, xp, ldxp, vfac, n);
}

#ifdef KILN_GEMV_E4M3_TINY
// For the tiny-float loader: x rows in lane order (weight 4i+j of a chunk at
// j * L + i), each row scaled by 2^k so its largest |x| lands in [2^119, 2^120):
// tiny weights are >= 2^-126 (normal codes), so every product of a term that
// matters stays a normal float, and no sum can overflow. vfac[m] = 2^(120-k).
// Null when a row is not finite or its largest |x| is below 2^-60 (the f16
// route handles those exactly).
inline const float* PermuteScaleX(const GemvArgs& a, int64_t& ldxp, const double*& vfac) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df)), CL = 4 * L;
  const int64_t kv = a.K / CL * CL, kl = a.K / L * L;
  thread_local std::vector<float> buf;
  thread_local std::vector<double> fac;
  if (buf.size() < size_t(a.M * kv)) buf.resize(size_t(a.M * kv));
  if (fac.size() < size_t(a.M)) fac.resize(size_t(a.M));
  for (int64_t m = 0; m < a.M; ++m) {
    const float* HWY_RESTRICT src = a.x + m * a.ldx;
    // The largest |x|, and x * 0 summed: NaN exactly when some x is not finite.
    VF vmax = hn::Zero(df), vnan = hn::Zero(df);
    for (int64_t k = 0; k < kl; k += L) {
      const VF v = hn::LoadU(df, src + k);
      vmax = hn::Max(vmax, hn::Abs(v));
      vnan = hn::MulAdd(v, hn::Zero(df), vnan);
    }
    float amax = hn::GetLane(hn::MaxOfLanes(df, vmax)), zsum = hn::GetLane(hn::SumOfLanes(df, vnan));
    for (int64_t k = kl; k < a.K; ++k) {
      amax = std::max(amax, std::fabs(src[k]));
      zsum += src[k] * 0.0f;
    }
    if (std::isnan(zsum) || (amax != 0.0f && amax < 0x1p-60f)) return nullptr;
    const int e = amax == 0.0f ? 0 : std::ilogb(amax);  // amax in [2^e, 2^(e+1))
    // x * 2^(119 - e) in one or two exact power-of-two steps (2^(119 - e)
    // itself can pass float's range; every product stays below 2^120).
    const int up = 119 - e, up1 = std::min(up, 100);
    const VF s1 = hn::Set(df, std::ldexp(1.0f, up1)), s2 = hn::Set(df, std::ldexp(1.0f, up - up1));
    fac[size_t(m)] = std::ldexp(1.0, e + 1);
    float* HWY_RESTRICT dst = buf.data() + m * kv;
    for (int64_t c = 0; c < kv; c += CL) {
      VF v0, v1, v2, v3;  // v_j[i] = x[c + 4i + j]: the loader's lane order
      hn::LoadInterleaved4(df, src + c, v0, v1, v2, v3);
      hn::StoreU(hn::Mul(hn::Mul(v0, s1), s2), df, dst + c);
      hn::StoreU(hn::Mul(hn::Mul(v1, s1), s2), df, dst + c + L);
      hn::StoreU(hn::Mul(hn::Mul(v2, s1), s2), df, dst + c + 2 * L);
      hn::StoreU(hn::Mul(hn::Mul(v3, s1), s2), df, dst + c + 3 * L);
    }
  }
  ldxp = kv;
  vfac = fac.data();
  return buf.data();
}
#endif

// src[0..n) into dst in the loaders' chunk order: within each chunk of cl
// elements (a multiple of 2L; n a multiple of cl) the even-indexed ones, then
// the odd. FromChunkOrder undoes it.
HWY_INLINE void ToChunkOrder(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n, int64_t cl) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  for (int64_t c = 0; c < n; c += cl)
    for (int64_t j = 0; j < cl / 2; j += L) {
      VF ev, od;
      hn::LoadInterleaved2(df, src + c + 2 * j, ev, od);
      hn::StoreU(ev, df, dst + c + j);
      hn::StoreU(od, df, dst + c + cl / 2 + j);
    }
}
HWY_INLINE void FromChunkOrder(const float* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n, int64_t cl) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  for (int64_t c = 0; c < n; c += cl)
    for (int64_t j = 0; j < cl / 2; j += L)
      hn::StoreInterleaved2(hn::LoadU(df, src + c + j), hn::LoadU(df, src + c + cl / 2 + j), df, dst + c + 2 * j);
}

// x rows in the loader's chunk order (evens, then odds, per chunk of
// kChunk * L); only whole chunks are used, the tail reads x itself.
template <class W>
const float* PermuteX(const GemvArgs& a, int64_t& ldxp) {
  if constexpr (W::kChunk == 1) {
    ldxp = a.ldx;
    return a.x;
  } else {
    const DF df;
    const int64_t L = int64_t(hn::Lanes(df));
    const int64_t CL = W::kChunk * L;
    const int64_t kv = a.K / CL * CL;
    thread_local std::vector<float> buf;
    if (buf.size() < size_t(a.M * kv)) buf.resize(size_t(a.M * kv));
    ldxp = kv;
    for (int64_t m = 0; m < a.M; ++m) ToChunkOrder(a.x + m * a.ldx, buf.data() + m * kv, kv, CL);
    return buf.data();
  }
}

// One activation row and short weight rows (gemv_tuning()): rows read whole
// in address order, far-apart rows side by side (RowsInRuns). Several short
// rows read side by side put several streams in one 4 KiB page, which the
// hardware prefetcher follows poorly (a plain read of 768-1536-byte rows on a
// Zen 3 core: ~10 GB/s row by row, ~6 eight rows side by side); the x row,
// reread per weight row, stays in L1. How short depends on the CPU. Zen: rows
// of exactly 2 KiB: bf16 (K = 1024) 1.3-1.5x faster as two runs than eight
// side by side on Zen 3 AVX2, ~1.15x on Zen 5 AVX-512; FP8 (K = 2048) the same
// as six side by side on Zen 3 but 0.7-0.8x on Zen 5 AVX-512, so FP8 rows take
// two runs only below 2 KiB; rows of 2-4 KiB 0.9-1.0x, so those stay side by
// side. Ice Lake: every row below 4 KiB is faster as runs, and FP8 rows of
// 4 KiB as four runs (GemvTuning).
template <class W>
bool RowOrder(const GemvArgs& a) {
  const int64_t row_bytes = a.K * int64_t(sizeof(typename W::T));
  return a.M == 1 && row_bytes <= gemv_tuning().row_runs_max_bytes_for(int64_t(sizeof(typename W::T)));
}

template <class W>
void RowsInOrder(const TileArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0,
                 int64_t n1);

// Rows [n0, n1) of y: x permuted (and, for the tiny loader, scaled) for the
// loader, then the tiles.
template <class W>
void Rows(const GemvArgs& a, int64_t n0, int64_t n1) {
  int64_t ldxp = 0;
  const double* vfac = nullptr;
  const float* xp = nullptr;
#ifdef KILN_GEMV_E4M3_TINY
  if constexpr (IsTiny<W>()) {
    xp = PermuteScaleX(a, ldxp, vfac);
    if (!xp) return Rows<LikeChecked<W, WidenE4M3> >(a, n0, n1);
    if constexpr (ListsSubnormals<W>()) {
      TileArgs t(a);
      t.listed = ListedTerms<W>(a, n0, n1, W::kChunk * int64_t(hn::Lanes(DF())));
      t.listed_n0 = n0;
      const DenormalsAreZero daz;
      return RowsInOrder<W>(t, xp, ldxp, vfac, n0, n1);
    }
  } else {
    xp = PermuteX<W>(a, ldxp);
  }
#else
  xp = PermuteX<W>(a, ldxp);
#endif
  RowsInOrder<W>(TileArgs(a), xp, ldxp, vfac, n0, n1);
}

// Rows' tiles, x in the loader's order (xp): the tile shape and row order
// follow M, the scale layout and the row length. R * MT accumulators (and as
// many running totals for block scales) must fit the 16 vector registers of
// AVX2 beside the loaded vectors.
template <class W>
void RowsInOrder(const TileArgs& a, const float* xp, int64_t ldxp, const double* vfac, int64_t n0,
                 int64_t n1) {
  if (a.scale_kind == ScaleKind::Block) {
    if (a.M == 1) return RowsFixed<W, 4, 1, true>(a, xp, ldxp, vfac, n0, n1);
    if (a.M == 2) return RowsFixed<W, 2, 2, true>(a, xp, ldxp, vfac, n0, n1);
    return RowsFixed<W, 1, 4, true>(a, xp, ldxp, vfac, n0, n1);
  }
  // Six FP8 rows per tile, not eight: rows of 0.5-2.3 KiB (SmolLM2, Qwen3
  // experts) ran at 0.62 of the roof with eight read streams per thread and
  // 0.66 with six (kiln bench linear, A/B interleaved); longer rows and bf16
  // showed no difference. Short rows now go in runs (RowOrder).
  if constexpr (IsTiny<W>()) {
    if (RowOrder<W>(a)) return RowsInRuns<W>(a, xp, ldxp, vfac, n0, n1);
    if (a.M == 1) return RowsFixed<W, 6, 1, false>(a, xp, ldxp, vfac, n0, n1);
  }
  if (RowOrder<W>(a)) return RowsInRuns<W>(a, xp, ldxp, vfac, n0, n1);
  if (a.M == 1) return RowsFixed<W, 8, 1, false>(a, xp, ldxp, vfac, n0, n1);
  if (a.M == 2) return RowsFixed<W, 4, 2, false>(a, xp, ldxp, vfac, n0, n1);
  if (a.M == 3) return RowsFixed<W, 2, 3, false>(a, xp, ldxp, vfac, n0, n1);
  return RowsFixed<W, 2, 4, false>(a, xp, ldxp, vfac, n0, n1);
}

}  // namespace gemv
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_GEMV_INL_H_
