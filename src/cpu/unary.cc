// Highway kernels for the hot unary float ops, compiled per SIMD target and
// picked at run time. One translation unit for all of them to bound compile time.
#include "cpu/unary.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/unary.cc"
// clang-format off: foreach_target.h must come first (it re-includes this file per target)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include <cfloat>
#include <cmath>
#include <cstring>

#include "cpu/bessel_i_cheb.h"
#include "cpu/unary_scalar.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Each op: Apply (the vector body) and Special (lanes the vector body does not
// get right; such a vector is recomputed with the scalar body Scalar).

// [lo, hi] is the range where the vector body is accurate; NaN is outside.
template <class D, class V>
HWY_INLINE auto Outside(D d, V x, float lo, float hi) {
  return hn::Not(hn::And(hn::Ge(x, hn::Set(d, lo)), hn::Le(x, hn::Set(d, hi))));
}

template <class D, class V>
HWY_INLINE V SigmoidV(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = hn::Exp(d, hn::Neg(hn::Abs(x)));  // in (0, 1]; 0 below -104
  const V s = hn::Div(one, hn::Add(one, e));
  return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), s, hn::Mul(e, s));
}

template <UOp K>
struct Kern;

template <> struct Kern<UOp::Exp> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Exp(d, x); }
  // Below -87.3 the result is subnormal, above 88.72 it overflows.
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return Outside(d, x, -87.3f, 88.72f); }
};
template <> struct Kern<UOp::Expm1> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Expm1(d, x); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return Outside(d, x, -87.3f, 88.72f); }
};
// Log family: negative -> NaN, 0 -> -inf, +inf -> inf, NaN -> NaN fixed up in
// vector registers (negative inputs are common: e.g. log of noise); only
// subnormal inputs go to the scalar body.
template <class D, class V>
HWY_INLINE V FixLog(D d, V x, V y, float pole) {
  const V inf = hn::Set(d, HUGE_VALF);
  y = hn::IfThenElse(hn::Lt(x, hn::Set(d, pole)), hn::Set(d, NAN), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Set(d, pole)), hn::Neg(inf), y);
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}
template <> struct Kern<UOp::Log> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return FixLog(d, x, hn::Log(d, x), 0.0f); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) {
    return hn::And(hn::Gt(x, hn::Zero(d)), hn::Lt(x, hn::Set(d, FLT_MIN)));
  }
};
template <> struct Kern<UOp::Log2> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return FixLog(d, x, hn::Log2(d, x), 0.0f); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) {
    return hn::And(hn::Gt(x, hn::Zero(d)), hn::Lt(x, hn::Set(d, FLT_MIN)));
  }
};
template <> struct Kern<UOp::Log1p> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return FixLog(d, x, hn::Log1p(d, x), -1.0f); }
  // Just above -1 and at FLT_MAX the vector body loses accuracy.
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) {
    return hn::Or(hn::And(hn::Gt(x, hn::Set(d, -1.0f)), hn::Lt(x, hn::Set(d, -0.99999994f))),
                  hn::And(hn::Gt(x, hn::Set(d, 1e38f)), hn::Lt(x, hn::Set(d, HUGE_VALF))));
  }
};
template <> struct Kern<UOp::Sqrt> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Sqrt(x); }
  // IEEE sqrt is exact everywhere (negative -> NaN): no special lanes.
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return hn::Lt(x, x); }
};
template <> struct Kern<UOp::Rsqrt> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Div(hn::Set(d, 1.0f), hn::Sqrt(x)); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return hn::Lt(x, x); }
};
template <> struct Kern<UOp::Sin> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Sin(d, x); }
  // The range reduction is accurate for |x| up to ~39000 (Highway's bound).
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return Outside(d, x, -32768.0f, 32768.0f); }
};
template <> struct Kern<UOp::Cos> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Cos(d, x); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return Outside(d, x, -32768.0f, 32768.0f); }
};
template <> struct Kern<UOp::Tanh> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Tanh(d, x); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return hn::IsNaN(x); }
};
template <> struct Kern<UOp::Sigmoid> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return SigmoidV(d, x); }
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return hn::IsNaN(x); }
};
template <> struct Kern<UOp::Silu> {
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) { return hn::Mul(x, SigmoidV(d, x)); }
  // Below -80 sigmoid(x) nears the subnormals; the scalar body uses double.
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return Outside(d, x, -80.0f, FLT_MAX); }
};
template <> struct Kern<UOp::GeluTanh> {
  // x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the tanh form without
  // the cancellation of 1 + tanh(u) for x < 0.
  template <class D, class V> static HWY_INLINE V Apply(D d, V x) {
    const V x2 = hn::Mul(x, x);
    const V inner = hn::MulAdd(hn::Mul(hn::Set(d, 0.044715f), x2), x, x);
    const V two_u = hn::Mul(hn::Set(d, 2.0f * 0.79788456080286535588f), inner);
    return hn::Mul(x, SigmoidV(d, two_u));
  }
  // Beyond |x| = 1e12 the cube overflows; the scalar body works in double.
  template <class D, class V> static HWY_INLINE auto Special(D d, V x) { return Outside(d, x, -1e12f, 1e12f); }
};

