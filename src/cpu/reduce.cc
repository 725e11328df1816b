// Contiguous float32 / bfloat16 sums and float32 var_mean, dispatched to the best
// SIMD target at run time.
#include "cpu/reduce.h"

#include <algorithm>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/reduce.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Block length for the bf16 sum and the var_mean two-pass: short enough that a
// second pass over the block hits L1.
constexpr int64_t kBlock = 2048;

// Sum of one block in float32 lanes (an estimate; var_mean corrects for it).
HWY_INLINE float BlockSumF32(const float* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + N));
  }
  for (; i + N <= n; i += N) a0 = hn::Add(a0, hn::LoadU(d, x + i));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; i < n; ++i) s += x[i];
  return s;
}

// float32 lanes over blocks where each lane adds 8 values (4 accumulators; 512
// values at AVX-512's 16 lanes), each block's lanes then widened and added in
// float64: within an ulp or two of the exact sum at every width. Widening every
// value to float64 instead was as exact but slower from memory (25 against 19
// ms for 64M floats on one AVX-512 core): each cache line then holds twice the
// instructions waiting on its load, and fewer lines are in flight.
double SumF32(const float* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t block = 32 * N;
  double total = 0;
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Repartition<double, decltype(d)> dd;
  const hn::Rebind<float, decltype(dd)> dh;  // half a float vector
  auto t0 = hn::Zero(dd), t1 = hn::Zero(dd);
  for (; i + block <= n; i += block) {
    const float* p = x + i;
    auto a0 = hn::LoadU(d, p), a1 = hn::LoadU(d, p + N), a2 = hn::LoadU(d, p + 2 * N),
         a3 = hn::LoadU(d, p + 3 * N);
    for (int64_t j = 4 * N; j < block; j += 4 * N) {
      a0 = hn::Add(a0, hn::LoadU(d, p + j));
      a1 = hn::Add(a1, hn::LoadU(d, p + j + N));
      a2 = hn::Add(a2, hn::LoadU(d, p + j + 2 * N));
      a3 = hn::Add(a3, hn::LoadU(d, p + j + 3 * N));
    }
    const auto a = hn::Add(hn::Add(a0, a1), hn::Add(a2, a3));
    t0 = hn::Add(t0, hn::PromoteTo(dd, hn::LowerHalf(dh, a)));
    t1 = hn::Add(t1, hn::PromoteTo(dd, hn::UpperHalf(dh, a)));
  }
  total = hn::GetLane(hn::SumOfLanes(dd, hn::Add(t0, t1)));
#endif
  double tail = 0;
  for (; i < n; ++i) tail += double(x[i]);
  return total + tail;
}

// The sum of the non-NaN values: float32 lanes over kBlock-long blocks (NaN
// lanes zeroed), block sums combined in float64, as the bf16 sum. count, when
// not null, gets the number of non-NaN values (nanmean's divisor).
double NanSumF32(const float* HWY_RESTRICT x, int64_t n, int64_t* count) {
  const hn::ScalableTag<float> df;
  const int64_t N = int64_t(hn::Lanes(df));
  double total = 0;
  int64_t nans = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const float* p = x + b;
    auto a0 = hn::Zero(df), a1 = hn::Zero(df);
    int64_t i = 0;
    for (; i + 2 * N <= m; i += 2 * N) {
      const auto v0 = hn::LoadU(df, p + i), v1 = hn::LoadU(df, p + i + N);
      const auto n0 = hn::IsNaN(v0), n1 = hn::IsNaN(v1);  // not Ne(v, v): an ordered compare on AVX-512
      if (count) nans += int64_t(hn::CountTrue(df, n0) + hn::CountTrue(df, n1));
      a0 = hn::Add(a0, hn::IfThenZeroElse(n0, v0));
      a1 = hn::Add(a1, hn::IfThenZeroElse(n1, v1));
    }
    float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(a0, a1)));
    for (; i < m; ++i) {
      if (p[i] != p[i])
        ++nans;
      else
        s += p[i];
    }
    total += double(s);
  }
  if (count) *count = n - nans;
  return total;
}

