// Batched small solves with Highway dynamic dispatch (see linalg_small.h).
//
// Layout inside a chunk: the augmented matrix [A | C] (n rows, n + m columns)
// of L = Lanes(d) systems is transposed into a structure of arrays, element
// (i, j) of system l at buf[(i * w + j) * L + l], so every scalar step of
// Gauss-Jordan becomes one vector operation over L systems. Row swaps differ
// per lane; they are selects on the pivot index vector.
#include "cpu/linalg_small.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/linalg_small.cc"
#include <hwy/aligned_allocator.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kiln/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One chunk of up to L systems; `live` of them are real (the rest are padded
// with identity matrices so they never produce zero pivots or NaNs).
template <int NT, typename T>
HWY_INLINE void GaussJordanChunk(const T* HWY_RESTRICT a, T* HWY_RESTRICT c, int32_t* HWY_RESTRICT info,
                                 int64_t live, int n_rt, int m, bool identity_rhs, T* HWY_RESTRICT buf) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t L = hn::Lanes(d);
  const int n = NT > 0 ? NT : n_rt;
  const int w = n + m;
  auto at = [&](int i, int j) { return buf + (size_t(i) * w + j) * L; };

  // Gather: AoS -> SoA.
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      T* dst = at(i, j);
      for (int64_t l = 0; l < live; ++l) dst[l] = a[l * n * n + i * n + j];
      for (size_t l = live; l < L; ++l) dst[l] = T(i == j);
    }
    for (int j = 0; j < m; ++j) {
      T* dst = at(i, n + j);
      if (identity_rhs) {
        for (size_t l = 0; l < L; ++l) dst[l] = T(i == j);
      } else {
        for (int64_t l = 0; l < live; ++l) dst[l] = c[l * n * m + i * m + j];
        for (size_t l = live; l < L; ++l) dst[l] = T(0);
      }
    }
  }

  // Lanes whose A holds a NaN end with an all-NaN result and info 0
  // (kiln.linalg's rule, whatever the elimination made of the NaN).
  auto no_nan = hn::Not(hn::IsNaN(hn::Load(d, at(0, 0))));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) no_nan = hn::AndNot(hn::IsNaN(hn::Load(d, at(i, j))), no_nan);

  V inf = hn::Zero(d);  // first zero pivot, 1-based, per lane (as T)
  const V zero = hn::Zero(d);
  for (int k = 0; k < n; ++k) {
    // Pivot: the first row r >= k with the largest |a(r, k)|.
    V best = hn::Abs(hn::Load(d, at(k, k)));
    V piv = hn::Set(d, T(k));
    for (int r = k + 1; r < n; ++r) {
      const V v = hn::Abs(hn::Load(d, at(r, k)));
      const auto gt = hn::Gt(v, best);
      best = hn::IfThenElse(gt, v, best);
      piv = hn::IfThenElse(gt, hn::Set(d, T(r)), piv);
    }
    for (int r = k + 1; r < n; ++r) {
      const auto sw = hn::Eq(piv, hn::Set(d, T(r)));
      if (hn::AllFalse(d, sw)) continue;
      for (int j = k; j < w; ++j) {
        const V x = hn::Load(d, at(k, j)), y = hn::Load(d, at(r, j));
        hn::Store(hn::IfThenElse(sw, y, x), d, at(k, j));
        hn::Store(hn::IfThenElse(sw, x, y), d, at(r, j));
      }
    }
    const V p = hn::Load(d, at(k, k));
    const auto is_zero = hn::Eq(p, zero);
    inf = hn::IfThenElse(hn::And(is_zero, hn::Eq(inf, zero)), hn::Set(d, T(k + 1)), inf);
    const V rp = hn::Div(hn::Set(d, T(1)), p);
    for (int j = k + 1; j < w; ++j) hn::Store(hn::Mul(hn::Load(d, at(k, j)), rp), d, at(k, j));
    for (int i = 0; i < n; ++i) {
      if (i == k) continue;
      const V f = hn::Load(d, at(i, k));
      for (int j = k + 1; j < w; ++j)
        hn::Store(hn::NegMulAdd(f, hn::Load(d, at(k, j)), hn::Load(d, at(i, j))), d, at(i, j));
    }
  }

  // Scatter: SoA -> AoS (the C part only).
  const V nan = hn::Set(d, std::numeric_limits<T>::quiet_NaN());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      T* src = at(i, n + j);
      hn::Store(hn::IfThenElse(no_nan, hn::Load(d, src), nan), d, src);
      for (int64_t l = 0; l < live; ++l) c[l * n * m + i * m + j] = src[l];
    }
  HWY_ALIGN T infos[hn::MaxLanes(d)];
  hn::Store(hn::IfThenElse(no_nan, inf, zero), d, infos);
  for (int64_t l = 0; l < live; ++l) info[l] = int32_t(infos[l]);
}

