// Attention over one KV head's key range with an online softmax (Highway,
// dynamic dispatch): AttendBlock walks the range tile by tile (kAttnKeyBlock
// keys, or in decode two runs of kHalfBk keys), applies masks, causal limits
// and dropout, keeps each row's running max, sum and accumulator, and
// prefetches the next tile while this one computes. The per-tile kernels
// (scores, p @ V) and the order in which they read K and V are in
// attention_tiles-inl.h.
#include "cpu/attention.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "cpu/attention_amx.h"
#include "cpu/attention_tiles-inl.h"
#include "cpu/exp-inl.h"
#include "kiln/float_types.h"
#include "kiln/random.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
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
  // Many rows over a bf16 cache read in place: scores and p @ V as AMX tile
  // products (attention_amx.h; 2.8x the FMA kernels' speed for a 1024-token
  // prefill's attention, Sapphire Rapids-class core).
  const bool amx = R >= 16 && bf16 && k_direct && v_direct && AttnAmx::usable(b.E, b.Ev);
  // bf16 K and V both read in place: widened as pairs (LoadBf16Pairs) where
  // the target has the registers for it (AVX-512) or reads rows in address
  // order, and rows are whole 2N chunks; q and the accumulators then go in
  // pair order for this call.
  const bool pairs = !amx && (hn::MaxLanes(d) >= 16 || kRowOrder) && bf16 && k_direct && v_direct &&
                     Ep % (2 * N) == 0 && Evp % (2 * N) == 0;
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
  const bool two_runs = !amx && kRowOrder && R <= kRowOrderRows && b.mask == nullptr &&
                        !(b.dropout.p > 0.0f) && all_see && k_direct && v_direct && s1 - s0 >= kBk;
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
  std::optional<AttnAmx> tiles;
  if (amx) tiles.emplace(q, R, Ep, b.E, b.Ev);
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
    if (amx) {
      tiles->scores(kt16, b.ks, nb, &sc[0][0]);
    } else if (two_runs) {
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
      if (!two_runs && (b.limit != nullptr || b.mask != nullptr)) {  // two runs: every key visible
        // Keys j < vis are within the row's causal limit.
        const int64_t vis = b.limit != nullptr ? std::clamp<int64_t>(b.limit[r] - j0 + 1, 0, nb) : nb;
        if (b.mask != nullptr)
          for (int64_t j = 0; j < vis; ++j) s[j] += b.mask[r][j0 + j];
        for (int64_t j = vis; j < nb; ++j) s[j] = ninf;
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
    if (amx) {
      tiles->accumulate_pv(&sc[0][0], vt16, b.vs, nb, A, lda);
    } else if (two_runs) {
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
