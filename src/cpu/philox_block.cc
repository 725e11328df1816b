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

// log(x) for x in [2^-53, 1] (normal): x = 2^e m with m in [sqrt(1/2), sqrt(2)),
// log(m) = 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), s = (m - 1) / (m + 1),
// |s| <= 0.172, so ten terms reach float64's last bit; e ln 2 in two parts (the
// high one has 21 bits, so e times it is exact).
template <class D, class V = hn::Vec<D>>
HWY_INLINE V LogUnit(D d, V x) {
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, x);
  auto e = hn::Sub(hn::ShiftRight<52>(bits), hn::Set(di, 1023));
  auto m = hn::BitCast(
      d, hn::Or(hn::And(bits, hn::Set(di, (int64_t(1) << 52) - 1)), hn::Set(di, int64_t(1023) << 52)));
  const auto big = hn::Gt(m, hn::Set(d, 1.4142135623730951));
  m = hn::IfThenElse(big, hn::Mul(m, hn::Set(d, 0.5)), m);
  e = hn::Sub(e, hn::BitCast(di, hn::VecFromMask(d, big)));  // a true lane is -1: e + 1
  const auto f = hn::Sub(m, hn::Set(d, 1.0));                // exact: m within a factor 2 of 1
  const auto s = hn::Div(f, hn::Add(m, hn::Set(d, 1.0)));
  const auto z = hn::Mul(s, s);
  auto p = hn::Set(d, 1.0 / 21);
  for (int k = 9; k >= 1; --k) p = hn::Add(hn::Mul(p, z), hn::Set(d, 1.0 / (2 * k + 1)));
  const auto logm = hn::Add(hn::Add(s, s), hn::Mul(hn::Add(s, s), hn::Mul(z, p)));
  const auto ed = hn::ConvertTo(d, e);
  return hn::Add(hn::Mul(ed, hn::Set(d, 0x1.62e42p-1)),
                 hn::Add(logm, hn::Mul(ed, hn::Set(d, 4.7493250390316726e-07))));
}

// cos(2 pi u) for u in [0, 1): 4u = q + r with q = round(4u) and |r| <= 1/2 (both
// exact), so cos(2 pi u) = cos(q pi/2 + t), t = r pi/2 in [-pi/4, pi/4]: cos t,
// -sin t, -cos t or sin t by q mod 4, from Taylor series that reach float64's
// last bit by t^18 and t^19.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V CosTurn(D d, V u) {
  const auto u4 = hn::Mul(u, hn::Set(d, 4.0));
  const auto q = hn::Round(u4);
  const auto t = hn::Mul(hn::Sub(u4, q), hn::Set(d, 1.5707963267948966));
  const auto t2 = hn::Mul(t, t);
  // cos t = sum (-1)^k t^2k / (2k)!, sin t = t sum (-1)^k t^2k / (2k+1)!, k <= 9.
  double cc[10], sc[10];
  double fact = 1;  // (2k)!
  for (int k = 0; k < 10; ++k) {
    if (k > 0) fact *= double(2 * k - 1) * double(2 * k);
    cc[k] = (k % 2 ? -1.0 : 1.0) / fact;
    sc[k] = cc[k] / double(2 * k + 1);
  }
  auto c = hn::Set(d, cc[9]), sn = hn::Set(d, sc[9]);
  for (int k = 8; k >= 0; --k) {
    c = hn::Add(hn::Mul(c, t2), hn::Set(d, cc[k]));
    sn = hn::Add(hn::Mul(sn, t2), hn::Set(d, sc[k]));
  }
  sn = hn::Mul(sn, t);
  const auto one = hn::Eq(q, hn::Set(d, 1.0)), two = hn::Eq(q, hn::Set(d, 2.0)),
             three = hn::Eq(q, hn::Set(d, 3.0));
  const auto v = hn::IfThenElse(hn::Or(one, three), sn, c);
  return hn::IfThenElse(hn::Or(one, two), hn::Neg(v), v);
}

void BoxMullerBlock(const uint32_t* HWY_RESTRICT words, double* HWY_RESTRICT out) {
  constexpr double kInv53 = 1.0 / 9007199254740992.0;
  const hn::ScalableTag<double> dd;
  const size_t N = hn::Lanes(dd);
  // Every target computes the same bits: separate products and sums (this file
  // is compiled without FMA contraction), IEEE division, square root and rounding.
  auto normal = [&](auto u1, auto u2) {  // u1 in (0, 1], u2 in [0, 1)
    return hn::Mul(hn::Sqrt(hn::Mul(hn::Set(dd, -2.0), LogUnit(dd, u1))), CosTurn(dd, u2));
  };
#if HWY_TARGET == HWY_SCALAR
  auto u53 = [](uint32_t a, uint32_t b) { return double(((uint64_t(a) << 32) | b) >> 11) * kInv53; };
  for (int l = 0; l < kPhiloxBlock; ++l) {
    const uint32_t* w = words + 4 * l;
    hn::StoreU(normal(hn::Set(dd, 1.0 - u53(w[0], w[1])), hn::Set(dd, u53(w[2], w[3]))), dd, out + l);
  }
#else
  const hn::RebindToUnsigned<decltype(dd)> du;
  const hn::RebindToSigned<decltype(dd)> di;
  // A 64-bit lane loaded from words (q, q + 1) holds w[q] low, w[q + 1] high:
  // swap the halves, keep the top 53 bits (below 2^53: exact as int64 -> f64).
  auto u53 = [&](auto v) {
    const auto bits = hn::ShiftRight<11>(hn::Or(hn::ShiftLeft<32>(v), hn::ShiftRight<32>(v)));
    return hn::Mul(hn::ConvertTo(dd, hn::BitCast(di, bits)), hn::Set(dd, kInv53));
  };
  const uint64_t* w64 = reinterpret_cast<const uint64_t*>(words);
  for (size_t l = 0; l < size_t(kPhiloxBlock); l += N) {
    hn::Vec<decltype(du)> w01, w23;
    hn::LoadInterleaved2(du, w64 + 2 * l, w01, w23);
    hn::StoreU(normal(hn::Sub(hn::Set(dd, 1.0), u53(w01)), u53(w23)), dd, out + l);
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
HWY_EXPORT(BoxMullerBlock);
HWY_EXPORT(KeepScaleF32);
HWY_EXPORT(KeepScaleF64);

void philox_block(uint64_t counter0, uint64_t key, uint32_t* words) {
  HWY_DYNAMIC_DISPATCH(PhiloxBlock)(counter0, key, words);
}

void box_muller_block(const uint32_t* words, double* out) {
  HWY_DYNAMIC_DISPATCH(BoxMullerBlock)(words, out);
}

void keep_scale(const float* x, float* y, const uint32_t* words, uint32_t t, float mul, int64_t n) {
  HWY_DYNAMIC_DISPATCH(KeepScaleF32)(x, y, words, t, mul, n);
}
void keep_scale(const double* x, double* y, const uint32_t* words, uint32_t t, double mul, int64_t n) {
  HWY_DYNAMIC_DISPATCH(KeepScaleF64)(x, y, words, t, mul, n);
}

}  // namespace kiln::cpu
#endif