#if !HWY_HAVE_SCALABLE
// The inverse of N <= 4 matrices with [A | I] held entirely in registers
// (fixed-size vectors can live in arrays; every loop below has a constant
// trip count and unrolls, so the array is scalar-replaced). Same arithmetic
// and pivot order as GaussJordanChunk.
template <int N, typename T>
HWY_INLINE void InverseRegs(const T* HWY_RESTRICT a, T* HWY_RESTRICT c, int32_t* HWY_RESTRICT info,
                            int64_t live, T* HWY_RESTRICT buf) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t L = hn::Lanes(d);
  const hn::RebindToSigned<decltype(d)> di;
  // Lane l reads matrix l: element e of every lane in one gather.
  const auto stride = hn::Mul(hn::Iota(di, 0), hn::Set(di, hn::TFromD<decltype(di)>(N * N)));
  const bool full = live == int64_t(L);
  const V zero = hn::Zero(d), one = hn::Set(d, T(1));
  V m[N][2 * N];
  if (full) {
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) m[i][j] = hn::GatherIndex(d, a + i * N + j, stride);
  } else {
    for (int e = 0; e < N * N; ++e) {
      T* dst = buf + size_t(e) * L;
      for (int64_t l = 0; l < live; ++l) dst[l] = a[l * N * N + e];
      for (size_t l = live; l < L; ++l) dst[l] = T(e / N == e % N);
    }
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) m[i][j] = hn::Load(d, buf + size_t(i * N + j) * L);
  }
  auto no_nan = hn::Not(hn::IsNaN(m[0][0]));  // as in GaussJordanChunk
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) no_nan = hn::AndNot(hn::IsNaN(m[i][j]), no_nan);
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m[i][N + j] = i == j ? one : zero;
  V inf = zero;
  for (int k = 0; k < N; ++k) {
    V best = hn::Abs(m[k][k]);
    V piv = hn::Set(d, T(k));
    for (int r = k + 1; r < N; ++r) {
      const V v = hn::Abs(m[r][k]);
      const auto gt = hn::Gt(v, best);
      best = hn::IfThenElse(gt, v, best);
      piv = hn::IfThenElse(gt, hn::Set(d, T(r)), piv);
    }
    for (int r = k + 1; r < N; ++r) {
      const auto sw = hn::Eq(piv, hn::Set(d, T(r)));
      for (int j = k; j < 2 * N; ++j) {
        const V x = m[k][j], y = m[r][j];
        m[k][j] = hn::IfThenElse(sw, y, x);
        m[r][j] = hn::IfThenElse(sw, x, y);
      }
    }
    const V p = m[k][k];
    inf = hn::IfThenElse(hn::And(hn::Eq(p, zero), hn::Eq(inf, zero)), hn::Set(d, T(k + 1)), inf);
    const V rp = hn::Div(one, p);
    for (int j = k + 1; j < 2 * N; ++j) m[k][j] = hn::Mul(m[k][j], rp);
    for (int i = 0; i < N; ++i) {
      if (i == k) continue;
      const V f = m[i][k];
      for (int j = k + 1; j < 2 * N; ++j) m[i][j] = hn::NegMulAdd(f, m[k][j], m[i][j]);
    }
  }
  const V nan = hn::Set(d, std::numeric_limits<T>::quiet_NaN());
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) m[i][N + j] = hn::IfThenElse(no_nan, m[i][N + j], nan);
  inf = hn::IfThenElse(no_nan, inf, zero);
  if (full) {
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) hn::ScatterIndex(m[i][N + j], d, c + i * N + j, stride);
  } else {
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) hn::Store(m[i][N + j], d, buf + size_t(i * N + j) * L);
    for (int e = 0; e < N * N; ++e) {
      const T* src = buf + size_t(e) * L;
      for (int64_t l = 0; l < live; ++l) c[l * N * N + e] = src[l];
    }
  }
  HWY_ALIGN T infos[hn::MaxLanes(d)];
  hn::Store(inf, d, infos);
  for (int64_t l = 0; l < live; ++l) info[l] = int32_t(infos[l]);
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// Every loop below has a constant trip count; unrolled, its arrays of vectors
// become registers.
#define KILN_UNROLL _Pragma("GCC unroll 16")