// erf in float32 lanes, within 2.5 ulp of the true value (measured against
// mpmath over [-5, 5] and down to 1e-30). |x| < 0.875: x (A0 + t A1(t)),
// t = x^2, a least-squares fit in relative error of erf(x) / x; up to 3.95:
// 1 - exp(-x^2) B(u), B a fit of erfc(x) exp(x^2) in u = (|x| - 2.4125) /
// 1.5375; beyond, erf rounds to +-1 in float32.
template <>
struct Kern<UOp::Erf> {
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V x) {
    static constexpr float kA[] = {1.1283792f,   -0.37612638f,   0.112837896f,    -0.02686595f,
                                   0.005222844f, -0.0008516505f, 0.000115534174f, -1.0668374e-05f};
    static constexpr float kB[] = {0.2175082f,     -0.12131198f,    0.06419628f,    -0.03243558f,
                                   0.015722506f,   -0.0073355497f,  0.0033130972f,  -0.0014679584f,
                                   0.00061636214f, -0.00022122606f, 9.5412666e-05f, -6.474246e-05f,
                                   2.2686658e-05f};
    const V ax = hn::Abs(x), t = hn::Mul(ax, ax);
    V a = hn::Set(d, kA[7]);
    for (int i = 6; i >= 1; --i) a = hn::MulAdd(a, t, hn::Set(d, kA[i]));
    const V small = hn::MulAdd(ax, hn::Set(d, kA[0]), hn::Mul(ax, hn::Mul(t, a)));
    const V u = hn::Mul(hn::Sub(ax, hn::Set(d, 2.4125f)), hn::Set(d, 0.6504065f));
    V b = hn::Set(d, kB[12]);
    for (int i = 11; i >= 0; --i) b = hn::MulAdd(b, u, hn::Set(d, kB[i]));
    const V mid = hn::NegMulAdd(hn::Exp(d, hn::Neg(t)), b, hn::Set(d, 1.0f));
    V r = hn::IfThenElse(hn::Lt(ax, hn::Set(d, 0.875f)), small, mid);
    r = hn::IfThenElse(hn::Ge(ax, hn::Set(d, 3.95f)), hn::Set(d, 1.0f), r);
    return hn::CopySign(r, x);
  }
  template <class D, class V>
  static HWY_INLINE auto Special(D d, V x) {
    return hn::IsNaN(x);
  }
};

// lgamma and digamma: float32 lanes computed in float64 lanes, so the float32
// result is correctly rounded nearly everywhere (the scalar bodies also work in
// double). x < 0 reflects to t = 1 - x; t < 8 shifts up by 8 with the product
// (lgamma) or harmonic sum (digamma) of t .. t + 7; then the Stirling series
// at z >= 8. Lanes the vector body does not take go to the scalar body: NaN,
// +-inf, non-positive integers, results that overflow float32.
template <UOp K>
struct Wide;

constexpr double kPi = 3.14159265358979323846;

// Non-positive integers, |x| < lo, and |x| >= hi, inf and NaN.
template <class DD, class VD>
HWY_INLINE auto WideSpecial(DD dd, VD x, double lo, double hi) {
  const auto pole = hn::And(hn::Le(x, hn::Zero(dd)), hn::Eq(x, hn::Round(x)));
  const auto tiny = hn::Lt(hn::Abs(x), hn::Set(dd, lo));
  return hn::Or(hn::Or(pole, tiny), hn::Not(hn::Lt(hn::Abs(x), hn::Set(dd, hi))));  // NaN is not <
}

