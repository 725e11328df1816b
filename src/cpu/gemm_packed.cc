// The packed GEMM for bf16 / f16 / FP8 (and float32) weights (see gemm.h):
// y[M, N] = x[M, K] @ (W * scale)^T + bias, one range of W's rows per call.
//
// Blocking:
//   x is packed once (gemm_pack_x) into token blocks of NR = NV vectors of
//     lanes, k-major within each block of kKC along K:
//     xp[tb][kb][k][NR], tokens past M zero;
//   W's rows are widened kNG at a time, one K block at a time, into a float32
//     panel wp[kNG][kKC] with the scale applied, by the matrix-vector kernels'
//     widening loaders (gemv-inl.h): every weight is widened once per block
//     of up to ~4 MiB of x (once per call, for most calls);
//   the micro-kernel multiplies MR panel rows by one token block with MR * NV
//     accumulators and k innermost: a weight is a broadcast load, a token
//     vector feeds MR FMAs. Both operands sit in L1/L2 while they are used.
// The loaders return each chunk of C * L weights in their own lane order
// (evens, then odds); x is packed in the same order, so the sums are unchanged.
#include "cpu/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemm_packed.cc"
#include <hwy/aligned_allocator.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/gemv-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace packed {

using gemv::DF;
using gemv::VF;

constexpr int64_t kKC = 256;  // K per block: a multiple of 128 (block scales) and of every chunk
constexpr int64_t kNG = 192;  // weight rows per widened panel: a multiple of every kMR

// The scale (times the loader's kMult) of W[n, k].
HWY_INLINE float ScaleAt(const GemvArgs& a, float mult, int64_t n, int64_t k) {
  switch (a.scale_kind) {
    case ScaleKind::Tensor:
      return mult * a.scale[0];
    case ScaleKind::Row:
      return mult * a.scale[n];
    case ScaleKind::Block:
      return mult * a.scale[(n / kScaleBlock) * a.scale_ld + k / kScaleBlock];
    default:
      return mult;
  }
}

// wp[r][0, kc) = W[n + r, k0 + .] * scale in loader order, for r < rows; rows
// up to rpad are zero.
template <class W>
void WidenPanel(const GemvArgs& a, int64_t n, int64_t rows, int64_t rpad, int64_t k0, int64_t kc,
                float* HWY_RESTRICT wp) {
  using T = typename W::T;
  constexpr int C = W::kChunk;
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t CL = C * L;
  const int64_t kv = kc / CL * CL;
  for (int64_t r = 0; r < rows; ++r) {
    const T* HWY_RESTRICT src = static_cast<const T*>(a.w) + (n + r) * a.ldw + k0;
    float* HWY_RESTRICT d = wp + r * kKC;
    float s = ScaleAt(a, W::kMult, n + r, k0);
    for (int64_t j = 0; j < kv; j += CL) {
      if (a.scale_kind == ScaleKind::Block && (k0 + j) % kScaleBlock == 0)
        s = ScaleAt(a, W::kMult, n + r, k0 + j);
      VF v[C];
      W::Load(src + j, v);
      const VF sv = hn::Set(df, s);
      for (int c = 0; c < C; ++c) hn::StoreU(hn::Mul(v[c], sv), df, d + j + c * L);
      if constexpr (gemv::HasNanCode<W>()) {
        gemv::NanCodeSteps step;
        step.Add(src + j);
        if (HWY_UNLIKELY(step.Any())) {
          // Code i of the chunk sits at lane (i & 1) * 2L + i / 2 (even bytes, then odd).
          const uint8_t* b = reinterpret_cast<const uint8_t*>(src + j);
          for (int64_t i = 0; i < CL; ++i)
            if ((b[i] & 0x7F) == 0x7F) d[j + (i & 1) * 2 * L + i / 2] = NAN;
        }
      }
    }
    for (int64_t j = kv; j < kc; ++j) d[j] = W::One(src[j]) * ScaleAt(a, W::kMult, n + r, k0 + j);
  }
  for (int64_t r = rows; r < rpad; ++r) std::fill(wp + r * kKC, wp + r * kKC + kc, 0.0f);
}

// Token lanes per block: one vector when M fits in it, else two.
HWY_INLINE int64_t TokenLanes(int64_t M) {
  const int64_t L = int64_t(hn::Lanes(DF()));
  return M <= L ? L : 2 * L;
}