// 16 x 16 float transpose in registers: lane j of r[i] -> lane i of r[j].
// Unpack pairs of rows, then pairs of pairs (as doubles), then the 4 x 4
// grid of 128-bit blocks in two steps of shuffle_f32x4.
HWY_INLINE void Transpose16x16(__m512 r[16]) {
  __m512 a[16], b[16];
  KILN_UNROLL
  for (int p = 0; p < 8; ++p) {
    a[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
    a[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
  }
  KILN_UNROLL
  for (int q = 0; q < 4; ++q) {  // b[4q + e], block k: element 4k + e of rows 4q..4q+3
    const __m512d a0 = _mm512_castps_pd(a[4 * q]), a1 = _mm512_castps_pd(a[4 * q + 1]);
    const __m512d a2 = _mm512_castps_pd(a[4 * q + 2]), a3 = _mm512_castps_pd(a[4 * q + 3]);
    b[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
    b[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
    b[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
    b[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
  }
  KILN_UNROLL
  for (int e = 0; e < 4; ++e) {  // block k of b[e], b[4+e], b[8+e], b[12+e] -> r[4k + e]
    const __m512 u0 = _mm512_shuffle_f32x4(b[e], b[4 + e], 0x44),
                 u1 = _mm512_shuffle_f32x4(b[e], b[4 + e], 0xEE);
    const __m512 u2 = _mm512_shuffle_f32x4(b[8 + e], b[12 + e], 0x44),
                 u3 = _mm512_shuffle_f32x4(b[8 + e], b[12 + e], 0xEE);
    r[e] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    r[4 + e] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    r[8 + e] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
}

// Inverses of 16 consecutive 4x4 float matrices (a, c: 16 x 16 floats, one
// matrix per 64 bytes): 16 contiguous loads transposed so lane l holds matrix
// l, in-place Gauss-Jordan with the same pivots and arithmetic as
// InverseRegs (the identity half lives in the columns already eliminated; the
// row swaps become column swaps at the end), transposed back, 16 contiguous
// stores. Only 16 live vectors: no spills, no gathers or scatters.
HWY_INLINE void Inverse4x16F32(const float* HWY_RESTRICT a, float* HWY_RESTRICT c,
                               int32_t* HWY_RESTRICT info) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  __m512 r[16];
  KILN_UNROLL
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(a + 16 * i);
  Transpose16x16(r);
  V m[4][4];
  KILN_UNROLL
  for (int i = 0; i < 4; ++i) {
    KILN_UNROLL
    for (int j = 0; j < 4; ++j) m[i][j] = V{r[4 * i + j]};
  }
  auto no_nan = hn::Not(hn::IsNaN(m[0][0]));  // as in GaussJordanChunk
  KILN_UNROLL
  for (int i = 0; i < 4; ++i) {
    KILN_UNROLL
    for (int j = 0; j < 4; ++j) no_nan = hn::AndNot(hn::IsNaN(m[i][j]), no_nan);
  }
  const V zero = hn::Zero(d), one = hn::Set(d, 1.0f);
  V inf = zero, pk[4];
  KILN_UNROLL
  for (int k = 0; k < 4; ++k) {
    V best = hn::Abs(m[k][k]);
    V piv = hn::Set(d, float(k));
    KILN_UNROLL
    for (int q = k + 1; q < 4; ++q) {
      const V v = hn::Abs(m[q][k]);
      const auto gt = hn::Gt(v, best);
      best = hn::IfThenElse(gt, v, best);
      piv = hn::IfThenElse(gt, hn::Set(d, float(q)), piv);
    }
    pk[k] = piv;
    KILN_UNROLL
    for (int q = k + 1; q < 4; ++q) {
      const auto sw = hn::Eq(piv, hn::Set(d, float(q)));
      KILN_UNROLL
      for (int j = 0; j < 4; ++j) {
        const V x = m[k][j], y = m[q][j];
        m[k][j] = hn::IfThenElse(sw, y, x);
        m[q][j] = hn::IfThenElse(sw, x, y);
      }
    }
    const V p = m[k][k];
    inf = hn::IfThenElse(hn::And(hn::Eq(p, zero), hn::Eq(inf, zero)), hn::Set(d, float(k + 1)), inf);
    const V rp = hn::Div(one, p);
    KILN_UNROLL
    for (int j = 0; j < 4; ++j) m[k][j] = j == k ? rp : hn::Mul(m[k][j], rp);
    KILN_UNROLL
    for (int i = 0; i < 4; ++i) {
      if (i == k) continue;
      const V f = m[i][k];
      KILN_UNROLL
      for (int j = 0; j < 4; ++j)
        m[i][j] = j == k ? hn::Neg(hn::Mul(f, rp)) : hn::NegMulAdd(f, m[k][j], m[i][j]);
    }
  }
  KILN_UNROLL
  for (int k = 3; k >= 0; --k) {  // undo the row swaps as column swaps, last first
    KILN_UNROLL
    for (int q = k + 1; q < 4; ++q) {
      const auto sw = hn::Eq(pk[k], hn::Set(d, float(q)));
      KILN_UNROLL
      for (int i = 0; i < 4; ++i) {
        const V x = m[i][k], y = m[i][q];
        m[i][k] = hn::IfThenElse(sw, y, x);
        m[i][q] = hn::IfThenElse(sw, x, y);
      }
    }
  }
  const V nan = hn::Set(d, std::numeric_limits<float>::quiet_NaN());
  KILN_UNROLL
  for (int i = 0; i < 4; ++i) {
    KILN_UNROLL
    for (int j = 0; j < 4; ++j) r[4 * i + j] = hn::IfThenElse(no_nan, m[i][j], nan).raw;
  }
  inf = hn::IfThenElse(no_nan, inf, zero);
  Transpose16x16(r);
  KILN_UNROLL
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(c + 16 * i, r[i]);
  const hn::RebindToSigned<decltype(d)> di;
  hn::StoreU(hn::ConvertTo(di, inf), di, info);
}
#undef KILN_UNROLL
#endif

template <typename T>
void GaussJordanRange(const T* a, T* c, int32_t* info, int64_t begin, int64_t end, int n, int m,
                      bool identity_rhs) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  // Scratch for one chunk of [A | C] (n, m <= 16), on the stack where it fits
  // (every fixed-width target): no allocation per call.
  constexpr size_t kBuf = size_t(kSmallMaxN) * (kSmallMaxN + kSmallMaxRhs) * hn::MaxLanes(d);
  constexpr bool kOnStack = kBuf * sizeof(T) <= 65536;
  HWY_ALIGN T stack_buf[kOnStack ? kBuf : 1];
  hwy::AlignedFreeUniquePtr<T[]> heap_buf = kOnStack ? nullptr : hwy::AllocateAligned<T>(kBuf);
  T* buf = kOnStack ? stack_buf : heap_buf.get();
  for (int64_t b = begin; b < end; b += int64_t(L)) {
    const int64_t live = std::min<int64_t>(int64_t(L), end - b);
    const T* ab = a + b * n * n;
    T* cb = c + b * n * m;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (std::is_same_v<T, float>) {
      if (identity_rhs && n == 4 && live == 16) {
        Inverse4x16F32(ab, cb, info + b);
        continue;
      }
    }
#endif
#if !HWY_HAVE_SCALABLE
    if (identity_rhs && n <= 4) {
      switch (n) {
        case 2:
          InverseRegs<2>(ab, cb, info + b, live, buf);
          continue;
        case 3:
          InverseRegs<3>(ab, cb, info + b, live, buf);
          continue;
        case 4:
          InverseRegs<4>(ab, cb, info + b, live, buf);
          continue;
        default:
          break;
      }
    }
#endif
    switch (n) {
      case 2:
        GaussJordanChunk<2>(ab, cb, info + b, live, n, m, identity_rhs, buf);
        break;
      case 3:
        GaussJordanChunk<3>(ab, cb, info + b, live, n, m, identity_rhs, buf);
        break;
      case 4:
        GaussJordanChunk<4>(ab, cb, info + b, live, n, m, identity_rhs, buf);
        break;
      default:
        GaussJordanChunk<0>(ab, cb, info + b, live, n, m, identity_rhs, buf);
        break;
    }
  }
}

void GaussJordanF32(const float* a, float* c, int32_t* info, int64_t begin, int64_t end, int n, int m,
                    bool identity_rhs) {
  GaussJordanRange(a, c, info, begin, end, n, m, identity_rhs);
}
void GaussJordanF64(const double* a, double* c, int32_t* info, int64_t begin, int64_t end, int n, int m,
                    bool identity_rhs) {
  GaussJordanRange(a, c, info, begin, end, n, m, identity_rhs);
}

// Triangular solve of one system, vectorized along the m right-hand sides:
// x_i = (b_i - sum_k a_ik x_k) / a_ii over the rows k solved before i. Rows
// go in pairs (r0, then r1 which also needs x_r0), so each loaded x_k row
// feeds two FMA chains per vector: 2 * NV independent chains hide the FMA
// latency that a single row's NV chains cannot.
template <int NV>
HWY_INLINE void TrsmRowPair(const float* HWY_RESTRICT a, const float* src, float* b, int n, int m, int j,
                            int r0, int r1, int k0, int k1, bool unit) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const int L = int(hn::Lanes(d));
  const float* a0 = a + size_t(r0) * n;
  float* b0 = b + size_t(r0) * m + j;
  V s0[NV], s1[NV];
  for (int v = 0; v < NV; ++v) s0[v] = hn::LoadU(d, src + size_t(r0) * m + j + v * L);
  const bool pair = r1 >= 0;
  const float* a1 = pair ? a + size_t(r1) * n : a0;
  float* b1 = pair ? b + size_t(r1) * m + j : b0;
  for (int v = 0; v < NV; ++v) s1[v] = pair ? hn::LoadU(d, src + size_t(r1) * m + j + v * L) : hn::Zero(d);
  for (int k = k0; k < k1; ++k) {
    const V f0 = hn::Set(d, a0[k]), f1 = hn::Set(d, a1[k]);
    const float* x = b + size_t(k) * m + j;
    for (int v = 0; v < NV; ++v) {
      const V xv = hn::LoadU(d, x + v * L);
      s0[v] = hn::NegMulAdd(f0, xv, s0[v]);
      s1[v] = hn::NegMulAdd(f1, xv, s1[v]);
    }
  }
  const V r0d = hn::Set(d, unit ? 1.0f : 1.0f / a0[r0]);
  for (int v = 0; v < NV; ++v) {
    if (!unit) s0[v] = hn::Mul(s0[v], r0d);
    hn::StoreU(s0[v], d, b0 + v * L);
  }
  if (!pair) return;
  const V f = hn::Set(d, a1[r0]), r1d = hn::Set(d, unit ? 1.0f : 1.0f / a1[r1]);
  for (int v = 0; v < NV; ++v) {
    V t = hn::NegMulAdd(f, s0[v], s1[v]);
    if (!unit) t = hn::Mul(t, r1d);
    hn::StoreU(t, d, b1 + v * L);
  }
}

// src: the right-hand sides (may be b itself); b receives the solution.
void TrsmLeftF32(const float* HWY_RESTRICT a, const float* src, float* b, int n, int m, bool upper,
                 bool unit) {
  const hn::ScalableTag<float> d;
  const int L = int(hn::Lanes(d));
  for (int step = 0; step < n; step += 2) {
    // Lower: rows step, step+1 after rows [0, step). Upper: mirrored.
    const int r0 = upper ? n - 1 - step : step;
    const int r1 = step + 1 < n ? (upper ? r0 - 1 : r0 + 1) : -1;
    const int k0 = upper ? r0 + 1 : 0, k1 = upper ? n : r0;
    int j = 0;
    for (; j + 4 * L <= m; j += 4 * L) TrsmRowPair<4>(a, src, b, n, m, j, r0, r1, k0, k1, unit);
    for (; j + L <= m; j += L) TrsmRowPair<1>(a, src, b, n, m, j, r0, r1, k0, k1, unit);
    for (; j < m; ++j) {
      for (int r : {r0, r1}) {
        if (r < 0) continue;
        const float* ar = a + size_t(r) * n;
        float v = src[size_t(r) * m + j];
        // r1 also subtracts r0's fresh value: widen its range by one row.
        const int lo = upper ? k0 - (r == r1 ? 1 : 0) : k0, hi = upper ? k1 : k1 + (r == r1 ? 1 : 0);
        for (int k = lo; k < hi; ++k) v -= ar[k] * b[size_t(k) * m + j];
        b[size_t(r) * m + j] = unit ? v : v / ar[r];
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(GaussJordanF32);
HWY_EXPORT(GaussJordanF64);
HWY_EXPORT(TrsmLeftF32);

namespace {
// Systems per claimed piece of work: enough to amortize the claim, small
// enough that a thread arriving late (or descheduled on a busy machine) leaves
// the rest to the others instead of the whole call waiting on its half.
int64_t piece_for(int n, int m) {
  const int64_t per = std::max<int64_t>(256, (int64_t(1) << 19) / (int64_t(n) * (n + m) * n + 1));
  return (per + 63) / 64 * 64;  // whole SIMD chunks
}

// Runs fn(begin, end) over [0, count) in pieces that the pool's threads claim
// one at a time; contiguous pieces, no allocation.
template <typename F>
void claim_pieces(int64_t count, int64_t piece, F&& fn) {
  const int64_t pieces = (count + piece - 1) / piece;
  const int nt = kiln::num_threads();
  if (pieces <= 1 || nt <= 1 || kiln::in_parallel_region()) {
    fn(0, count);
    return;
  }
  std::atomic<int64_t> next{0};
  kiln::parallel_for(0, std::min<int64_t>(nt, pieces), 1, [&](int64_t, int64_t) {
    for (int64_t p = next.fetch_add(1, std::memory_order_relaxed); p < pieces;
         p = next.fetch_add(1, std::memory_order_relaxed))
      fn(p * piece, std::min(count, (p + 1) * piece));
  });
}
}  // namespace

void small_gauss_jordan(const float* a, float* c, int32_t* info, int64_t count, int n, int m,
                        bool identity_rhs) {
  claim_pieces(count, piece_for(n, m), [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(GaussJordanF32)(a, c, info, b, e, n, m, identity_rhs);
  });
}
void small_gauss_jordan(const double* a, double* c, int32_t* info, int64_t count, int n, int m,
                        bool identity_rhs) {
  claim_pieces(count, piece_for(n, m), [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(GaussJordanF64)(a, c, info, b, e, n, m, identity_rhs);
  });
}

void batched_trsm_left_f32(const float* a, const float* src, float* b, int64_t count, int n, int m,
                           bool upper, bool unit) {
  // About a million flops per task before another thread is woken.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 20) / (int64_t(n) * n * m + 1));
  kiln::parallel_for(0, count, grain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i)
      HWY_DYNAMIC_DISPATCH(TrsmLeftF32)(a + i * n * n, src + i * n * m, b + i * n * m, n, m, upper, unit);
  });
}

}  // namespace kiln::cpu
#endif  // HWY_ONCE