// x < 0 reflects to t = 1 - x (> 0, exact); shift: the lanes with t < 8, which
// the recurrence moves up by 8.
template <class DD, class VD>
struct Reflected {
  hn::Mask<DD> neg;
  VD t;
  hn::Mask<DD> shift;
  HWY_INLINE Reflected(DD dd, VD x)
      : neg(hn::Lt(x, hn::Zero(dd))),
        t(hn::IfThenElse(neg, hn::Sub(hn::Set(dd, 1.0), x), x)),
        shift(hn::Lt(t, hn::Set(dd, 8.0))) {}
};

template <>
struct Wide<UOp::Lgamma> {
  template <class DD, class VD>
  static HWY_INLINE VD Apply(DD dd, VD x) {
    const VD one = hn::Set(dd, 1.0);
    const Reflected<DD, VD> r0(dd, x);
    const auto neg = r0.neg, shift = r0.shift;
    const VD t = r0.t;
    // lgamma(t) = lgamma(z) - log(prod): z = t + 8, prod = t (t+1) .. (t+7) for t < 8.
    VD p = t;
    for (int i = 1; i < 8; ++i) p = hn::Mul(p, hn::Add(t, hn::Set(dd, double(i))));
    const VD prod = hn::IfThenElse(shift, p, one);
    const VD z = hn::IfThenElse(shift, hn::Add(t, hn::Set(dd, 8.0)), t);
    // lgamma(z) = (z - 1/2) log z - z + log(2 pi) / 2 + sum_k B_2k / (2k (2k-1) z^(2k-1)),
    // five terms: the sixth is below 3e-13 at z = 8.
    const VD r = hn::Div(one, z), r2 = hn::Mul(r, r);
    VD s = hn::Set(dd, 1.0 / 1188);
    s = hn::MulAdd(s, r2, hn::Set(dd, -1.0 / 1680));
    s = hn::MulAdd(s, r2, hn::Set(dd, 1.0 / 1260));
    s = hn::MulAdd(s, r2, hn::Set(dd, -1.0 / 360));
    s = hn::MulAdd(s, r2, hn::Set(dd, 1.0 / 12));
    const VD c = hn::Sub(hn::Set(dd, 0.91893853320467274178), z);  // log(2 pi) / 2 - z
    const VD a = hn::MulAdd(s, r, hn::MulAdd(hn::Sub(z, hn::Set(dd, 0.5)), hn::Log(dd, z), c));
    // x < 0: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(t), with sin(pi x) from
    // g = x - round(x) (exact), so the poles keep their digits. One log serves
    // both signs: log(R), R = prod or pi prod / |sin(pi g)|.
    const VD g = hn::Sub(x, hn::Round(x));
    const VD sin_pg = hn::Abs(hn::Sin(dd, hn::Mul(hn::Set(dd, kPi), g)));
    const VD big_r = hn::IfThenElse(neg, hn::Div(hn::Mul(hn::Set(dd, kPi), prod), sin_pg), prod);
    const VD lr = hn::Log(dd, big_r);
    const VD y = hn::IfThenElse(neg, hn::Sub(lr, a), hn::Sub(a, lr));
    // Within 1/64 of the zeros at 1 and 2 the shift cancels to a few digits:
    // lgamma(1 + e) = -gamma e + sum_k>=2 (-1)^k zeta(k) / k e^k and
    // lgamma(2 + e) = (1 - gamma) e + sum_k>=2 (-1)^k (zeta(k) - 1) / k e^k, to e^8.
    static constexpr double kZeta[] = {0,
                                       0,
                                       1.6449340668482264,
                                       1.2020569031595943,
                                       1.0823232337111382,
                                       1.0369277551433699,
                                       1.0173430619844491,
                                       1.0083492773819228,
                                       1.0040773561979443};  // zeta(k), k = 2 .. 8
    constexpr double kEuler = 0.57721566490153286061;
    const VD e1 = hn::Sub(x, one), e2 = hn::Sub(x, hn::Set(dd, 2.0));
    VD q1 = hn::Set(dd, kZeta[8] / 8), q2 = hn::Set(dd, (kZeta[8] - 1) / 8);
    for (int k = 7; k >= 2; --k) {
      const double sign = k % 2 == 0 ? 1.0 : -1.0;
      q1 = hn::MulAdd(q1, e1, hn::Set(dd, sign * kZeta[k] / k));
      q2 = hn::MulAdd(q2, e2, hn::Set(dd, sign * (kZeta[k] - 1) / k));
    }
    const VD y1 = hn::Mul(e1, hn::MulAdd(q1, e1, hn::Set(dd, -kEuler)));
    const VD y2 = hn::Mul(e2, hn::MulAdd(q2, e2, hn::Set(dd, 1.0 - kEuler)));
    const VD near = hn::Set(dd, 1.0 / 64);
    return hn::IfThenElse(hn::Lt(hn::Abs(e1), near), y1, hn::IfThenElse(hn::Lt(hn::Abs(e2), near), y2, y));
  }
  // |lgamma(x)| passes float32's largest value above ~4.08e36 (and at its poles).
  template <class DD, class VD>
  static HWY_INLINE auto Special(DD dd, VD x) {
    return WideSpecial(dd, x, 0.0, 1e36);
  }
};

