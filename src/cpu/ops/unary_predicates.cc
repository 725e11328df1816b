// CPU kernels of isnan, isinf, isfinite (non-integral x; bool out),
// logical_not (any x; bool out) and bitwise_not (integers and bool; x's
// dtype) of ops/registry/unary.h: scalar bodies over the strided loop.
#include <cmath>

#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class Pred { IsNan, IsInf, IsFinite };

template <Pred P, typename R>
bool pred_real(R v) {
  if constexpr (P == Pred::IsNan) return std::isnan(v);
  else if constexpr (P == Pred::IsInf) return std::isinf(v);
  else return std::isfinite(v);
}

// Integers and bool (never NaN or inf) are answered by the front-end.
template <Pred P>
void predicate(const Tensor& x, const Tensor& out) {
  constexpr const char* op = P == Pred::IsNan ? "isnan" : P == Pred::IsInf ? "isinf" : "isfinite";
  dispatch<kFloatSet | kFp8Set | kComplexSet>(x.dtype(), op, [&]<typename T>() {
    unary_loop<bool, T>(out, x, [](T v) {
      if constexpr (is_complex_v<T>) {
        // NaN / inf when either part is (torch: x != x, |x| == inf).
        if constexpr (P == Pred::IsFinite) return std::isfinite(v.real()) && std::isfinite(v.imag());
        else return pred_real<P>(v.real()) || pred_real<P>(v.imag());
      } else {
        return pred_real<P>(compute_t<T>(v));
      }
    });
  });
}

void logical_not(const Tensor& x, const Tensor& out) {
  dispatch<kAllSet>(x.dtype(), "logical_not", [&]<typename T>() {
    unary_loop<bool, T>(out, x, [](T v) { return !cast<bool>(v); });
  });
}

void bitwise_not(const Tensor& x, const Tensor& out) {
  dispatch<kBoolSet | kIntSet>(x.dtype(), "bitwise_not", [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) unary_loop<T, T>(out, x, [](T v) { return !v; });
    else unary_loop<T, T>(out, x, [](T v) { return T(~v); });
  });
}

}  // namespace

void register_unary_predicates_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::isnan.set_kernel(kCpu, predicate<Pred::IsNan>);
  ops::isinf.set_kernel(kCpu, predicate<Pred::IsInf>);
  ops::isfinite.set_kernel(kCpu, predicate<Pred::IsFinite>);
  ops::logical_not.set_kernel(kCpu, logical_not);
  ops::bitwise_not.set_kernel(kCpu, bitwise_not);
}

}  // namespace kiln::cpu
