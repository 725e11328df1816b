// softmax / log_softmax over contiguous float32 rows. Highway's Exp (1 ulp on
// [-FLT_MAX, 104]; the argument here is always <= 0, and below -104 it returns
// 0, which is the correctly rounded f32 result there) does the exponentials.
//
// Per row: pass 1 max (with a sticky NaN flag: SIMD max drops NaN), pass 2
// e = exp(x - m) stored in y while summing, pass 3 y *= 1 / sum. log_softmax
// skips the store in pass 2 and writes y = (x - m) - log(sum) in pass 3. One long
// row is cut into a chunk per thread; each chunk runs passes 1-2 against its own
// max m_c, the chunk sums are combined as S = sum_c s_c * exp(m_c - M), and pass 3
// uses the factor exp(m_c - M) / S for its chunk.
#include "cpu/softmax.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/softmax.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: math-inl.h must follow highway.h
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include <cmath>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Max of x[0..n); NaN if any entry is NaN. n may be 0 (-inf).
float RowMax(const float* HWY_RESTRICT x, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  VF m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
  const hn::RebindToSigned<DF> di;
  auto bad = hn::Zero(di);  // all-ones in lanes that saw a NaN
  auto nan_bits = [&](VF v) { return hn::BitCast(di, hn::VecFromMask(d, hn::IsNaN(v))); };
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const VF a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + N);
    const VF c = hn::LoadU(d, x + i + 2 * N), e = hn::LoadU(d, x + i + 3 * N);
    m0 = hn::Max(m0, a);
    m1 = hn::Max(m1, b);
    m2 = hn::Max(m2, c);
    m3 = hn::Max(m3, e);
    bad = hn::Or(bad, hn::Or(hn::Or(nan_bits(a), nan_bits(b)), hn::Or(nan_bits(c), nan_bits(e))));
  }
  for (; i + N <= n; i += N) {
    const VF a = hn::LoadU(d, x + i);
    m0 = hn::Max(m0, a);
    bad = hn::Or(bad, nan_bits(a));
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  for (; i < n; ++i) {
    if (std::isnan(x[i])) return x[i];
    m = x[i] > m ? x[i] : m;
  }
  if (!hn::AllFalse(di, hn::Ne(bad, hn::Zero(di)))) return std::numeric_limits<float>::quiet_NaN();
  return m;
}

// sum exp(x[i] * s - m); when y != nullptr also stores the exponentials.
// Blocks of 256 sum in f32 lanes, blocks add up in double.
template <bool kStore>
double ExpSum(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n, float s, float m) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vs = hn::Set(d, s), vm = hn::Set(d, m);
  double total = 0.0;
  constexpr int64_t kBlock = 256;  // short f32 lane sums: a lane holding exp(0) = 1 loses little
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t end = b + kBlock < n ? b + kBlock : n;
    VF s0 = hn::Zero(d), s1 = hn::Zero(d);
    int64_t i = b;
    for (; i + 2 * N <= end; i += 2 * N) {
      const VF e0 = hn::Exp(d, hn::MulSub(hn::LoadU(d, x + i), vs, vm));
      const VF e1 = hn::Exp(d, hn::MulSub(hn::LoadU(d, x + i + N), vs, vm));
      if constexpr (kStore) {
        hn::StoreU(e0, d, y + i);
        hn::StoreU(e1, d, y + i + N);
      }
      s0 = hn::Add(s0, e0);
      s1 = hn::Add(s1, e1);
    }
    for (; i + N <= end; i += N) {
      const VF e0 = hn::Exp(d, hn::MulSub(hn::LoadU(d, x + i), vs, vm));
      if constexpr (kStore) hn::StoreU(e0, d, y + i);
      s0 = hn::Add(s0, e0);
    }
    if (i < end) {  // tail: a partial vector, padded with -inf (exp -> 0)
      HWY_ALIGN float buf[hn::MaxLanes(d)];
      const int64_t r = end - i;
      for (int64_t j = 0; j < N; ++j) buf[j] = j < r ? x[i + j] : -std::numeric_limits<float>::infinity();
      const VF e0 = hn::Exp(d, hn::MulSub(hn::Load(d, buf), vs, vm));
      hn::Store(e0, d, buf);
      if constexpr (kStore) {
        for (int64_t j = 0; j < r; ++j) y[i + j] = buf[j];
      }
      s0 = hn::Add(s0, e0);
    }
    total += double(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
  }
  return total;
}

// y[i] *= c.
void Scale(float* HWY_RESTRICT y, int64_t n, float c) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vc = hn::Set(d, c);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vc), d, y + i);
  for (; i < n; ++i) y[i] *= c;
}

