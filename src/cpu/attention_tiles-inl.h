// The per-tile kernels of decode and prefill attention (attention.cc), compiled
// once per Highway target as part of attention.cc, which alone includes this file.
//
// Per tile of kAttnKeyBlock keys: scores = q . k for 4 keys x up to 4 query
// rows per pass, f32 and bf16 K read in place and widened in registers
// (others widened into a padded tile); masked, then each row's max,
// correction exp(m_old - m_new), probabilities and sum are updated; finally
// acc += p @ V with the accumulators of up to 4 rows held in registers while
// V streams through once. K and V are each read once per call, whatever the
// number of rows (the GQA heads sharing a KV head are rows of one call), and
// the next tile's K and V are prefetched while this one computes.
//
// On 16-register targets (AVX2, SSE4, NEON) the first 4 rows read each tile in
// address order instead, one K row and two V rows at a time (DotsRowOrder,
// AccumulatePVRowOrder): there, decode reads K and V from memory once, and
// the hardware prefetcher streams rows read whole but not 4-8 rows read
// column by column (a plain read of a KV cache on a Zen 3 core: ~12 GB/s in
// address order, ~6.5 in the column-chunk order of the register-blocked
// kernels). Further rows find the tile cached and take the register-blocked
// kernels. Decode goes further (DotsTwoRuns, AccumulatePVTwoRuns): the key
// range's two halves are read in lockstep, so each core keeps two address-order
// streams of K (and of V) going; one stream leaves its prefetcher short.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_ATTENTION_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_ATTENTION_TILES_INL_H_
#undef KILN_CPU_ATTENTION_TILES_INL_H_
#else
#define KILN_CPU_ATTENTION_TILES_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/attention.h"
#include "cpu/gemv-inl.h"
#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kBk = kAttnKeyBlock;
// Keys per run in a two-run tile (see AttendBlock).
constexpr int64_t kHalfBk = kBk / 2;

// How rows of K or V become float32 vectors: the GEMV's widening loaders
// (gemv::WidenF32, and gemv::WidenBF16, which widens a u32 lane's two bf16
// elements with a shift and a mask, even elements first: two operations per
// 2N elements where widening in order takes four; q and the accumulators then
// go in the same order, gemv::ToChunkOrder), plus bf16 in order for targets without the
// registers to hold both halves (LoadBf16). Load(p, v) widens kChunk * N
// elements at p into v[0..kChunk).
struct LoadBf16 {
  using T = bfloat16;
  static constexpr int kChunk = 1;
  static HWY_INLINE void Load(const T* HWY_RESTRICT p, VF* v) {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::RebindToUnsigned<DF> du32;
    v[0] = hn::BitCast(
        DF(), hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)))));
  }
};
using LoadF32 = gemv::WidenF32;
using LoadBf16Pairs = gemv::WidenBF16;

// n elements of kv type at src -> float32 dst[0..n), zeros to dst[n..np).
void Widen(const void* src, KVType t, float* HWY_RESTRICT dst, int64_t n, int64_t np) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t i = 0;
  if (t == KVType::F32) {
    std::memcpy(dst, src, size_t(n) * 4);
    i = n;
  } else if (t == KVType::BF16) {
    const bfloat16* s = static_cast<const bfloat16*>(src);
    for (; i + N <= n; i += N) {
      VF v;
      LoadBf16::Load(s + i, &v);
      hn::StoreU(v, d, dst + i);
    }
    for (; i < n; ++i) dst[i] = float(s[i]);
  } else {
    const half* s = static_cast<const half*>(src);
    for (; i + N <= n; i += N) {
      VF v;
      gemv::WidenF16::Load(s + i, &v);
      hn::StoreU(v, d, dst + i);
    }
    for (; i < n; ++i) dst[i] = float(s[i]);
  }
  for (; i < np; ++i) dst[i] = 0.0f;
}


// The next tile's rows to prefetch: key j's K row at k + j * ks (the score
// pass reads k) and V row at v + j * vs (the p @ V pass reads v); bytes.
struct AttnPrefetch {
  const char* k = nullptr;
  const char* v = nullptr;
  int64_t ks = 0, vs = 0;
};

