// The block kernels of gemv_blocks.h. Every activation row sums
//   y = sum_g a_g * sum_{i in g} q_i x_i  +  sum_g b_g * xs_g
// with xs_g = sum_{i in g} x_i computed once per call. Q4_0, Q4_1, Q4_K and
// Q8_0 read q in place from the blocks, with the f16 scales of a ~4 KiB tile
// of rows converted first; the other types split each row into q [K] int8
// and a, b [K / G] in thread-local buffers that stay in L1. q widens to
// float32 exactly; the products and sums are float32 as in the FMA kernels.
// With x in float32 the vector ports bound the 4-bit types (widen, nibble,
// convert, FMA: ~1.75 cycles per 16 weights), not the memory bus; every row is
// prefetched ahead (kPrefetchAhead), one stream a thread leaving the hardware
// prefetcher short.
#include "cpu/gemv_blocks.h"

#include <algorithm>
#include <vector>

#include "core/scratch.h"
#include "cpu/block_split.h"
#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "kiln/thread_pool.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemv_blocks.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/block_split_vec-inl.h"  // F16Scales, K45Scales, SplitFast

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Blocks are prefetched this many bytes ahead of the line being read, a
// line per line read: each thread walks its rows as one stream, which the
// hardware prefetcher alone kept well under the read roof. In-process A/B,
// Zen 3, 2 threads, 4096x4096 weights cold, against no prefetch: Q4_0 1.22x,
// Q4_1 1.23x, Q4_K 1.49x, Q8_0 1.37x (1 KiB ahead: 1.01-1.33x; 8 KiB: as 4).
constexpr int64_t kPrefetchAhead = 4096;

// sum_i q_i x_i per group, scaled by a_g, over `groups` groups of G; four
// groups at a time so the scaled sums run in four independent chains.
// Group g's q at q + g * qs (qs = G for a split row, the block size in
// bytes where q is read in place, as for Q8_0).
// kAhead > 0: q is read in place from a row of blocks followed by the rows
// still to come, and each step prefetches its lines kAhead bytes on.
template <int G, int64_t kAhead = 0>
float ScaledGroupDot(const int8_t* q, int64_t qs, const float* a, const float* x, int64_t groups) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  auto widen = [&](const int8_t* p) { return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, p))); };
  auto t0 = hn::Zero(df), t1 = hn::Zero(df), t2 = hn::Zero(df), t3 = hn::Zero(df);
  int64_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    const int8_t* qg = q + g * qs;
    const float* xg = x + g * G;
    if constexpr (kAhead > 0)
      for (int64_t o = 0; o < 4 * qs; o += 64) __builtin_prefetch(qg + kAhead + o, 0, 3);
    auto p0 = hn::Zero(df), p1 = hn::Zero(df), p2 = hn::Zero(df), p3 = hn::Zero(df);
    for (int64_t k = 0; k < G; k += L) {
      p0 = hn::MulAdd(widen(qg + k), hn::LoadU(df, xg + k), p0);
      p1 = hn::MulAdd(widen(qg + qs + k), hn::LoadU(df, xg + G + k), p1);
      p2 = hn::MulAdd(widen(qg + 2 * qs + k), hn::LoadU(df, xg + 2 * G + k), p2);
      p3 = hn::MulAdd(widen(qg + 3 * qs + k), hn::LoadU(df, xg + 3 * G + k), p3);
    }
    t0 = hn::MulAdd(p0, hn::Set(df, a[g]), t0);
    t1 = hn::MulAdd(p1, hn::Set(df, a[g + 1]), t1);
    t2 = hn::MulAdd(p2, hn::Set(df, a[g + 2]), t2);
    t3 = hn::MulAdd(p3, hn::Set(df, a[g + 3]), t3);
  }
  for (; g < groups; ++g) {
    auto p = hn::Zero(df);
    for (int64_t k = 0; k < G; k += L) p = hn::MulAdd(widen(q + g * qs + k), hn::LoadU(df, x + g * G + k), p);
    t0 = hn::MulAdd(p, hn::Set(df, a[g]), t0);
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(t0, t1), hn::Add(t2, t3))));
}

// sum_i u_i v_i over n floats.
float Dot(const float* u, const float* v, int64_t n) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    s0 = hn::MulAdd(hn::LoadU(df, u + i), hn::LoadU(df, v + i), s0);
    s1 = hn::MulAdd(hn::LoadU(df, u + i + L), hn::LoadU(df, v + i + L), s1);
  }
  float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) s += u[i] * v[i];
  return s;
}

