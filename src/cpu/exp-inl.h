// exp for float32 vectors, accurate to <= 1 ulp against float64 (see
// ExpNonPos), compiled per Highway target by each kernel that includes it:
// softmax, sampling and attention's online softmax.
//
// Cody-Waite range reduction with a degree-7 polynomial; 2^k applied by
// vscalef on AVX-512 and by two exact power-of-two factors elsewhere, so
// subnormal results round once. exp(NaN) = NaN.

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

// exp(t) for t <= 0 (t > 0 up to 88.7 is also right; kUpper clamps larger t
// to give +inf). t < -104 (and -inf) gives 0, the correctly rounded f32 result
// there; NaN gives NaN.
template <bool kUpper = false, class DF>
HWY_INLINE hn::Vec<DF> ExpNonPos(DF d, hn::Vec<DF> t) {
  using VF = hn::Vec<DF>;
  // Lanes below -104 (-inf included) are computed as exp(0) and zeroed at the
  // end: running them through the scaling would underflow, and an underflow
  // costs a microcode assist (~100+ cycles) on x86 without flush-to-zero.
  const auto keep = hn::Not(hn::Lt(t, hn::Set(d, -104.0f)));  // NaN keeps (the compare is false)
  t = hn::IfThenElseZero(keep, t);
  if constexpr (kUpper) t = hn::IfThenElse(hn::Gt(t, hn::Set(d, 89.0f)), hn::Set(d, 89.0f), t);
  // t = k ln2 + r, |r| <= ln2 / 2; ln2 split so k * kLn2Hi is exact (k <= 151).
  const VF k = hn::Round(hn::Mul(t, hn::Set(d, 1.44269504088896341f)));
  VF r = hn::MulAdd(k, hn::Set(d, -0.693145751953125f), t);
  r = hn::MulAdd(k, hn::Set(d, -1.428606765330187045e-6f), r);
  // e^r by Taylor to degree 7: truncation < r^8 / 8! = 5e-9 relative.
  VF p = hn::Set(d, 1.0f / 5040.0f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 720.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 120.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 24.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f / 6.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 0.5f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f));
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && !HWY_HAVE_SCALABLE
  if constexpr (hn::MaxLanes(d) == 16) return VF{_mm512_maskz_scalef_ps(keep.raw, p.raw, k.raw)};
#endif
  // p * 2^k as p * 2^(k/2) * 2^(k - k/2): both factors are normal for
  // k in [-151, 128], so only the last multiply rounds (once, also into the
  // subnormal range).
  const hn::RebindToSigned<DF> di;
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
