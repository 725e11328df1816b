// Tiled attention with an online softmax (Highway, dynamic dispatch).
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
#include "cpu/attention.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/exp-inl.h"
#include "cpu/gemv-inl.h"
#include "kiln/float_types.h"
#include "kiln/random.h"

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
// per step (either may be null).
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

// Keep / drop of element (row, key) from Philox.
HWY_INLINE bool Keep(const AttnDropout& dr, int64_t row, int64_t key) {
  const uint64_t idx = uint64_t(row) * uint64_t(dr.S) + uint64_t(key);
  uint32_t w[4];
  philox(dr.offset + idx / 4, dr.seed, w);
  const float u = float(w[idx % 4] >> 8) * (1.0f / 16777216.0f);
  return u >= dr.p;
}

// Read prefetches (into L2) for rows [j, j + n) of length `bytes`, `stride`
// bytes apart, starting at base.
HWY_INLINE void PrefetchRows(const char* base, int64_t j, int64_t n, int64_t stride, int64_t bytes) {
  for (int64_t r = j; r < j + n; ++r) {
    const char* row = base + r * stride;
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(row + o, 0, 2);
  }
}

void AttendBlock(const AttnBlock& b, int64_t s0, int64_t s1, float* m, float* l, float* acc, int64_t lda) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t R = b.rows, Ep = b.ldq, Evp = lda;
  const float ninf = -std::numeric_limits<float>::infinity();
  if (b.limit != nullptr) {
    int64_t lim = -1;
    for (int64_t r = 0; r < R; ++r) lim = std::max(lim, b.limit[r]);
    s1 = std::min(s1, lim + 1);
  }
  // float32 and bf16 rows whose length is a whole number of vectors are read in
  // place (bf16 widened in registers); others are widened into padded tiles.
  const bool direct_type = b.kv == KVType::F32 || b.kv == KVType::BF16;
  const bool k_direct = direct_type && Ep == b.E && b.E % N == 0;
  const bool v_direct = direct_type && Evp == b.Ev && b.Ev % N == 0;
  const bool bf16 = b.kv == KVType::BF16;
  // bf16 K and V both read in place: widened as pairs (LoadBf16Pairs) where
  // the target has the registers for it (AVX-512) or reads rows in address
  // order, and rows are whole 2N chunks; q and the accumulators then go in
  // pair order for this call.
  const bool pairs = (hn::MaxLanes(d) >= 16 || kRowOrder) && bf16 && k_direct && v_direct && Ep % (2 * N) == 0 &&
                     Evp % (2 * N) == 0;
  thread_local std::vector<float> qpair, apair;
  const float* q = b.q;
  float* A = acc;
  if (pairs) {
    qpair.resize(size_t(R * Ep));
    apair.resize(size_t(R * lda));
    for (int64_t r = 0; r < R; ++r) {
      gemv::ToChunkOrder(b.q + r * b.ldq, qpair.data() + r * Ep, Ep, 2 * N);
      gemv::ToChunkOrder(acc + r * lda, apair.data() + r * lda, Evp, 2 * N);
    }
    q = qpair.data();
    A = apair.data();
  }
  // Decode with up to 4 rows on a row-order target (no mask, no dropout, every
  // row sees every key of [s0, s1), K and V read in place): the range's two
  // halves go through together, key j of the first beside key j of the
  // second, a tile holding kHalfBk keys of each. One core's hardware
  // prefetcher streams two runs faster than one (one thread summing 128 MB:
  // ~9.5 GB/s as one run, ~12 as two in lockstep, on a Zen 3 core).
  bool all_see = true;
  if (b.limit != nullptr)
    for (int64_t r = 0; r < R; ++r) all_see = all_see && b.limit[r] >= s1 - 1;
  const bool two_runs = kRowOrder && R <= kRowOrderRows && b.mask == nullptr && !(b.dropout.p > 0.0f) && all_see &&
                        k_direct && v_direct && s1 - s0 >= kBk;
  // Run a: [s0, sb), whole halves of tiles; run b: [sb, s1), no longer.
  const int64_t sb = two_runs ? s0 + ((s1 - s0 + 1) / 2 + kHalfBk - 1) / kHalfBk * kHalfBk : s1;
  thread_local std::vector<float> kbuf, vbuf;
  if (!k_direct) kbuf.resize(size_t(kBk * Ep));
  if (!v_direct) vbuf.resize(size_t(kBk * Evp));
  const size_t esz = b.kv == KVType::F32 ? 4 : 2;
  HWY_ALIGN float sc[kAttnMaxRows][kBk];
  const char* kbytes = static_cast<const char*>(b.k);
  const char* vbytes = static_cast<const char*>(b.v);
  if (two_runs) {
    for (const int64_t j : {s0, sb}) {
      PrefetchRows(kbytes, j, std::min(kHalfBk, s1 - j), b.ks * esz, b.E * esz);
      PrefetchRows(vbytes, j, std::min(kHalfBk, s1 - j), b.vs * esz, b.Ev * esz);
    }
  } else if (s0 < s1) {
    PrefetchRows(kbytes, s0, std::min(kBk, s1 - s0), b.ks * esz, b.E * esz);
    PrefetchRows(vbytes, s0, std::min(kBk, s1 - s0), b.vs * esz, b.Ev * esz);
  }
  const int64_t step = two_runs ? kHalfBk : kBk;
  for (int64_t j0 = s0; j0 < sb; j0 += step) {
    // Two runs: columns [0, kHalfBk) are keys j0.., [kHalfBk, nb) keys jb..
    const int64_t jb = sb + (j0 - s0);
    const int64_t nb_b = two_runs ? std::clamp<int64_t>(s1 - jb, 0, kHalfBk) : 0;
    const int64_t nb = two_runs ? kHalfBk + nb_b : std::min(kBk, s1 - j0);
    // The next tile's K and V are prefetched one line per row and step, K
    // during the score pass and V during p @ V, so the misses overlap the
    // arithmetic all through the tile: decode attention streams K and V once
    // from memory, and with the hardware prefetcher alone it ran at ~0.35 of
    // the read roof (it restarts at every 4 KiB page). A burst of prefetches
    // per tile cost more than it saved.
    const AttnPrefetch next{kbytes + size_t(j0 + kBk) * size_t(b.ks) * esz,
                            vbytes + size_t(j0 + kBk) * size_t(b.vs) * esz, b.ks * int64_t(esz),
                            b.vs * int64_t(esz)};
    const AttnPrefetch* pf = j0 + kBk < s1 ? &next : nullptr;
    const bfloat16* kt16 = static_cast<const bfloat16*>(b.k) + j0 * b.ks;
    // Two runs: each run's next kHalfBk keys.
    const AttnPrefetch next_a{kbytes + size_t(j0 + kHalfBk) * size_t(b.ks) * esz,
                              vbytes + size_t(j0 + kHalfBk) * size_t(b.vs) * esz, b.ks * int64_t(esz),
                              b.vs * int64_t(esz)};
    const AttnPrefetch next_b{kbytes + size_t(jb + kHalfBk) * size_t(b.ks) * esz,
                              vbytes + size_t(jb + kHalfBk) * size_t(b.vs) * esz, b.ks * int64_t(esz),
                              b.vs * int64_t(esz)};
    const AttnPrefetch* pfa = j0 + kHalfBk < sb ? &next_a : nullptr;
    const AttnPrefetch* pfb = jb + kHalfBk < s1 ? &next_b : nullptr;
    // ld: a loader tag (LoadF32, LoadBf16, LoadBf16Pairs); kv: K or V at position 0.
#if HWY_TARGET != HWY_SCALAR
    auto two_run_dots = [&](auto ld, const auto* kv) {
      using Ld = decltype(ld);
      const auto* ka = kv + j0 * b.ks;
      WithRows<kRowOrderRows>(R, [&]<int n>() {
        DotsTwoRuns<n, Ld>(q, Ep, ka, kv + jb * b.ks, b.ks, nb_b, Ep, sc, pfa, pfb);
        if (nb_b < kHalfBk)  // run b ended: the rest of run a's keys alone
          DotsRowOrder<n, Ld>(q, Ep, ka + nb_b * b.ks, b.ks, kHalfBk - nb_b, Ep, sc, nullptr, nb_b);
      });
    };
    auto two_run_pv = [&](auto ld, const auto* kv) {
      using Ld = decltype(ld);
      const auto* va = kv + j0 * b.vs;
      WithRows<kRowOrderRows>(R, [&]<int n>() {
        AccumulatePVTwoRuns<n, Ld>(sc, va, kv + jb * b.vs, b.vs, nb_b, Evp, A, lda, pfa, pfb);
        if (nb_b < kHalfBk)
          AccumulatePVRowOrder<n, Ld>(sc, va + nb_b * b.vs, b.vs, kHalfBk - nb_b, Evp, A, lda, nullptr, nb_b);
      });
    };
#else
    (void)pfa;
    (void)pfb;
    auto two_run_dots = [](auto, const auto*) {};
    auto two_run_pv = [](auto, const auto*) {};
#endif
    if (two_runs) {
      if (pairs)
        two_run_dots(LoadBf16Pairs{}, static_cast<const bfloat16*>(b.k));
      else if (bf16)
        two_run_dots(LoadBf16{}, static_cast<const bfloat16*>(b.k));
      else
        two_run_dots(LoadF32{}, static_cast<const float*>(b.k));
    } else if (pairs) {
      AllDots<LoadBf16Pairs>(q, Ep, R, kt16, b.ks, nb, Ep, sc, pf);
    } else if (k_direct && bf16) {
      AllDots<LoadBf16>(q, Ep, R, kt16, b.ks, nb, Ep, sc, pf);
    } else if (k_direct) {
      AllDots<LoadF32>(q, Ep, R, static_cast<const float*>(b.k) + j0 * b.ks, b.ks, nb, Ep, sc, pf);
    } else {
      for (int64_t j = 0; j < nb; ++j)
        Widen(static_cast<const char*>(b.k) + size_t(j0 + j) * size_t(b.ks) * esz, b.kv, kbuf.data() + j * Ep,
              b.E, Ep);
      AllDots<LoadF32>(q, Ep, R, kbuf.data(), Ep, nb, Ep, sc);
    }
    // Mask, online softmax update, probabilities in place of the scores.
    for (int64_t r = 0; r < R; ++r) {
      float* s = sc[r];
      if (!two_runs && (b.limit != nullptr || b.mask != nullptr))  // two runs: every key visible
        for (int64_t j = 0; j < nb; ++j) {
          if (b.limit != nullptr && j0 + j > b.limit[r])
            s[j] = ninf;
          else if (b.mask != nullptr)
            s[j] += b.mask[r][j0 + j];
        }
      for (int64_t j = nb; j < kBk; ++j) s[j] = ninf;
      // The tile's max, and whether it holds a NaN (SIMD max may drop one).
      VF vmax = hn::Set(d, ninf);
      auto vnan = hn::Zero(d);
      for (int64_t j = 0; j < kBk; j += N) {
        const VF v = hn::LoadU(d, s + j);
        vmax = hn::Max(vmax, v);
        vnan = hn::Or(vnan, hn::VecFromMask(d, hn::IsNaN(v)));
      }
      const float bm = hn::GetLane(hn::MaxOfLanes(d, vmax));
      const bool nan = !hn::AllTrue(d, hn::Eq(vnan, hn::Zero(d)));
      if (nan) {  // NaN scores make the row NaN, as torch's softmax
        m[r] = std::numeric_limits<float>::quiet_NaN();
        l[r] = std::numeric_limits<float>::quiet_NaN();
      }
      if (bm == ninf || std::isnan(m[r])) {
        for (int64_t j = 0; j < kBk; ++j) s[j] = 0.0f;
        continue;
      }
      const float mn = std::max(m[r], bm);
      // 0 when m was -inf; 1 (no call) when the max did not grow, the usual case.
      const float corr = mn == m[r] ? 1.0f : std::exp(m[r] - mn);
      const VF vmn = hn::Set(d, mn);
      VF sum = hn::Zero(d);
      for (int64_t j = 0; j < kBk; j += N) {
        const VF e = ExpNonPos(d, hn::Sub(hn::LoadU(d, s + j), vmn));
        hn::StoreU(e, d, s + j);
        sum = hn::Add(sum, e);
      }
      l[r] = l[r] * corr + hn::GetLane(hn::SumOfLanes(d, sum));
      m[r] = mn;
      if (corr != 1.0f) {
        float* a = A + r * lda;
        const VF vc = hn::Set(d, corr);
        for (int64_t c = 0; c < Evp; c += N) hn::StoreU(hn::Mul(hn::LoadU(d, a + c), vc), d, a + c);
      }
      if (b.dropout.p > 0.0f) {
        const float keep_scale = 1.0f / (1.0f - b.dropout.p);
        for (int64_t j = 0; j < nb; ++j)
          s[j] = Keep(b.dropout, b.dropout.row_id[r], j0 + j) ? s[j] * keep_scale : 0.0f;
      }
    }
    const bfloat16* vt16 = static_cast<const bfloat16*>(b.v) + j0 * b.vs;
    if (two_runs) {
      if (pairs)
        two_run_pv(LoadBf16Pairs{}, static_cast<const bfloat16*>(b.v));
      else if (bf16)
        two_run_pv(LoadBf16{}, static_cast<const bfloat16*>(b.v));
      else
        two_run_pv(LoadF32{}, static_cast<const float*>(b.v));
    } else if (pairs) {
      AllPV<LoadBf16Pairs>(sc, R, vt16, b.vs, nb, Evp, A, lda, pf);
    } else if (v_direct && bf16) {
      AllPV<LoadBf16>(sc, R, vt16, b.vs, nb, Evp, A, lda, pf);
    } else if (v_direct) {
      AllPV<LoadF32>(sc, R, static_cast<const float*>(b.v) + j0 * b.vs, b.vs, nb, Evp, A, lda, pf);
    } else {
      for (int64_t j = 0; j < nb; ++j)
        Widen(static_cast<const char*>(b.v) + size_t(j0 + j) * size_t(b.vs) * esz, b.kv,
              vbuf.data() + j * Evp, b.Ev, Evp);
      AllPV<LoadF32>(sc, R, vbuf.data(), Evp, nb, Evp, A, lda);
    }
  }
  if (pairs)
    for (int64_t r = 0; r < R; ++r) gemv::FromChunkOrder(apair.data() + r * lda, acc + r * lda, Evp, 2 * N);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(AttendBlock);

void attend_block(const AttnBlock& b, int64_t s0, int64_t s1, float* m, float* l, float* acc, int64_t ldacc) {
  HWY_DYNAMIC_DISPATCH(AttendBlock)(b, s0, s1, m, l, acc, ldacc);
}

int64_t attn_padded(int64_t n) { return (n + 15) / 16 * 16; }

}  // namespace kiln::cpu
#endif