template <>
struct Wide<UOp::Digamma> {
  template <class DD, class VD>
  static HWY_INLINE VD Apply(DD dd, VD x) {
    const VD one = hn::Set(dd, 1.0);
    const Reflected<DD, VD> r0(dd, x);
    const auto neg = r0.neg, shift = r0.shift;
    const VD t = r0.t;
    // digamma(t) = digamma(z) - sum_i 1 / (t + i), i = 0 .. 7, z = t + 8 for t < 8:
    // the sum as one fraction num / den, so one division.
    VD num = one, den = t;
    for (int i = 1; i < 8; ++i) {
      const VD ti = hn::Add(t, hn::Set(dd, double(i)));
      num = hn::MulAdd(num, ti, den);
      den = hn::Mul(den, ti);
    }
    const VD z = hn::IfThenElse(shift, hn::Add(t, hn::Set(dd, 8.0)), t);
    // digamma(z) = log z - 1 / (2z) - sum_k B_2k / (2k z^2k), seven terms: the eighth
    // is below 2e-15 at z = 8 (with five, 3e-13 cost 40 ulp of float32 next to the
    // zero at 1.4616).
    const VD r = hn::Div(one, z), r2 = hn::Mul(r, r);
    VD s = hn::Set(dd, 1.0 / 12);
    s = hn::MulAdd(s, r2, hn::Set(dd, -691.0 / 32760));
    s = hn::MulAdd(s, r2, hn::Set(dd, 1.0 / 132));
    s = hn::MulAdd(s, r2, hn::Set(dd, -1.0 / 240));
    s = hn::MulAdd(s, r2, hn::Set(dd, 1.0 / 252));
    s = hn::MulAdd(s, r2, hn::Set(dd, -1.0 / 120));
    s = hn::MulAdd(s, r2, hn::Set(dd, 1.0 / 12));
    VD y = hn::Sub(hn::NegMulAdd(hn::Set(dd, 0.5), r, hn::Log(dd, z)), hn::Mul(s, r2));
    y = hn::IfThenElse(shift, hn::Sub(y, hn::Div(num, den)), y);
    // x < 0: digamma(x) = digamma(t) - pi cos(pi g) / sin(pi g), g = x - round(x)
    // (cot has period pi; g is exact, so the poles keep their digits).
    const VD pg = hn::Mul(hn::Set(dd, kPi), hn::Sub(x, hn::Round(x)));
    const VD cot = hn::Div(hn::Mul(hn::Set(dd, kPi), hn::Cos(dd, pg)), hn::Sin(dd, pg));
    return hn::IfThenElse(neg, hn::Sub(y, cot), y);
  }
  // Below 1e-30 in magnitude digamma(x) ~ -1 / x nears float32's largest value.
  template <class DD, class VD>
  static HWY_INLINE auto Special(DD dd, VD x) {
    return WideSpecial(dd, x, 1e-30, HUGE_VAL);
  }
};