#if HWY_TARGET != HWY_SCALAR
// Lane i of the first four (of every 128-bit block) = the sum of all lanes of
// v_i: a transposing reduction, 13 shuffles/adds for four sums where four
// separate horizontal sums cost 32.
HWY_INLINE VF Sum4(DF d, VF v0, VF v1, VF v2, VF v3) {
  const hn::Repartition<double, DF> dd;
  // Per block: [v0 a+c, v1 a+c, v0 b+d, v1 b+d] and the same for v2, v3.
  const VF t0 = hn::Add(hn::InterleaveLower(d, v0, v1), hn::InterleaveUpper(d, v0, v1));
  const VF t1 = hn::Add(hn::InterleaveLower(d, v2, v3), hn::InterleaveUpper(d, v2, v3));
  const auto u0 = hn::BitCast(dd, t0), u1 = hn::BitCast(dd, t1);
  VF u = hn::Add(hn::BitCast(d, hn::InterleaveLower(dd, u0, u1)),
                 hn::BitCast(d, hn::InterleaveUpper(dd, u0, u1)));
  if constexpr (hn::MaxLanes(d) >= 8) u = hn::Add(u, hn::SwapAdjacentBlocks(u));
  if constexpr (hn::MaxLanes(d) >= 16) u = hn::Add(u, hn::ConcatLowerUpper(d, u, u));
  return u;
}

// The first four lanes of v to p[0..4).
template <class D>
HWY_INLINE void StoreFirst4(D d, hn::Vec<D> v, float* HWY_RESTRICT p) {
  if constexpr (hn::MaxLanes(d) <= 4) {
    hn::StoreU(v, d, p);
  } else {
    const hn::Half<D> dh;
    StoreFirst4(dh, hn::LowerHalf(dh, v), p);
  }
}

#endif

// Vector registers of the target: AVX-512 has 32, so 4 query rows x 4 keys
// of accumulators fit beside the loads; elsewhere rows go two at a time.
constexpr int kDotRows = hn::MaxLanes(DF()) >= 16 ? 4 : 2;
// Whether the first 4 rows read each tile in address order (see the top).
constexpr bool kRowOrder = HWY_TARGET != HWY_SCALAR && kDotRows == 2;
// Rows per row-order pass.
constexpr int kRowOrderRows = 4;

#if HWY_TARGET != HWY_SCALAR
// sc[r][j..j+4) = q_r . k_{j..j+4} for R (1..kDotRows) rows: each K load feeds
// R FMAs, each q load 4, and R x 4 independent chains hide the FMA latency.
// pf->k: the next tile's K rows, prefetched line by line while these four
// keys compute (see AttendBlock); pf may be null.
template <int R, class Ld>
HWY_INLINE void Dots4Keys(const float* HWY_RESTRICT q, int64_t ldq, const typename Ld::T* HWY_RESTRICT kr,
                          int64_t ldk, int64_t Ep, float (*sc)[kBk], int64_t j, const AttnPrefetch* pf) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr int V = Ld::kChunk;
  constexpr int64_t esz = int64_t(sizeof(typename Ld::T));
  VF a[R][4];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < 4; ++i) a[r][i] = hn::Zero(d);
  for (int64_t c = 0; c < Ep; c += V * N) {
    if (pf != nullptr && (c * esz) % 64 == 0)
      for (int i = 0; i < 4; ++i) __builtin_prefetch(pf->k + (j + i) * pf->ks + c * esz, 0, 2);
    VF kv[4][V];
    for (int i = 0; i < 4; ++i) Ld::Load(kr + i * ldk + c, kv[i]);
    for (int v = 0; v < V; ++v)
      for (int r = 0; r < R; ++r) {
        const VF qv = hn::LoadU(d, q + r * ldq + c + v * N);
        for (int i = 0; i < 4; ++i) a[r][i] = hn::MulAdd(qv, kv[i][v], a[r][i]);
      }
  }
  for (int r = 0; r < R; ++r) StoreFirst4(d, Sum4(d, a[r][0], a[r][1], a[r][2], a[r][3]), &sc[r][j]);
}
#endif