// xs[m * groups + g] = sum of x row m's group g (G elements).
void GroupSums(const float* x, int64_t ldx, int64_t M, int64_t K, int64_t G, float* xs) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t groups = K / G;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t g = 0; g < groups; ++g) {
      const float* p = x + m * ldx + g * G;
      auto s = hn::Zero(df);
      for (int64_t k = 0; k < G; k += L) s = hn::Add(s, hn::LoadU(df, p + k));
      xs[m * groups + g] = hn::GetLane(hn::SumOfLanes(df, s));
    }
}

#if HWY_TARGET != HWY_SCALAR
// Q4_0, Q4_1 and Q4_K: the matrix-vector kernel reads the nibbles straight
// from the blocks (widen, mask or shift, convert: ~2x faster than splitting
// them into q first); only the scales are split. Q4_0's q - 8 is summed as
// q with the offset b = -8a.
bool NibbleDirect(BlockType t) {
  return t == BlockType::Q4_0 || t == BlockType::Q4_1 || t == BlockType::Q4_K;
}

void NibbleScales(BlockType t, const uint8_t* src, int64_t nb, float* a, float* b) {
  const int64_t bytes = block_type_info(t).block_bytes;
  if (t == BlockType::Q4_K) return K45Scales(src, bytes, nb, a, b);
  F16Scales(src, bytes, nb, a);
  if (t == BlockType::Q4_1) return F16Scales(src + 2, bytes, nb, b);
  for (int64_t i = 0; i < nb; ++i) b[i] = -8.0f * a[i];
}

// sum_g a_g * sum_{i in g} q_i x_i with q the blocks' nibbles.
float NibbleDot(BlockType t, const uint8_t* row, int64_t nb, const float* a, const float* x) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  const auto lo4 = hn::Set(di, 15);
  auto t0 = hn::Zero(df), t1 = hn::Zero(df), t2 = hn::Zero(df), t3 = hn::Zero(df);
  // 16 * r bytes at p: low nibbles against x[0, 16r), high ones against xh.
#if HWY_TARGET <= HWY_AVX3
  // vpermps from the float table 0..15 reads only an index's low 4 bits: one
  // uop for mask-and-convert (~10% of the kernel, which the vector ports bound).
  const auto iota = hn::Iota(df, 0.0f);
  auto low = [&](hn::Vec<decltype(di)> v) {
    return hn::Vec<decltype(df)>{_mm512_permutexvar_ps(v.raw, iota.raw)};
  };
  auto high = [&](hn::Vec<decltype(di)> v) { return low(hn::ShiftRight<4>(v)); };
#else
  auto low = [&](hn::Vec<decltype(di)> v) { return hn::ConvertTo(df, hn::And(v, lo4)); };
  auto high = [&](hn::Vec<decltype(di)> v) { return hn::ConvertTo(df, hn::ShiftRight<4>(v)); };
#endif
  auto run = [&](const uint8_t* p, const float* xl, const float* xh, int64_t n, auto& plo, auto& phi) {
    for (int64_t k = 0; k < n; k += L) {
      const auto v = hn::PromoteTo(di, hn::LoadU(d8, p + k));
      plo = hn::MulAdd(low(v), hn::LoadU(df, xl + k), plo);
      phi = hn::MulAdd(high(v), hn::LoadU(df, xh + k), phi);
    }
  };
  if (t == BlockType::Q4_K) {
    // Chunk c of a super-block: 32 bytes, low nibbles group 2c, high 2c + 1.
    for (int64_t blk = 0; blk < nb; ++blk)
      for (int c = 0; c < 4; c += 2) {
        const uint8_t* p = row + blk * 144 + 16 + c * 32;
        __builtin_prefetch(p + kPrefetchAhead, 0, 3);
        const float* xg = x + blk * 256 + c * 64;
        auto p0 = hn::Zero(df), p1 = hn::Zero(df), p2 = hn::Zero(df), p3 = hn::Zero(df);
        run(p, xg, xg + 32, 32, p0, p1);
        run(p + 32, xg + 64, xg + 96, 32, p2, p3);
        const float* ag = a + blk * 8 + c * 2;
        t0 = hn::MulAdd(p0, hn::Set(df, ag[0]), t0);
        t1 = hn::MulAdd(p1, hn::Set(df, ag[1]), t1);
        t2 = hn::MulAdd(p2, hn::Set(df, ag[2]), t2);
        t3 = hn::MulAdd(p3, hn::Set(df, ag[3]), t3);
      }
  } else {
    // A block: 16 bytes, low nibbles elements 0-15, high ones 16-31.
    const int64_t bytes = block_type_info(t).block_bytes, off = t == BlockType::Q4_0 ? 2 : 4;
    int64_t blk = 0;
    // One sum per block (low and high nibbles into the same accumulator),
    // so each block costs one scaling FMA; two blocks in flight.
    for (; blk + 2 <= nb; blk += 2) {
      __builtin_prefetch(row + blk * bytes + kPrefetchAhead, 0, 3);
      auto p0 = hn::Zero(df), p1 = hn::Zero(df);
      run(row + blk * bytes + off, x + blk * 32, x + blk * 32 + 16, 16, p0, p0);
      run(row + (blk + 1) * bytes + off, x + blk * 32 + 32, x + blk * 32 + 48, 16, p1, p1);
      if (blk & 2) {
        t0 = hn::MulAdd(p0, hn::Set(df, a[blk]), t0);
        t1 = hn::MulAdd(p1, hn::Set(df, a[blk + 1]), t1);
      } else {
        t2 = hn::MulAdd(p0, hn::Set(df, a[blk]), t2);
        t3 = hn::MulAdd(p1, hn::Set(df, a[blk + 1]), t3);
      }
    }
    if (blk < nb) {
      auto p0 = hn::Zero(df), p1 = hn::Zero(df);
      run(row + blk * bytes + off, x + blk * 32, x + blk * 32 + 16, 16, p0, p1);
      t0 = hn::MulAdd(hn::Add(p0, p1), hn::Set(df, a[blk]), t0);
    }
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(t0, t1), hn::Add(t2, t3))));
}
#endif

