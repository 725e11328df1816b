// exp for float32 vectors, accurate to <= 1 ulp against float64 (see
// ExpNonPos), compiled per Highway target by each kernel that includes it:
// softmax, sampling and attention's online softmax.
//
// Cody-Waite range reduction with a degree-6 minimax polynomial; 2^k
// applied by vscalef on AVX-512; elsewhere straight into the exponent field
// when every lane's result is normal, and by two exact power-of-two factors
// otherwise, so subnormal results round once. exp(NaN) = NaN.

// Per-target include guard (Highway's idiom).
#if defined(KILN_CPU_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KILN_CPU_EXP_INL_H_
#undef KILN_CPU_EXP_INL_H_
#else
#define KILN_CPU_EXP_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// e^r for |r| <= ln2 / 2 (a little more): 1 + r + c2 r^2 + ... + c6 r^6,
// c2..c6 a minimax fit of the relative error (3.1e-9 in exact arithmetic,
// 4.3e-9 with these f32 coefficients). Estrin-style: the terms past r are
// summed first, in a dependency chain of 5 operations instead of Horner's 7
// (the chain is what bounds the exp's throughput where a loop does little
// else), and 1 is added last so its rounding is the only large one.
template <class DF>
HWY_INLINE hn::Vec<DF> ExpReduced(DF d, hn::Vec<DF> r) {
  using VF = hn::Vec<DF>;
  const VF r2 = hn::Mul(r, r);
  const VF b = hn::MulAdd(hn::Set(d, 0x1.5554900p-3f), r, hn::Set(d, 0x1.fffffcp-2f));  // c2 + c3 r
  const VF c = hn::MulAdd(hn::Set(d, 0x1.123abap-7f), r, hn::Set(d, 0x1.5558f6p-5f));   // c4 + c5 r
  const VF cd = hn::MulAdd(hn::Set(d, 0x1.6a22d0p-10f), r2, c);                         // c4 + c5 r + c6 r^2
  const VF r4 = hn::Mul(r2, r2);
  const VF u = hn::MulAdd(cd, r4, hn::MulAdd(b, r2, r));  // e^r - 1
  return hn::Add(u, hn::Set(d, 1.0f));
}

// t = k ln2 + r with |r| <= ln2 / 2; ln2 split so k * kLn2Hi is exact
// (|k| <= 151).
template <class DF>
HWY_INLINE hn::Vec<DF> ReduceLn2(DF d, hn::Vec<DF> t, hn::Vec<DF> k) {
  const hn::Vec<DF> r = hn::MulAdd(k, hn::Set(d, -0.693145751953125f), t);
  return hn::MulAdd(k, hn::Set(d, -1.428606765330187045e-6f), r);
}

// exp(t) for t <= 88 (softmax and attention pass t <= 0); kUpper takes any
// t and gives +inf past 88.7. t < -104 (and -inf) gives 0, the correctly
// rounded f32 result there; NaN gives NaN. <= 1 ulp against float64
// everywhere (tests/cpp/softmax_test.cc sweeps it).
template <bool kUpper = false, class DF>
HWY_INLINE hn::Vec<DF> ExpNonPos(DF d, hn::Vec<DF> t) {
  using VF = hn::Vec<DF>;
  const hn::RebindToSigned<DF> di;
#if !(HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && !HWY_HAVE_SCALABLE)
  // Common case first: every lane in [-86.5, 88] (softmax's x - max nearly
  // always is) has a normal result, so 2^k goes straight into p's exponent
  // field, and k comes from one FMA against 1.5 * 2^23, which leaves
  // round(t / ln2) in the low mantissa bits: ~16 operations instead of ~30.
  {
    // Without kUpper, t <= 88 holds (or t is NaN), so one compare does.
    const auto lo = hn::Ge(t, hn::Set(d, -86.5f));  // NaN: false
    const auto in = kUpper ? hn::And(lo, hn::Le(t, hn::Set(d, 88.0f))) : lo;
    if (HWY_LIKELY(hn::AllTrue(d, in))) {
      const VF shifter = hn::Set(d, 0x1.8p23f);
      const VF kf = hn::MulAdd(t, hn::Set(d, 1.44269504088896341f), shifter);
      const VF p = ExpReduced(d, ReduceLn2(d, t, hn::Sub(kf, shifter)));
      // kf's bits are those of 1.5 * 2^23 plus k: shifted left by 23 only k
      // remains, as an exponent increment (k in [-125, 127], p in
      // [0.7, 1.42]: the sum stays a normal float).
      return hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, kf))));
    }
  }
#endif
  // Lanes below -104 (-inf included) are computed as exp(0) and zeroed at the
  // end: running them through the scaling would underflow, and an underflow
  // costs a microcode assist (~100+ cycles) on x86 without flush-to-zero.
  const auto keep = hn::Not(hn::Lt(t, hn::Set(d, -104.0f)));  // NaN keeps (the compare is false)
  t = hn::IfThenElseZero(keep, t);
  if constexpr (kUpper) t = hn::IfThenElse(hn::Gt(t, hn::Set(d, 89.0f)), hn::Set(d, 89.0f), t);
  const VF k = hn::Round(hn::Mul(t, hn::Set(d, 1.44269504088896341f)));
  const VF p = ExpReduced(d, ReduceLn2(d, t, k));
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && !HWY_HAVE_SCALABLE
  if constexpr (hn::MaxLanes(d) == 16) return VF{_mm512_maskz_scalef_ps(keep.raw, p.raw, k.raw)};
#endif
  // p * 2^k as p * 2^(k/2) * 2^(k - k/2): both factors are normal for
  // k in [-151, 128], so only the last multiply rounds (once, also into the
  // subnormal range).
  const auto ki = hn::ConvertTo(di, k);
  const auto k1 = hn::ShiftRight<1>(ki);
  const auto bias = hn::Set(di, 127);
  const VF f1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(k1, bias)));
  const VF f2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(ki, k1), bias)));
  return hn::IfThenElseZero(keep, hn::Mul(hn::Mul(p, f1), f2));
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#endif  // KILN_CPU_EXP_INL_H_