#if HWY_TARGET != HWY_SCALAR
// Rows r[0..4) -> columns: r[i][j] goes to lane i of r[j].
HWY_INLINE void Transpose4(hn::Vec<hn::Full128<float>>* r) {
  const hn::Full128<float> d;
  const auto t0 = hn::InterleaveLower(d, r[0], r[1]), t1 = hn::InterleaveLower(d, r[2], r[3]);
  const auto t2 = hn::InterleaveUpper(d, r[0], r[1]), t3 = hn::InterleaveUpper(d, r[2], r[3]);
  r[0] = hn::ConcatLowerLower(d, t1, t0);
  r[1] = hn::ConcatUpperUpper(d, t1, t0);
  r[2] = hn::ConcatLowerLower(d, t3, t2);
  r[3] = hn::ConcatUpperUpper(d, t3, t2);
}
#endif

// blk[k][NR] = x[t0 + t, k0 + source(k)] for t < tn, zero for tn <= t < NR:
// one K block of one token block, in the loader order of C-chunks. Four
// tokens at a time go through 4x4 transposes in registers.
template <int C>
void PackBlock(const GemvArgs& a, int64_t t0, int64_t tn, int64_t k0, int64_t kc, int64_t NR,
               float* HWY_RESTRICT blk) {
  const int64_t CL = C * int64_t(hn::Lanes(DF()));
  const int64_t kv = kc / CL * CL;
  int64_t t = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<float> d4;
  using V4 = hn::Vec<decltype(d4)>;
  for (; t + 4 <= tn; t += 4) {
    const float* HWY_RESTRICT src[4];
    for (int i = 0; i < 4; ++i) src[i] = a.x + (t0 + t + i) * a.ldx + k0;
    float* HWY_RESTRICT dst = blk + t;
    for (int64_t c = 0; c < kv; c += CL) {
      if constexpr (C == 1) {
        for (int64_t j = 0; j < CL; j += 4) {
          V4 r[4];
          for (int i = 0; i < 4; ++i) r[i] = hn::LoadU(d4, src[i] + c + j);
          Transpose4(r);
          for (int i = 0; i < 4; ++i) hn::StoreU(r[i], d4, dst + (c + j + i) * NR);
        }
      } else {  // evens to the chunk's first half, odds to its second
        for (int64_t j = 0; j < CL / 2; j += 4) {
          V4 ev[4], od[4];
          for (int i = 0; i < 4; ++i) hn::LoadInterleaved2(d4, src[i] + c + 2 * j, ev[i], od[i]);
          Transpose4(ev);
          Transpose4(od);
          for (int i = 0; i < 4; ++i) {
            hn::StoreU(ev[i], d4, dst + (c + j + i) * NR);
            hn::StoreU(od[i], d4, dst + (c + CL / 2 + j + i) * NR);
          }
        }
      }
    }
    for (int64_t k = kv; k < kc; ++k)
      for (int i = 0; i < 4; ++i) dst[k * NR + i] = src[i][k];
  }
#endif
  for (; t < tn; ++t) {
    const float* HWY_RESTRICT src = a.x + (t0 + t) * a.ldx + k0;
    float* HWY_RESTRICT dst = blk + t;
    for (int64_t c = 0; c < kv; c += CL) {
      if constexpr (C == 1) {
        for (int64_t j = 0; j < CL; ++j) dst[(c + j) * NR] = src[c + j];
      } else {
        for (int64_t j = 0; j < CL / 2; ++j) {
          dst[(c + j) * NR] = src[c + 2 * j];
          dst[(c + CL / 2 + j) * NR] = src[c + 2 * j + 1];
        }
      }
    }
    for (int64_t k = kv; k < kc; ++k) dst[k * NR] = src[k];
  }
  for (; t < NR; ++t)
    for (int64_t k = 0; k < kc; ++k) blk[k * NR + t] = 0.0f;
}

// A per-thread buffer that grows as needed, aligned to 64 bytes: the
// micro-kernel's full-vector loads of packed x must not straddle cache lines.
struct AlignedScratch {
  hwy::AlignedFreeUniquePtr<float[]> p;
  size_t n = 0;
  float* get(size_t need) {
    if (need > n) {
      p = hwy::AllocateAligned<float>(need);
      n = need;
    }
    return p.get();
  }
};

HWY_INLINE int64_t KBlocks(int64_t K) { return (K + kKC - 1) / kKC; }