void Split(BlockType t, const uint8_t* src, int64_t nb, int8_t* q, float* a, float* b) {
#if HWY_TARGET != HWY_SCALAR
  if (SplitFast(t, src, nb, q, a, b)) return;
#endif
  split_blocks(t, src, nb, q, a, b);
}

// Buffers for one split row, grown as needed and kept by the thread.
struct SplitRow {
  std::vector<int8_t> q;
  std::vector<float> a, b;
  // q for K elements; a and b for `groups` groups.
  void fit(int64_t K, int64_t groups) {
    if (int64_t(q.size()) < K) q.resize(size_t(K));
    if (int64_t(a.size()) < groups) {
      a.resize(size_t(groups));
      b.resize(size_t(groups));
    }
  }
};

void BlockGemvRows(const BlockGemvArgs& a, const float* xs, int64_t n0, int64_t n1) {
  thread_local SplitRow row;
  const int64_t G = split_group(a.type), groups = a.K / G;
  const int64_t nblocks = a.K / block_type_info(a.type).block_size;
  const int64_t row_bytes = nblocks * block_type_info(a.type).block_bytes;
  const bool offset = split_has_offset(a.type);
#if HWY_TARGET != HWY_SCALAR
  if (a.type == BlockType::Q8_0 || NibbleDirect(a.type)) {
    // The scales of a tile of rows in one pass where rows follow each other
    // (a small model's rows of 576 elements are 18 blocks: per-row calls cost
    // nearly as much as the sums), then the rows' sums from them.
    // ~4 KiB of blocks a tile. In-process A/B (Emerald Rapids, 2 threads):
    // 576-element Q4_1 rows 1.2x per-row scales; 16-32 KiB tiles lost 1.35x
    // on 4096-element Q4_K rows (the sums re-read the tile from L2).
    const int64_t tile = a.ldw == row_bytes ? std::max<int64_t>(1, 4096 / row_bytes) : 1;
    row.fit(0, tile * groups);
    for (int64_t n = n0; n < n1; n += tile) {
      const int64_t rows = std::min(tile, n1 - n);
      const uint8_t* w0 = a.w + n * a.ldw;
      if (a.type == BlockType::Q8_0)
        F16Scales(w0, 34, rows * nblocks, row.a.data());
      else
        NibbleScales(a.type, w0, rows * nblocks, row.a.data(), row.b.data());
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* wr = w0 + r * a.ldw;
        const float* ar = row.a.data() + r * groups;
        for (int64_t m = 0; m < a.M; ++m) {
          const float* x = a.x + m * a.ldx;
          float s;
          if (a.type == BlockType::Q8_0) {  // int8 q read in place, 2 bytes into each 34-byte block
            s = ScaledGroupDot<32, kPrefetchAhead>(reinterpret_cast<const int8_t*>(wr + 2), 34, ar, x,
                                                   nblocks);
          } else {
            s = NibbleDot(a.type, wr, nblocks, ar, x);
            s += Dot(row.b.data() + r * groups, xs + m * groups, groups);
          }
          a.y[m * a.ldy + n + r] = a.bias ? s + a.bias[n + r] : s;
        }
      }
    }
    return;
  }
#endif
  row.fit(a.K, groups);
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* wn = a.w + n * a.ldw;
    for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(wn + kPrefetchAhead + o, 0, 3);
    Split(a.type, wn, nblocks, row.q.data(), row.a.data(), row.b.data());
    for (int64_t m = 0; m < a.M; ++m) {
      const float* x = a.x + m * a.ldx;
      float s = G == 16 ? ScaledGroupDot<16>(row.q.data(), 16, row.a.data(), x, groups)
                        : ScaledGroupDot<32>(row.q.data(), 32, row.a.data(), x, groups);
      if (offset) s += Dot(row.b.data(), xs + m * groups, groups);
      a.y[m * a.ldy + n] = a.bias ? s + a.bias[n] : s;
    }
  }
}