#if HWY_TARGET != HWY_SCALAR
// sc[r][j] = q_r . k_j for R (1..4) rows, one key at a time, so K is read in
// address order: two vectors of each K row per step feed 2R FMA chains, and
// one transposing reduction per key gives the R scores. pf->k: the next
// tile's K, prefetched in the same order (pf may be null).
template <int R, class Ld>
HWY_INLINE void DotsRowOrder(const float* HWY_RESTRICT q, int64_t ldq, const typename Ld::T* HWY_RESTRICT kt,
                             int64_t ldk, int64_t nb, int64_t Ep, float (*sc)[kBk], const AttnPrefetch* pf,
                             int64_t col0 = 0) {
  static_assert(R >= 1 && R <= 4, "Sum4 reduces four rows");
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr int64_t esz = int64_t(sizeof(typename Ld::T));
  for (int64_t j = 0; j < nb; ++j) {
    const typename Ld::T* kr = kt + j * ldk;
    VF a[4], b[4];
    for (int r = 0; r < 4; ++r) {
      a[r] = hn::Zero(d);
      b[r] = hn::Zero(d);
    }
    int64_t c = 0;
    for (; c + 2 * N <= Ep; c += 2 * N) {
      if (pf != nullptr && (c * esz) % 64 == 0) __builtin_prefetch(pf->k + j * pf->ks + c * esz, 0, 2);
      VF kv[2];
      if constexpr (Ld::kChunk == 2) {
        Ld::Load(kr + c, kv);
      } else {
        Ld::Load(kr + c, kv);
        Ld::Load(kr + c + N, kv + 1);
      }
      for (int r = 0; r < R; ++r) {
        a[r] = hn::MulAdd(hn::LoadU(d, q + r * ldq + c), kv[0], a[r]);
        b[r] = hn::MulAdd(hn::LoadU(d, q + r * ldq + c + N), kv[1], b[r]);
      }
    }
    if constexpr (Ld::kChunk == 1)  // pairs only run with Ep a multiple of 2N
      for (; c < Ep; c += N) {
        VF kv;
        Ld::Load(kr + c, &kv);
        for (int r = 0; r < R; ++r) a[r] = hn::MulAdd(hn::LoadU(d, q + r * ldq + c), kv, a[r]);
      }
    HWY_ALIGN float s4[hn::MaxLanes(DF())];
    hn::Store(Sum4(d, hn::Add(a[0], b[0]), hn::Add(a[1], b[1]), hn::Add(a[2], b[2]), hn::Add(a[3], b[3])), d, s4);
    for (int r = 0; r < R; ++r) sc[r][col0 + j] = s4[r];
  }
}

// The two-run tile (see AttendBlock): sc[r][j] = q_r . ka_j and
// sc[r][kHalfBk + j] = q_r . kb_j for j < nb, key j of each run read together,
// so one core streams two runs of K in address order. One accumulator per
// (row, key), two FMAs each per step. pfa/pfb: the runs' next K rows, one line
// per step (either may be null). DotsRowOrder's loop with the two runs as the
// two FMA chains per row, where DotsRowOrder splits one key's columns over
// two chains to hide the FMA latency; one kernel for both would give up one
// or the other.
template <int R, class Ld>
HWY_INLINE void DotsTwoRuns(const float* HWY_RESTRICT q, int64_t ldq, const typename Ld::T* HWY_RESTRICT ka,
                            const typename Ld::T* HWY_RESTRICT kb, int64_t ldk, int64_t nb, int64_t Ep,
                            float (*sc)[kBk], const AttnPrefetch* pfa, const AttnPrefetch* pfb) {
  static_assert(R >= 1 && R <= 4, "Sum4 reduces four rows");
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr int64_t esz = int64_t(sizeof(typename Ld::T));
  for (int64_t j = 0; j < nb; ++j) {
    const typename Ld::T* ar = ka + j * ldk;
    const typename Ld::T* br = kb + j * ldk;
    VF x[4], y[4];
    for (int r = 0; r < 4; ++r) {
      x[r] = hn::Zero(d);
      y[r] = hn::Zero(d);
    }
    int64_t c = 0;
    for (; c + 2 * N <= Ep; c += 2 * N) {
      if ((c * esz) % 64 == 0) {
        if (pfa != nullptr) __builtin_prefetch(pfa->k + j * pfa->ks + c * esz, 0, 2);
        if (pfb != nullptr) __builtin_prefetch(pfb->k + j * pfb->ks + c * esz, 0, 2);
      }
      VF av[2], bv[2];
      if constexpr (Ld::kChunk == 2) {
        Ld::Load(ar + c, av);
        Ld::Load(br + c, bv);
      } else {
        Ld::Load(ar + c, av);
        Ld::Load(ar + c + N, av + 1);
        Ld::Load(br + c, bv);
        Ld::Load(br + c + N, bv + 1);
      }
      for (int r = 0; r < R; ++r) {
        const VF q0 = hn::LoadU(d, q + r * ldq + c), q1 = hn::LoadU(d, q + r * ldq + c + N);
        x[r] = hn::MulAdd(q1, av[1], hn::MulAdd(q0, av[0], x[r]));
        y[r] = hn::MulAdd(q1, bv[1], hn::MulAdd(q0, bv[0], y[r]));
      }
    }
    if constexpr (Ld::kChunk == 1)  // pairs only run with Ep a multiple of 2N
      for (; c < Ep; c += N) {
        VF av, bv;
        Ld::Load(ar + c, &av);
        Ld::Load(br + c, &bv);
        for (int r = 0; r < R; ++r) {
          const VF q0 = hn::LoadU(d, q + r * ldq + c);
          x[r] = hn::MulAdd(q0, av, x[r]);
          y[r] = hn::MulAdd(q0, bv, y[r]);
        }
      }
    HWY_ALIGN float s4[hn::MaxLanes(DF())];
    hn::Store(Sum4(d, x[0], x[1], x[2], x[3]), d, s4);
    for (int r = 0; r < R; ++r) sc[r][j] = s4[r];
    hn::Store(Sum4(d, y[0], y[1], y[2], y[3]), d, s4);
    for (int r = 0; r < R; ++r) sc[r][kHalfBk + j] = s4[r];
  }
}