// The largest (kMax) or smallest of n >= 1 contiguous float32 values; NaN
// when any is NaN. Two vector accumulators, NaN lanes noted in a mask (x86's
// max/min return an operand, not NaN); the tail is one more vector that
// overlaps the last full one.
template <bool kMax>
float ExtremumF32(const float* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  if (n < N) {
    float b = x[0];
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return x[i];
      b = kMax ? (x[i] > b ? x[i] : b) : (x[i] < b ? x[i] : b);
    }
    return b;
  }
  auto pick = [](auto a, auto v) { return kMax ? hn::Max(a, v) : hn::Min(a, v); };
  auto a0 = hn::LoadU(d, x), a1 = a0;
  auto nan = hn::IsNaN(a0);
  int64_t i = N;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
    a0 = pick(a0, v0);
    a1 = pick(a1, v1);
    nan = hn::Or(nan, hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)));
  }
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    a0 = pick(a0, v);
    nan = hn::Or(nan, hn::IsNaN(v));
  }
  if (i < n) {
    const auto v = hn::LoadU(d, x + n - N);
    a0 = pick(a0, v);
    nan = hn::Or(nan, hn::IsNaN(v));
  }
  if (!hn::AllFalse(d, nan)) return NAN;
  const auto a = pick(a0, a1);
  return hn::GetLane(kMax ? hn::MaxOfLanes(d, a) : hn::MinOfLanes(d, a));
}
float MaxF32(const float* HWY_RESTRICT x, int64_t n) { return ExtremumF32<true>(x, n); }
float MinF32(const float* HWY_RESTRICT x, int64_t n) { return ExtremumF32<false>(x, n); }

// bfloat16 -> float32: the bits shifted into the high half.
double SumBF16(const uint16_t* HWY_RESTRICT x, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<uint16_t, decltype(df)> du16;
  const int64_t N = int64_t(hn::Lanes(df));
  auto widen = [&](const uint16_t* p) { return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p)))); };
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const uint16_t* p = x + b;
    auto a0 = hn::Zero(df), a1 = hn::Zero(df);
    int64_t i = 0;
    for (; i + 2 * N <= m; i += 2 * N) {
      a0 = hn::Add(a0, widen(p + i));
      a1 = hn::Add(a1, widen(p + i + N));
    }
    for (; i + N <= m; i += N) a0 = hn::Add(a0, widen(p + i));
    float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(a0, a1)));
    for (; i < m; ++i) {
      const uint32_t u = uint32_t(p[i]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      s += f;
    }
    total += s;
  }
  return total;
}

void VarMeanF32(const float* HWY_RESTRICT x, int64_t n, double* mean_out, double* m2_out) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  // Pass 2 adds float32 lanes over sub-blocks this long (each lane takes 4 values
  // where N = 16), then the sub-block sums in float64: as exact as float64 lanes
  // throughout to a few parts in 1e8, at half the instructions per value.
  const int64_t kSub = 4 * 4 * N;
  double cnt = 0, mean = 0, m2 = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const float* p = x + b;
    // Pass 1: a shift near the block mean, rounded to float; pass 2 corrects for it.
    const float mb = float(double(BlockSumF32(p, m)) / double(m));
    const auto vm = hn::Set(d, mb);
    // Pass 2 over the L1-resident block: deviations and their squares.
    double sd = 0, sq = 0;
    int64_t i = 0;
    for (; i + kSub <= m; i += kSub) {
      auto s0 = hn::Zero(d), s1 = hn::Zero(d), q0 = hn::Zero(d), q1 = hn::Zero(d);
      for (int64_t j = i; j < i + kSub; j += 2 * N) {
        __builtin_prefetch(p + kBlock + j);  // the next block's line, while this one is in L1
        __builtin_prefetch(p + kBlock + j + N);
        const auto d0 = hn::Sub(hn::LoadU(d, p + j), vm), d1 = hn::Sub(hn::LoadU(d, p + j + N), vm);
        s0 = hn::Add(s0, d0);
        s1 = hn::Add(s1, d1);
        q0 = hn::MulAdd(d0, d0, q0);
        q1 = hn::MulAdd(d1, d1, q1);
      }
      sd += double(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
      sq += double(hn::GetLane(hn::SumOfLanes(d, hn::Add(q0, q1))));
    }
    for (; i < m; ++i) {
      const double dv = double(p[i]) - double(mb);
      sd += dv;
      sq += dv * dv;
    }
    const double bm = double(mb) + sd / double(m);
    double bm2 = sq - sd * sd / double(m);
    if (bm2 < 0) bm2 = 0;  // rounding; NaN passes through
    chan_merge(cnt, mean, m2, double(m), bm, bm2);
  }
  *mean_out = mean;
  *m2_out = m2;
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(SumF32);
HWY_EXPORT(SumBF16);
HWY_EXPORT(NanSumF32);
HWY_EXPORT(VarMeanF32);
HWY_EXPORT(MaxF32);
HWY_EXPORT(MinF32);

double sum_f32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(SumF32)(x, n); }
double sum_bf16(const uint16_t* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(SumBF16)(x, n); }
double nansum_f32(const float* x, int64_t n, int64_t* count) {
  return HWY_DYNAMIC_DISPATCH(NanSumF32)(x, n, count);
}
void var_mean_f32(const float* x, int64_t n, double* mean, double* m2) {
  HWY_DYNAMIC_DISPATCH(VarMeanF32)(x, n, mean, m2);
}
float max_f32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(MaxF32)(x, n); }
float min_f32(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(MinF32)(x, n); }
}  // namespace kiln::cpu
#endif