// out[n * K + i] = a[i / G] * q[i] (+ b[i / G]): two roundings, as the reference.
void WidenRows(BlockType t, const uint8_t* w, int64_t ldw, int64_t K, int64_t n0, int64_t n1, float* out) {
  thread_local SplitRow row;
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t G = split_group(t), nblocks = K / block_type_info(t).block_size;
  const bool offset = split_has_offset(t);
  row.fit(K, K / G);
  for (int64_t n = n0; n < n1; ++n) {
    Split(t, w + n * ldw, nblocks, row.q.data(), row.a.data(), row.b.data());
    float* o = out + (n - n0) * K;
    for (int64_t g = 0; g < K / G; ++g) {
      const auto sa = hn::Set(df, row.a[size_t(g)]);
      const auto sb = hn::Set(df, offset ? row.b[size_t(g)] : 0.0f);
      for (int64_t k = g * G; k < (g + 1) * G; k += L) {
        auto v = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, row.q.data() + k))), sa);
        if (offset) v = hn::Add(v, sb);
        hn::StoreU(v, df, o + k);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(BlockGemvRows);
HWY_EXPORT(GroupSums);
HWY_EXPORT(WidenRows);

void block_gemv(const BlockGemvArgs& a) {
  if (a.N <= 0 || a.M <= 0) return;
  thread_local std::vector<float> xs_buf;
  const int64_t G = split_group(a.type);
  const float* xs = nullptr;
  if (split_has_offset(a.type) || a.type == BlockType::Q4_0) {  // Q4_0: the nibble kernel's offset
    if (int64_t(xs_buf.size()) < a.M * (a.K / G)) xs_buf.resize(size_t(a.M * (a.K / G)));
    HWY_DYNAMIC_DISPATCH(GroupSums)(a.x, a.ldx, a.M, a.K, G, xs_buf.data());
    xs = xs_buf.data();
  }
  // Chunks of at least ~32 KiB of blocks, so a hand-off pays for itself.
  const int64_t grain = std::max<int64_t>(8, (int64_t(32) << 10) / std::max<int64_t>(1, a.ldw));
  parallel_for(0, a.N, grain, [&](int64_t n0, int64_t n1) {
    HWY_DYNAMIC_DISPATCH(BlockGemvRows)(a, xs, n0, n1);
  });
}

void block_product(const BlockGemvArgs& a) {
  if (a.M <= kLinearGemvMaxRows)
    block_gemv(a);
  else
    block_gemm(a);
}

void dequantize_block_rows(BlockType t, const uint8_t* w, int64_t ldw, int64_t K, int64_t n0, int64_t n1,
                           float* out) {
  if (n1 <= n0 || K <= 0) return;
  HWY_DYNAMIC_DISPATCH(WidenRows)(t, w, ldw, K, n0, n1, out);
}

void block_gemm(const BlockGemvArgs& a) {
  if (a.N <= 0 || a.M <= 0) return;
  GemvArgs g;
  g.x = a.x;
  g.ldx = a.ldx;
  g.M = a.M;
  g.K = a.K;
  g.ldw = a.K;
  g.ldy = a.ldy;
  g.y_dtype = DType::Float32;
  g.x_exact = true;
  const ScratchBlock xbuf(size_t(gemm_packed_x_floats(DType::Float32, a.M, a.K)) * sizeof(float));
  float* xp = xbuf.as<float>();
  gemm_pack_x(DType::Float32, g, xp);
  // Panels of ~1 MiB of float32 rows, a multiple of 16 rows.
  const int64_t rows = std::max<int64_t>(16, ((int64_t(1) << 18) / std::max<int64_t>(1, a.K)) / 16 * 16);
  const int64_t panels = (a.N + rows - 1) / rows;
  parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> panel;
    if (int64_t(panel.size()) < rows * a.K) panel.resize(size_t(rows * a.K));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * rows, n1 = std::min(a.N, n0 + rows);
      HWY_DYNAMIC_DISPATCH(WidenRows)(a.type, a.w, a.ldw, a.K, n0, n1, panel.data());
      GemvArgs h = g;
      h.w = panel.data();
      h.N = n1 - n0;
      h.y = a.y + n0;
      h.bias = a.bias ? a.bias + n0 : nullptr;
      gemm_packed_rows(DType::Float32, h, xp, 0, n1 - n0);
    }
  });
}

}  // namespace kiln::cpu
#endif