// y[i] = (x[i] - m) - l.
void SubSub(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n, float m, float l) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  const VF vm = hn::Set(d, m), vl = hn::Set(d, l);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vm), vl), d, y + i);
  for (; i < n; ++i) y[i] = (x[i] - m) - l;
}

void Fill(float* HWY_RESTRICT y, int64_t n, float v) {
  for (int64_t i = 0; i < n; ++i) y[i] = v;
}

// One whole row, serially.
void SoftmaxRow(const float* x, float* y, int64_t n, bool log) {
  const float m = RowMax(x, n);
  if (!std::isfinite(m)) return Fill(y, n, std::numeric_limits<float>::quiet_NaN());
  if (log) {
    const double s = ExpSum<false>(x, nullptr, n, 1.0f, m);
    SubSub(x, y, n, m, float(std::log(s)));
  } else {
    const double s = ExpSum<true>(x, y, n, 1.0f, m);
    Scale(y, n, float(1.0 / s));
  }
}

// Chunk passes of a split row: its max and its sum against that max.
void ChunkStats(const float* x, float* y, int64_t n, bool log, float* m_out, double* s_out) {
  const float m = RowMax(x, n);
  *m_out = m;
  if (!std::isfinite(m)) {  // NaN / +inf poison the row; -inf (all -inf) adds 0
    *s_out = 0.0;
    return;
  }
  *s_out = log ? ExpSum<false>(x, nullptr, n, 1.0f, m) : ExpSum<true>(x, y, n, 1.0f, m);
}

void ExpF32(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n) {
  const DF d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Exp(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    for (int64_t j = 0; j < n - i; ++j) buf[j] = x[i + j];
    hn::Store(hn::Exp(d, hn::Load(d, buf)), d, buf);
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = buf[j];
  }
}

double ExpSumScaled(const float* x, int64_t n, float s, float m) {
  return ExpSum<false>(x, nullptr, n, s, m);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "kiln/thread_pool.h"

namespace kiln::cpu {
HWY_EXPORT(RowMax);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(ChunkStats);
HWY_EXPORT(Scale);
HWY_EXPORT(SubSub);
HWY_EXPORT(ExpF32);
HWY_EXPORT(ExpSumScaled);

namespace {
// A row shorter than this is not worth splitting across threads.
constexpr int64_t kSplitMin = 16384;
// Elements per parallel chunk when batching whole rows.
constexpr int64_t kRowGrainElems = 16384;

void split_row(const float* x, float* y, int64_t n, bool log, int nt) {
  // Chunks of a multiple of 64 floats (cache lines), one per thread.
  const int64_t per = ((n + nt - 1) / nt + 63) / 64 * 64;
  const int nc = int((n + per - 1) / per);
  float m[64];
  double s[64];
  parallel_for(0, nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t lo = c * per, len = std::min(per, n - lo);
      HWY_DYNAMIC_DISPATCH(ChunkStats)(x + lo, y + lo, len, log, &m[c], &s[c]);
    }
  });
  float M = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (int c = 0; c < nc; ++c) {
    if (std::isnan(m[c])) nan = true;
    M = std::max(M, m[c]);
  }
  if (nan || !std::isfinite(M)) {
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  double S = 0.0;
  for (int c = 0; c < nc; ++c) S += s[c] * std::exp(double(m[c]) - double(M));
  const double lse = std::log(S);
  parallel_for(0, nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t lo = c * per, len = std::min(per, n - lo);
      if (log) {
        HWY_DYNAMIC_DISPATCH(SubSub)(x + lo, y + lo, len, M, float(lse));
      } else if (m[c] == -std::numeric_limits<float>::infinity()) {
        std::fill(y + lo, y + lo + len, 0.0f);  // chunk of -inf entries
      } else {
        HWY_DYNAMIC_DISPATCH(Scale)(y + lo, len, float(std::exp(double(m[c]) - double(M)) / S));
      }
    }
  });
}
}  // namespace

void softmax_rows_f32(const float* x, int64_t sx, float* y, int64_t sy, int64_t rows, int64_t n, bool log) {
  if (rows <= 0 || n <= 0) return;
  const int nt = std::min(num_threads(), 64);
  if (rows < nt && n >= kSplitMin && !in_parallel_region()) {
    for (int64_t r = 0; r < rows; ++r) split_row(x + r * sx, y + r * sy, n, log, nt);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kRowGrainElems / n);
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) HWY_DYNAMIC_DISPATCH(SoftmaxRow)(x + r * sx, y + r * sy, n, log);
  });
}

float row_max_f32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(RowMax)(x, n); }

double row_expsum_f32(const float* x, int64_t n, float inv_t, float m) {
  return HWY_DYNAMIC_DISPATCH(ExpSumScaled)(x, n, inv_t, m);
}

void exp_f32(const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(ExpF32)(x, y, n); }

}  // namespace kiln::cpu
#endif