// acc_r[0..Evp) += p0[r] * v0r + p1[r] * v1r for R (1..4) rows, both V rows
// read in address order, each load/store of the accumulators carrying two
// FMAs. pf0/pf1: rows to prefetch line by line alongside (either may be null).
template <int R, class Ld>
HWY_INLINE void PVTwoRows(const VF* p0, const VF* p1, const typename Ld::T* HWY_RESTRICT v0r,
                          const typename Ld::T* HWY_RESTRICT v1r, int64_t Evp, float* HWY_RESTRICT acc, int64_t lda,
                          const char* pf0, const char* pf1) {
  constexpr int V = Ld::kChunk;
  static_assert(V == 1 || V == 2, "one or two vectors per step");
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr int64_t esz = int64_t(sizeof(typename Ld::T));
  for (int64_t c = 0; c < Evp; c += V * N) {
    if ((c * esz) % 64 == 0) {
      if (pf0 != nullptr) __builtin_prefetch(pf0 + c * esz, 0, 2);
      if (pf1 != nullptr) __builtin_prefetch(pf1 + c * esz, 0, 2);
    }
    VF v0[V], v1[V];
    Ld::Load(v0r + c, v0);
    Ld::Load(v1r + c, v1);
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v) {
        float* ar = acc + r * lda + c + v * N;
        hn::StoreU(hn::MulAdd(p1[r], v1[v], hn::MulAdd(p0[r], v0[v], hn::LoadU(d, ar))), d, ar);
      }
  }
}

// The two-run tile's p @ V: key j of run a (probability column j) with key j
// of run b (column kHalfBk + j), j < nb; pfa/pfb as in DotsTwoRuns.
template <int R, class Ld>
HWY_INLINE void AccumulatePVTwoRuns(const float (*p)[kBk], const typename Ld::T* HWY_RESTRICT va,
                                    const typename Ld::T* HWY_RESTRICT vb, int64_t ldv, int64_t nb, int64_t Evp,
                                    float* HWY_RESTRICT acc, int64_t lda, const AttnPrefetch* pfa,
                                    const AttnPrefetch* pfb) {
  const DF d;
  for (int64_t j = 0; j < nb; ++j) {
    VF p0[R], p1[R];
    for (int r = 0; r < R; ++r) {
      p0[r] = hn::Set(d, p[r][j]);
      p1[r] = hn::Set(d, p[r][kHalfBk + j]);
    }
    PVTwoRows<R, Ld>(p0, p1, va + j * ldv, vb + j * ldv, Evp, acc, lda,
                     pfa != nullptr ? pfa->v + j * pfa->vs : nullptr, pfb != nullptr ? pfb->v + j * pfb->vs : nullptr);
  }
}