// I0 from the Chebyshev series of e^-a I0(a) that the scalar body uses
// (cpu/bessel_i_cheb.h): in a / 2 - 1 up to 4, a / 2 - 3 up to 8, 16 / a - 1
// (times 1 / sqrt(a)) above; then times e^a. A vector whose lanes span
// several ranges runs Clenshaw once with each lane's coefficients. float32
// overflows past |x| ~ 91.9; from 90 on the lanes go to the scalar body.
template <>
struct Wide<UOp::I0> {
  template <size_t N, class DD, class VD>
  static HWY_INLINE VD Clenshaw(DD dd, const double (&c)[N], VD t) {
    VD b1 = hn::Zero(dd), b2 = hn::Zero(dd);
    const VD t2 = hn::Add(t, t);
    for (size_t k = N - 1; k >= 1; --k) {
      const VD b0 = hn::Add(hn::MulSub(t2, b1, b2), hn::Set(dd, c[k]));
      b2 = b1;
      b1 = b0;
    }
    return hn::Add(hn::MulSub(t, b1, b2), hn::Set(dd, c[0]));
  }
  template <class DD, class VD>
  static HWY_INLINE VD Apply(DD dd, VD x) {
    const VD a = hn::Abs(x);
    const auto small = hn::Le(a, hn::Set(dd, 4.0)), mid = hn::Le(a, hn::Set(dd, 8.0));
    const VD half = hn::Mul(a, hn::Set(dd, 0.5));
    VD e;
    if (hn::AllTrue(dd, small)) {
      e = Clenshaw(dd, cheb::kI0eSmall, hn::Sub(half, hn::Set(dd, 1.0)));
    } else {
      const VD ts = hn::Sub(half, hn::Set(dd, 1.0)), tm = hn::Sub(half, hn::Set(dd, 3.0));
      const VD tl = hn::Sub(hn::Div(hn::Set(dd, 16.0), a), hn::Set(dd, 1.0));
      const VD es = Clenshaw(dd, cheb::kI0eSmall, ts), em = Clenshaw(dd, cheb::kI0eMid, tm);
      const VD el = hn::Div(Clenshaw(dd, cheb::kI0eLarge, tl), hn::Sqrt(a));
      e = hn::IfThenElse(small, es, hn::IfThenElse(mid, em, el));
    }
    return hn::Mul(e, hn::Exp(dd, a));
  }
  template <class DD, class VD>
  static HWY_INLINE auto Special(DD dd, VD x) {
    return hn::Not(hn::Lt(hn::Abs(x), hn::Set(dd, 90.0)));  // NaN is not <
  }
};

// y[i] = K(x[i]) for the Wide ops; y may alias x.
template <UOp K>
void RunWide(const float* x, float* y, int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t N = int64_t(hn::Lanes(dd));
  alignas(64) float in[32];  // one vector's inputs (MaxLanes of double <= 32 for any target)
  auto one_vector = [&](const float* src, float* dst, int64_t m) {
    const auto v = hn::PromoteTo(dd, hn::LoadU(df, src));
    if (HWY_UNLIKELY(!hn::AllFalse(dd, Wide<K>::Special(dd, v)))) {
      for (int64_t j = 0; j < m; ++j) dst[j] = uop_scalar<K, float>(src[j]);
    } else {
      hn::StoreU(hn::DemoteTo(df, Wide<K>::Apply(dd, v)), df, dst);
    }
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) one_vector(x + i, y + i, N);
  if (i < n) {  // the tail through a vector padded with 1.5 (in range for both)
    const int64_t m = n - i;
    for (int64_t j = 0; j < N; ++j) in[j] = j < m ? x[i + j] : 1.5f;
    alignas(64) float out[32];
    one_vector(in, out, m);
    std::memcpy(y + i, out, size_t(m) * sizeof(float));
  }
}

// y[i] = K(x[i]); y may alias x.
template <UOp K>
void Run(const float* x, float* y, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  alignas(64) float in[64] = {};  // one vector's inputs (MaxLanes <= 64 for any target)
  alignas(64) float out[64];
  auto scalar_vector = [&](float* dst, int64_t m) {
    for (int64_t j = 0; j < m; ++j) dst[j] = uop_scalar<K, float>(in[j]);
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    if (HWY_UNLIKELY(!hn::AllFalse(d, Kern<K>::Special(d, v)))) {
      hn::Store(v, d, in);
      scalar_vector(y + i, N);
    } else {
      hn::StoreU(Kern<K>::Apply(d, v), d, y + i);
    }
  }
  if (i < n) {
    // The tail goes through a padded vector (padding 1 is in range for all ops).
    const int64_t m = n - i;
    for (int64_t j = 0; j < N; ++j) in[j] = j < m ? x[i + j] : 1.0f;
    const auto v = hn::Load(d, in);
    if (!hn::AllFalse(d, Kern<K>::Special(d, v))) {
      scalar_vector(out, m);
    } else {
      hn::Store(Kern<K>::Apply(d, v), d, out);
    }
    std::memcpy(y + i, out, size_t(m) * sizeof(float));
  }
}