// Token blocks [tb0, tb1) of x, every K block.
template <int C>
void PackX(const GemvArgs& a, int64_t tb0, int64_t tb1, float* HWY_RESTRICT xp) {
  const int64_t NR = TokenLanes(a.M), kblocks = KBlocks(a.K);
  for (int64_t tb = tb0; tb < tb1; ++tb)
    for (int64_t kb = 0; kb < kblocks; ++kb)
      PackBlock<C>(a, tb * NR, std::min(NR, a.M - tb * NR), kb * kKC, std::min(kKC, a.K - kb * kKC), NR,
                   xp + (tb * kblocks + kb) * kKC * NR);
}

// tile[r][NR] (+)= sum over k < kc of wp[r][k] * xb[k][NR], r < MR: the
// first K block sets the tile, later ones add to it.
template <int MR, int NV>
HWY_INLINE void Micro(const float* HWY_RESTRICT wp, const float* HWY_RESTRICT xb, int64_t kc, bool first,
                      float* HWY_RESTRICT tile) {
  const DF df;
  const int64_t L = int64_t(hn::Lanes(df));
  const int64_t NR = NV * L;
  VF acc[MR * NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r * NV + v] = first ? hn::Zero(df) : hn::LoadU(df, tile + r * NR + v * L);
  for (int64_t k = 0; k < kc; ++k) {
    VF xv[NV];
    for (int v = 0; v < NV; ++v) xv[v] = hn::LoadU(df, xb + k * NR + v * L);
    for (int r = 0; r < MR; ++r) {
      const VF w = hn::Set(df, wp[r * kKC + k]);
      for (int v = 0; v < NV; ++v) acc[r * NV + v] = hn::MulAdd(w, xv[v], acc[r * NV + v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) hn::StoreU(acc[r * NV + v], df, tile + r * NR + v * L);
}

// Loop nest, per block of up to ~4 MiB of packed x (MC tokens) and per panel
// of kNG weight rows: over K blocks (widen the panel), token blocks, micro
// tiles. The sums build up in c[tb][kNG][NR] (L1/L2) and go to y once, with
// the bias, after the last K block: y's rows are far apart, so touching y per
// K block would miss the caches at every store.
template <class W, int MR, int NV>
void Rows(const GemvArgs& a, const float* HWY_RESTRICT xp, int64_t n0, int64_t n1) {
  using T = typename W::T;
  static_assert(kNG % MR == 0, "panel rows must hold whole micro tiles");
  const int64_t NR = NV * int64_t(hn::Lanes(DF()));
  const int64_t kblocks = KBlocks(a.K);
  const int64_t ntb_all = (a.M + NR - 1) / NR;
  const int64_t mc_blocks =
      std::min(ntb_all, std::max<int64_t>(1, (int64_t(4) << 20) / (4 * kblocks * kKC * NR)));
  thread_local AlignedScratch wbuf, cbuf;
  float* HWY_RESTRICT wp = wbuf.get(size_t(kNG * kKC));
  float* HWY_RESTRICT c = cbuf.get(size_t(mc_blocks * kNG * NR));
  float* HWY_RESTRICT y = static_cast<float*>(a.y);
  for (int64_t tb0 = 0; tb0 < ntb_all; tb0 += mc_blocks) {
    const int64_t ntb = std::min(mc_blocks, ntb_all - tb0);
    const int64_t m0 = tb0 * NR, mc = std::min(ntb * NR, a.M - m0);
    for (int64_t ng = n0; ng < n1; ng += kNG) {
      const int64_t rows = std::min(kNG, n1 - ng), rpad = (rows + MR - 1) / MR * MR;
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        const int64_t k0 = kb * kKC, kc = std::min(kKC, a.K - k0);
        WidenPanel<W>(a, ng, rows, rpad, k0, kc, wp);
        // The weights the next WidenPanel reads, prefetched a micro tile's
        // rows at a time while this block's tiles run: with few token blocks
        // (M <= 32: one) the widening would otherwise wait on memory with
        // nothing to overlap it. In-process A/B (Zen 5, 2 threads, M = 8-128,
        // four shapes): bf16 1.03-1.19x, FP8 1.03-1.22x, f32 1.02-1.05x.
        int64_t pn = ng, pk = k0 + kKC;
        if (pk >= a.K) pn += kNG, pk = 0;
        const int64_t prows = pn < n1 ? std::min(kNG, n1 - pn) : 0;
        const int64_t pbytes = std::min(kKC, a.K - pk) * int64_t(sizeof(T));
        for (int64_t tb = 0; tb < ntb; ++tb) {
          const float* HWY_RESTRICT xk = xp + ((tb0 + tb) * kblocks + kb) * kKC * NR;
          for (int64_t r0 = 0; r0 < rpad; r0 += MR) {
            if (tb == 0)
              for (int64_t r = r0; r < std::min(r0 + MR, prows); ++r) {
                // Every line the row's bytes touch, from the first one's start.
                const T* src = static_cast<const T*>(a.w) + (pn + r) * a.ldw + pk;
                const uintptr_t p0 = reinterpret_cast<uintptr_t>(src);
                for (uintptr_t p = p0 & ~uintptr_t(63); p < p0 + uintptr_t(pbytes); p += 64)
                  gemv::PrefetchAhead(reinterpret_cast<const void*>(p), false);
              }
            Micro<MR, NV>(wp + r0 * kKC, xk, kc, kb == 0, c + (tb * kNG + r0) * NR);
          }
        }
      }
      for (int64_t t = 0; t < mc; ++t) {
        const float* HWY_RESTRICT src = c + ((t / NR) * kNG) * NR + t % NR;
        float* HWY_RESTRICT dst = y + (m0 + t) * a.ldy + ng;
        for (int64_t r = 0; r < rows; ++r) {
          const float v = src[r * NR] + (a.bias ? a.bias[ng + r] : 0.0f);
          dst[r] = a.accumulate ? dst[r] + v : v;
        }
      }
    }
  }
}

// One register tile shape per token count: a single vector of tokens with 12
// weight rows when M fits in it, else two vectors with 6 rows (12
// accumulators either way, within AVX2's 16 registers beside the operands).
// AVX-512's 32 registers take 12 rows of two vectors: 24 accumulators, each
// token vector loaded feeds 12 FMAs, not 6. Emerald Rapids, M = 512,
// 4096 x 4096, two threads, in-process, interleaved with OpenBLAS's SkylakeX
// sgemm (median of 15 per-sample ratios, four runs): bf16 1.04-1.07x its
// time and FP8 1.03-1.07x, against 1.10-1.33x and 1.09-1.11x with 6 rows; 8
// rows were in between. (Zen 4 and 5 take the same shape: not measured.)
template <class W>
void RowsFor(const GemvArgs& a, const float* xp, int64_t n0, int64_t n1) {
  if (TokenLanes(a.M) == int64_t(hn::Lanes(DF()))) return Rows<W, 12, 1>(a, xp, n0, n1);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  return Rows<W, 12, 2>(a, xp, n0, n1);
#else
  return Rows<W, 6, 2>(a, xp, n0, n1);
#endif
}

// The widening loader's chunk for each weight dtype (what x's order follows).
HWY_INLINE int ChunkOf(DType w_dtype) {
  switch (w_dtype) {
    case DType::BFloat16:
      return gemv::WidenBF16::kChunk;
    case DType::Float8_e4m3fn:
      return gemv::WidenE4M3::kChunk;
    case DType::Float8_e5m2:
      return gemv::WidenE5M2::kChunk;
    default:
      return 1;
  }
}

}  // namespace packed

int64_t GemmPackedXFloats(DType w_dtype, int64_t M, int64_t K) {
  (void)w_dtype;
  const int64_t NR = packed::TokenLanes(M);
  return (M + NR - 1) / NR * NR * packed::KBlocks(K) * packed::kKC;
}

int64_t GemmPackedXBlocks(int64_t M) {
  const int64_t NR = packed::TokenLanes(M);
  return (M + NR - 1) / NR;
}

void GemmPackX(DType w_dtype, const GemvArgs& a, int64_t tb0, int64_t tb1, float* xp) {
  switch (packed::ChunkOf(w_dtype)) {
    case 1:
      return packed::PackX<1>(a, tb0, tb1, xp);
    case 2:
      return packed::PackX<2>(a, tb0, tb1, xp);
    default:
      return packed::PackX<4>(a, tb0, tb1, xp);
  }
}

void GemmPackedRows(DType w_dtype, const GemvArgs& a, const float* xp, int64_t n0, int64_t n1) {
  switch (w_dtype) {
    case DType::Float32:
      return packed::RowsFor<gemv::WidenF32>(a, xp, n0, n1);
    case DType::BFloat16:
      return packed::RowsFor<gemv::WidenBF16>(a, xp, n0, n1);
    case DType::Float16:
      return packed::RowsFor<gemv::WidenF16>(a, xp, n0, n1);
    case DType::Float8_e4m3fn:
      return packed::RowsFor<gemv::WidenE4M3>(a, xp, n0, n1);
    case DType::Float8_e5m2:
      return packed::RowsFor<gemv::WidenE5M2>(a, xp, n0, n1);
    default:
      return;  // gemm_packed_rows rejects it before dispatch
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <string>

#include "core/scratch.h"
#include "kiln/error.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
HWY_EXPORT(GemmPackedXFloats);
HWY_EXPORT(GemmPackedXBlocks);
HWY_EXPORT(GemmPackX);
HWY_EXPORT(GemmPackedRows);

namespace {
void check_weight_dtype(DType w_dtype) {
  KILN_CHECK(w_dtype == DType::Float32 || w_dtype == DType::BFloat16 || w_dtype == DType::Float16 ||
                 w_dtype == DType::Float8_e4m3fn || w_dtype == DType::Float8_e5m2,
             TypeError, "[gemm] unsupported weight dtype " << name(w_dtype));
}
}  // namespace

int64_t gemm_packed_x_floats(DType w_dtype, int64_t M, int64_t K) {
  if (M <= 0 || K <= 0) return 0;
  return HWY_DYNAMIC_DISPATCH(GemmPackedXFloats)(w_dtype, M, K);
}

void gemm_pack_x(DType w_dtype, const GemvArgs& a, float* xp) {
  check_weight_dtype(w_dtype);
  if (a.M <= 0 || a.K <= 0) return;
  if (bf16_gemm_takes(w_dtype, a)) return gemm_bf16_pack_x(a, reinterpret_cast<uint32_t*>(xp));
  KILN_CHECK(a.x != nullptr, ValueError, "[gemm] bf16 x rows without the AVX512-BF16 GEMM");
  const int64_t blocks = HWY_DYNAMIC_DISPATCH(GemmPackedXBlocks)(a.M);
  // Blocks of up to 128 KiB of x per hand-off (runs inline when nested).
  const int64_t grain = std::max<int64_t>(1, (int64_t(128) << 10) / std::max<int64_t>(1, 4 * 16 * a.K));
  parallel_for(0, blocks, grain, [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(GemmPackX)(w_dtype, a, b, e, xp);
  });
}

void gemm_packed_rows(DType w_dtype, const GemvArgs& a, const float* xp, int64_t n0, int64_t n1) {
  check_weight_dtype(w_dtype);
  if (n1 <= n0 || a.M <= 0) return;
  if (a.K == 0) {  // an empty sum: the bias, or zeros
    float* y = static_cast<float*>(a.y);
    for (int64_t m = 0; m < a.M; ++m)
      for (int64_t n = n0; n < n1; ++n) {
        const float b = a.bias ? a.bias[n] : 0.0f;
        y[m * a.ldy + n] = a.accumulate ? y[m * a.ldy + n] + b : b;
      }
    return;
  }
  KILN_CHECK(!a.w_kmajor || bf16_gemm_takes(w_dtype, a), NotImplementedError,
             "[gemm] a k-major W needs the bf16 GEMM and bf16 weights");
  if (bf16_gemm_takes(w_dtype, a))
    return gemm_bf16_rows(w_dtype, a, reinterpret_cast<const uint32_t*>(xp), n0, n1);
  HWY_DYNAMIC_DISPATCH(GemmPackedRows)(w_dtype, a, xp, n0, n1);
}

void gemm_packed(DType w_dtype, const GemvArgs& a) {
  if (a.M <= 0 || a.N <= 0) return;
  const ScratchBlock xbuf(size_t(gemm_packed_x_floats(w_dtype, a.M, a.K)) * sizeof(float));
  float* xp = xbuf.as<float>();
  gemm_pack_x(w_dtype, a, xp);
  // One contiguous range of W's rows per thread, in whole 32-row tiles (the
  // AMX kernel's; its bf16 weights are read in place only in whole tiles).
  const int64_t tiles = (a.N + 31) / 32;
  const int64_t per = (tiles + num_threads() - 1) / num_threads();
  parallel_for(0, tiles, per, [&](int64_t b, int64_t e) {
    gemm_packed_rows(w_dtype, a, xp, b * 32, std::min(a.N, e * 32));
  });
}

}  // namespace kiln::cpu
#endif
