// Batched small solves with Highway dynamic dispatch (see linalg_small.h).
//
// Layout inside a chunk: the augmented matrix [A | C] (n rows, n + m columns)
// of L = Lanes(d) systems is transposed into a structure of arrays, element
// (i, j) of system l at buf[(i * w + j) * L + l], so every scalar step of
// Gauss-Jordan becomes one vector operation over L systems. Row swaps differ
// per lane; they are selects on the pivot index vector.
#include "cpu/linalg_small.h"

#include <algorithm>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/linalg_small.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/aligned_allocator.h>

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
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      const T* src = at(i, n + j);
      for (int64_t l = 0; l < live; ++l) c[l * n * m + i * m + j] = src[l];
    }
  HWY_ALIGN T infos[hn::MaxLanes(d)];
  hn::Store(inf, d, infos);
  for (int64_t l = 0; l < live; ++l) info[l] = int32_t(infos[l]);
}

template <typename T>
void GaussJordanRange(const T* a, T* c, int32_t* info, int64_t begin, int64_t end, int n, int m,
                      bool identity_rhs) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  auto buf = hwy::AllocateAligned<T>(size_t(n) * (n + m) * L);
  for (int64_t b = begin; b < end; b += int64_t(L)) {
    const int64_t live = std::min<int64_t>(int64_t(L), end - b);
    const T* ab = a + b * n * n;
    T* cb = c + b * n * m;
    switch (n) {
      case 2: GaussJordanChunk<2>(ab, cb, info + b, live, n, m, identity_rhs, buf.get()); break;
      case 3: GaussJordanChunk<3>(ab, cb, info + b, live, n, m, identity_rhs, buf.get()); break;
      case 4: GaussJordanChunk<4>(ab, cb, info + b, live, n, m, identity_rhs, buf.get()); break;
      default: GaussJordanChunk<0>(ab, cb, info + b, live, n, m, identity_rhs, buf.get()); break;
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

// Triangular solve of one system, row by row, vectorized along the m
// right-hand sides: x_i = (b_i - sum_k a_ik x_k) / a_ii over the solved rows k.
void TrsmLeftF32(const float* HWY_RESTRICT a, float* HWY_RESTRICT b, int n, int m, bool upper, bool unit) {
  const hn::ScalableTag<float> d;
  const int L = int(hn::Lanes(d));
  for (int step = 0; step < n; ++step) {
    const int i = upper ? n - 1 - step : step;
    const float* arow = a + size_t(i) * n;
    float* brow = b + size_t(i) * m;
    const int k0 = upper ? i + 1 : 0, k1 = upper ? n : i;
    const float rd = unit ? 1.0f : 1.0f / arow[i];
    int j = 0;
    // Four vectors of right-hand sides at a time keep four FMA chains busy.
    for (; j + 4 * L <= m; j += 4 * L) {
      auto s0 = hn::LoadU(d, brow + j), s1 = hn::LoadU(d, brow + j + L);
      auto s2 = hn::LoadU(d, brow + j + 2 * L), s3 = hn::LoadU(d, brow + j + 3 * L);
      for (int k = k0; k < k1; ++k) {
        const auto f = hn::Set(d, arow[k]);
        const float* x = b + size_t(k) * m + j;
        s0 = hn::NegMulAdd(f, hn::LoadU(d, x), s0);
        s1 = hn::NegMulAdd(f, hn::LoadU(d, x + L), s1);
        s2 = hn::NegMulAdd(f, hn::LoadU(d, x + 2 * L), s2);
        s3 = hn::NegMulAdd(f, hn::LoadU(d, x + 3 * L), s3);
      }
      if (!unit) {
        const auto r = hn::Set(d, rd);
        s0 = hn::Mul(s0, r), s1 = hn::Mul(s1, r), s2 = hn::Mul(s2, r), s3 = hn::Mul(s3, r);
      }
      hn::StoreU(s0, d, brow + j), hn::StoreU(s1, d, brow + j + L);
      hn::StoreU(s2, d, brow + j + 2 * L), hn::StoreU(s3, d, brow + j + 3 * L);
    }
    for (; j + L <= m; j += L) {
      auto s = hn::LoadU(d, brow + j);
      for (int k = k0; k < k1; ++k) s = hn::NegMulAdd(hn::Set(d, arow[k]), hn::LoadU(d, b + size_t(k) * m + j), s);
      if (!unit) s = hn::Mul(s, hn::Set(d, rd));
      hn::StoreU(s, d, brow + j);
    }
    for (; j < m; ++j) {
      float s = brow[j];
      for (int k = k0; k < k1; ++k) s -= arow[k] * b[size_t(k) * m + j];
      brow[j] = unit ? s : s * rd;
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
// Systems per parallel task: enough work to amortize the hand-off.
int64_t grain_for(int n, int m) { return std::max<int64_t>(64, 65536 / (int64_t(n) * (n + m) * n + 1)); }
}  // namespace

void small_gauss_jordan(const float* a, float* c, int32_t* info, int64_t count, int n, int m,
                        bool identity_rhs) {
  kiln::parallel_for(0, count, grain_for(n, m), [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(GaussJordanF32)(a, c, info, b, e, n, m, identity_rhs);
  });
}
void small_gauss_jordan(const double* a, double* c, int32_t* info, int64_t count, int n, int m,
                        bool identity_rhs) {
  kiln::parallel_for(0, count, grain_for(n, m), [&](int64_t b, int64_t e) {
    HWY_DYNAMIC_DISPATCH(GaussJordanF64)(a, c, info, b, e, n, m, identity_rhs);
  });
}

void batched_trsm_left_f32(const float* a, float* b, int64_t count, int n, int m, bool upper, bool unit) {
  const int64_t grain = std::max<int64_t>(1, 32768 / (int64_t(n) * n * m / 2 + 1));
  kiln::parallel_for(0, count, grain, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i)
      HWY_DYNAMIC_DISPATCH(TrsmLeftF32)(a + i * n * n, b + i * n * m, n, m, upper, unit);
  });
}

}  // namespace kiln::cpu
#endif  // HWY_ONCE