void UnaryF32(int op, const float* x, float* y, int64_t n) {
  switch (UOp(op)) {
    case UOp::Exp: return Run<UOp::Exp>(x, y, n);
    case UOp::Expm1: return Run<UOp::Expm1>(x, y, n);
    case UOp::Log: return Run<UOp::Log>(x, y, n);
    case UOp::Log2: return Run<UOp::Log2>(x, y, n);
    case UOp::Log1p: return Run<UOp::Log1p>(x, y, n);
    case UOp::Sqrt: return Run<UOp::Sqrt>(x, y, n);
    case UOp::Rsqrt: return Run<UOp::Rsqrt>(x, y, n);
    case UOp::Sin: return Run<UOp::Sin>(x, y, n);
    case UOp::Cos: return Run<UOp::Cos>(x, y, n);
    case UOp::Tanh: return Run<UOp::Tanh>(x, y, n);
    case UOp::Sigmoid: return Run<UOp::Sigmoid>(x, y, n);
    case UOp::Silu: return Run<UOp::Silu>(x, y, n);
    case UOp::GeluTanh: return Run<UOp::GeluTanh>(x, y, n);
    case UOp::Erf:
      return Run<UOp::Erf>(x, y, n);
    case UOp::Lgamma:
      return RunWide<UOp::Lgamma>(x, y, n);
    case UOp::Digamma:
      return RunWide<UOp::Digamma>(x, y, n);
    case UOp::I0:
      return RunWide<UOp::I0>(x, y, n);
    default: return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kiln/float_types.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
HWY_EXPORT(UnaryF32);

bool unary_has_kernel(UOp k, DType dtype) {
  if (dtype != DType::Float32 && dtype != DType::BFloat16 && dtype != DType::Float16) return false;
  switch (k) {
    case UOp::Exp: case UOp::Expm1: case UOp::Log: case UOp::Log2: case UOp::Log1p:
    case UOp::Sqrt: case UOp::Rsqrt: case UOp::Sin: case UOp::Cos: case UOp::Tanh:
    case UOp::Sigmoid:
    case UOp::Silu:
    case UOp::GeluTanh:
    case UOp::Erf:
    case UOp::Lgamma:
    case UOp::Digamma:
    case UOp::I0:
      return true;
    default:
      return false;
  }
}

namespace {
// Transcendental work per element is ~10-50 cycles: chunks of 16k keep the
// threading overhead small.
constexpr int64_t kGrain = 16384;
constexpr int64_t kBlock = 1024;  // narrow floats are widened in blocks of this size

template <typename T>
void run_narrow(int op, const T* x, T* y, int64_t n) {
  float buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    for (int64_t j = 0; j < m; ++j) buf[j] = float(x[b + j]);
    HWY_DYNAMIC_DISPATCH(UnaryF32)(op, buf, buf, m);
    for (int64_t j = 0; j < m; ++j) y[b + j] = T(buf[j]);
  }
}
}  // namespace

void unary_contiguous(UOp k, DType dtype, const void* x, void* y, int64_t n) {
  const int op = int(k);
  switch (dtype) {
    case DType::Float32:
      parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        HWY_DYNAMIC_DISPATCH(UnaryF32)(op, static_cast<const float*>(x) + b, static_cast<float*>(y) + b, e - b);
      });
      return;
    case DType::BFloat16:
      parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        run_narrow(op, static_cast<const bfloat16*>(x) + b, static_cast<bfloat16*>(y) + b, e - b);
      });
      return;
    case DType::Float16:
      parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
        run_narrow(op, static_cast<const half*>(x) + b, static_cast<half*>(y) + b, e - b);
      });
      return;
    default:
      return;
  }
}

}  // namespace kiln::cpu
#endif