// acc_r[0..Evp) += sum_j p[r][j] * v_j for R (1..4) rows, two keys at a time
// across whole rows, so V is read in address order (two adjacent rows); the
// accumulators stay in L1 and each load/store of them carries two FMAs.
// pf->v: the next tile's V, prefetched in the same order (pf may be null).
template <int R, class Ld>
HWY_INLINE void AccumulatePVRowOrder(const float (*p)[kBk], const typename Ld::T* HWY_RESTRICT vt, int64_t ldv,
                                     int64_t nb, int64_t Evp, float* HWY_RESTRICT acc, int64_t lda,
                                     const AttnPrefetch* pf, int64_t col0 = 0) {
  const DF d;
  int64_t j = 0;
  for (; j + 2 <= nb; j += 2) {
    VF p0[R], p1[R];
    for (int r = 0; r < R; ++r) {
      p0[r] = hn::Set(d, p[r][col0 + j]);
      p1[r] = hn::Set(d, p[r][col0 + j + 1]);
    }
    PVTwoRows<R, Ld>(p0, p1, vt + j * ldv, vt + (j + 1) * ldv, Evp, acc, lda,
                     pf != nullptr ? pf->v + j * pf->vs : nullptr, pf != nullptr ? pf->v + (j + 1) * pf->vs : nullptr);
  }
  if (j < nb) {  // an odd last key
    constexpr int V = Ld::kChunk;
    const int64_t N = int64_t(hn::Lanes(d));
    VF p0[R];
    for (int r = 0; r < R; ++r) p0[r] = hn::Set(d, p[r][col0 + j]);
    const typename Ld::T* v0r = vt + j * ldv;
    for (int64_t c = 0; c < Evp; c += V * N) {
      VF v0[V];
      Ld::Load(v0r + c, v0);
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) {
          float* ar = acc + r * lda + c + v * N;
          hn::StoreU(hn::MulAdd(p0[r], v0[v], hn::LoadU(d, ar)), d, ar);
        }
    }
  }
}
#endif

// sc[r][j] = q_r . k_j for R (1..4) rows starting at q, keys kt[j * ldk], len Ep.
template <int R, class Ld>
HWY_INLINE void Dots(const float* HWY_RESTRICT q, int64_t ldq, const typename Ld::T* HWY_RESTRICT kt,
                     int64_t ldk, int64_t nb, int64_t Ep, float (*sc)[kBk], const AttnPrefetch* pf) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr int V = Ld::kChunk;
  int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (R <= kDotRows)
    for (; j + 4 <= nb; j += 4) Dots4Keys<R, Ld>(q, ldq, kt + j * ldk, ldk, Ep, sc, j, pf);
#else
  (void)pf;
#endif
  for (; j < nb; ++j) {
    const typename Ld::T* kr = kt + j * ldk;
    VF a[R];
    for (int r = 0; r < R; ++r) a[r] = hn::Zero(d);
    for (int64_t c = 0; c < Ep; c += V * N) {
      VF kv[V];
      Ld::Load(kr + c, kv);
      for (int v = 0; v < V; ++v)
        for (int r = 0; r < R; ++r) a[r] = hn::MulAdd(hn::LoadU(d, q + r * ldq + c + v * N), kv[v], a[r]);
    }
    for (int r = 0; r < R; ++r) sc[r][j] = hn::GetLane(hn::SumOfLanes(d, a[r]));
  }
}

