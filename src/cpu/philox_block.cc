// Philox4x32-10 over kPhiloxBlock consecutive counters. Each of the four
// state words lives in the low half of a 64-bit lane, so one MulEven gives a
// round's full 32 x 32 -> 64-bit product per counter.
#include "cpu/philox_block.h"

#include <algorithm>

#include "kiln/random.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/philox_block.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void PhiloxBlock(uint64_t counter0, uint64_t key, uint32_t* HWY_RESTRICT words) {
#if HWY_TARGET == HWY_SCALAR  // one lane: no 32-bit halves to multiply
  for (int l = 0; l < kPhiloxBlock; ++l) philox(counter0 + uint64_t(l), key, words + 4 * l);
#else
  const hn::ScalableTag<uint64_t> d;
  const hn::Repartition<uint32_t, decltype(d)> d32;
  const size_t N = hn::Lanes(d);
  const auto lo = hn::Set(d, 0xFFFFFFFFull);
  const auto m0 = hn::BitCast(d32, hn::Set(d, 0xD2511F53ull)),
             m1 = hn::BitCast(d32, hn::Set(d, 0xCD9E8D57ull));
  static_assert(kPhiloxBlock % 64 == 0, "whole vectors of counters");
  for (size_t g = 0; g < size_t(kPhiloxBlock); g += N) {
    const auto ctr = hn::Add(hn::Iota(d, 0), hn::Set(d, counter0 + g));  // wraps as uint64, as philox's
    auto c0 = hn::And(ctr, lo), c1 = hn::ShiftRight<32>(ctr), c2 = hn::Zero(d), c3 = hn::Zero(d);
    uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
    for (int r = 0; r < 10; ++r) {
      const auto p0 = hn::MulEven(hn::BitCast(d32, c0), m0), p1 = hn::MulEven(hn::BitCast(d32, c2), m1);
      const auto n0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1), hn::Set(d, uint64_t(k0)));
      const auto n2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3), hn::Set(d, uint64_t(k1)));
      c1 = hn::And(p1, lo);
      c3 = hn::And(p0, lo);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const hn::Rebind<uint32_t, decltype(d)> dh;  // the low halves, N lanes
    hn::StoreInterleaved4(hn::TruncateTo(dh, c0), hn::TruncateTo(dh, c1), hn::TruncateTo(dh, c2),
                          hn::TruncateTo(dh, c3), dh, words + 4 * g);
  }
#endif
}

template <typename T>
void KeepScale(const T* x, T* y, const uint32_t* HWY_RESTRICT words, uint32_t t, T mul, int64_t n) {
  if (x == y) {  // one pointer: no overlap check to defeat the vector loop
    for (int64_t k = 0; k < n; ++k) y[k] = y[k] * (words[k] >= t ? mul : T(0));
  } else {
    const T* HWY_RESTRICT xr = x;
    T* HWY_RESTRICT yr = y;
    for (int64_t k = 0; k < n; ++k) yr[k] = xr[k] * (words[k] >= t ? mul : T(0));
  }
}

void KeepScaleF32(const float* x, float* y, const uint32_t* w, uint32_t t, float mul, int64_t n) {
  KeepScale(x, y, w, t, mul, n);
}
void KeepScaleF64(const double* x, double* y, const uint32_t* w, uint32_t t, double mul, int64_t n) {
  KeepScale(x, y, w, t, mul, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(PhiloxBlock);
HWY_EXPORT(KeepScaleF32);
HWY_EXPORT(KeepScaleF64);

void philox_block(uint64_t counter0, uint64_t key, uint32_t* words) {
  HWY_DYNAMIC_DISPATCH(PhiloxBlock)(counter0, key, words);
}

void keep_scale(const float* x, float* y, const uint32_t* words, uint32_t t, float mul, int64_t n) {
  HWY_DYNAMIC_DISPATCH(KeepScaleF32)(x, y, words, t, mul, n);
}
void keep_scale(const double* x, double* y, const uint32_t* words, uint32_t t, double mul, int64_t n) {
  HWY_DYNAMIC_DISPATCH(KeepScaleF64)(x, y, words, t, mul, n);
}

}  // namespace kiln::cpu
#endif