// acc_r[0..Evp) += sum_j p[r][j] * v_j for R (1..4) rows, two vectors of
// columns at a time: 2R independent FMA chains per key, so the FMA latency
// stays hidden even with one row.
template <int R, class Ld>
HWY_INLINE void AccumulatePV(const float (*p)[kBk], const typename Ld::T* HWY_RESTRICT vt, int64_t ldv,
                             int64_t nb, int64_t Evp, float* HWY_RESTRICT acc, int64_t lda,
                             const AttnPrefetch* pf) {
  static_assert(Ld::kChunk == 1 || Ld::kChunk == 2, "one or two vectors per step");
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  constexpr int64_t esz = int64_t(sizeof(typename Ld::T));
  int64_t c = 0;
  for (; c + 2 * N <= Evp; c += 2 * N) {
    // The next tile's V rows, these columns: one tile ahead, spread over this
    // pass as the score pass spreads the next tile's K.
    const char* pvn = pf != nullptr ? pf->v : nullptr;
    VF a[R], b[R];
    for (int r = 0; r < R; ++r) {
      a[r] = hn::LoadU(d, acc + r * lda + c);
      b[r] = hn::LoadU(d, acc + r * lda + c + N);
    }
    for (int64_t j = 0; j < nb; ++j) {
      if (pvn != nullptr)
        for (int64_t o = c * esz; o < (c + 2 * N) * esz; o += 64)
          __builtin_prefetch(pvn + j * pf->vs + o, 0, 2);
      VF vv[2];
      if constexpr (Ld::kChunk == 2) {
        Ld::Load(vt + j * ldv + c, vv);
      } else {
        Ld::Load(vt + j * ldv + c, vv);
        Ld::Load(vt + j * ldv + c + N, vv + 1);
      }
      for (int r = 0; r < R; ++r) {
        const VF pr = hn::Set(d, p[r][j]);
        a[r] = hn::MulAdd(pr, vv[0], a[r]);
        b[r] = hn::MulAdd(pr, vv[1], b[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      hn::StoreU(a[r], d, acc + r * lda + c);
      hn::StoreU(b[r], d, acc + r * lda + c + N);
    }
  }
  if constexpr (Ld::kChunk == 1)  // pairs only run with Evp a multiple of 2N
    for (; c < Evp; c += N) {
      VF a[R];
      for (int r = 0; r < R; ++r) a[r] = hn::LoadU(d, acc + r * lda + c);
      for (int64_t j = 0; j < nb; ++j) {
        VF vv;
        Ld::Load(vt + j * ldv + c, &vv);
        for (int r = 0; r < R; ++r) a[r] = hn::MulAdd(hn::Set(d, p[r][j]), vv, a[r]);
      }
      for (int r = 0; r < R; ++r) hn::StoreU(a[r], d, acc + r * lda + c);
    }
}

// f.template operator()<n>() for a run-time row count n in 1..kMax; 0 does nothing.
template <int kMax, class F>
HWY_INLINE void WithRows(int64_t n, F&& f) {
  static_assert(kMax >= 1 && kMax <= 4, "1..4 rows");
  if constexpr (kMax >= 4)
    if (n == 4) return f.template operator()<4>();
  if constexpr (kMax >= 3)
    if (n == 3) return f.template operator()<3>();
  if constexpr (kMax >= 2)
    if (n == 2) return f.template operator()<2>();
  if (n == 1) f.template operator()<1>();
}

template <class Ld>
void AllDots(const float* q, int64_t ldq, int64_t R, const typename Ld::T* kt, int64_t ldk, int64_t nb,
             int64_t Ep, float (*sc)[kBk], const AttnPrefetch* pf = nullptr) {
  // The first pass over the keys prefetches; later row groups find them cached.
  int64_t r = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kRowOrder) {
    r = std::min<int64_t>(R, kRowOrderRows);
    WithRows<kRowOrderRows>(r, [&]<int n>() { DotsRowOrder<n, Ld>(q, ldq, kt, ldk, nb, Ep, sc, pf); });
    pf = nullptr;
  }
#endif
  for (; r + kDotRows <= R; r += kDotRows, pf = nullptr)
    Dots<kDotRows, Ld>(q + r * ldq, ldq, kt, ldk, nb, Ep, sc + r, pf);
  WithRows<3>(R - r, [&]<int n>() { Dots<n, Ld>(q + r * ldq, ldq, kt, ldk, nb, Ep, sc + r, pf); });
}

template <class Ld>
void AllPV(const float (*p)[kBk], int64_t R, const typename Ld::T* vt, int64_t ldv, int64_t nb, int64_t Evp,
           float* acc, int64_t lda, const AttnPrefetch* pf = nullptr) {
  // The first row group prefetches, as in AllDots.
  int64_t r = 0;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (kRowOrder) {
    r = std::min<int64_t>(R, kRowOrderRows);
    WithRows<kRowOrderRows>(r, [&]<int n>() { AccumulatePVRowOrder<n, Ld>(p, vt, ldv, nb, Evp, acc, lda, pf); });
    pf = nullptr;
  }
#endif
  for (; r + 4 <= R; r += 4, pf = nullptr)
    AccumulatePV<4, Ld>(p + r, vt, ldv, nb, Evp, acc + r * lda, lda, pf);
  WithRows<3>(R - r, [&]<int n>() { AccumulatePV<n, Ld>(p + r, vt, ldv, nb, Evp, acc + r * lda, lda, pf); });
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_ATTENTION_TILES_INL_H_
