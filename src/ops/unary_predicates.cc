// isnan, isinf, isfinite and logical_not (bool results for every dtype) and
// bitwise_not (integers and bool only).
#include <cmath>

#include "kiln/unary.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

using unary_detail::check_inplace;
using unary_detail::unsupported;

enum class Pred { IsNan, IsInf, IsFinite };

template <Pred P, typename R>
bool pred_real(R v) {
  if constexpr (P == Pred::IsNan) return std::isnan(v);
  else if constexpr (P == Pred::IsInf) return std::isinf(v);
  else return std::isfinite(v);
}

template <Pred P>
Tensor predicate(const Tensor& x, const char* op) {
  // Integers and bool are never NaN or inf.
  if (is_integral(x.dtype(), true)) return full(x.sizes(), Scalar(P == Pred::IsFinite), DType::Bool);
  Tensor out = empty(x.sizes(), DType::Bool);
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
  return out;
}

void logical_not_into(const Tensor& x, const Tensor& out) {
  dispatch<kAllSet>(x.dtype(), "logical_not", [&]<typename T>() {
    unary_loop<bool, T>(out, x, [](T v) { return !cast<bool>(v); });
  });
}

void bitwise_not_into(const Tensor& x, const Tensor& out, const char* op) {
  dispatch<kBoolSet | kIntSet>(x.dtype(), op, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) unary_loop<T, T>(out, x, [](T v) { return !v; });
    else unary_loop<T, T>(out, x, [](T v) { return T(~v); });
  });
}

}  // namespace

Tensor isnan(const Tensor& x) { return predicate<Pred::IsNan>(x, "isnan"); }
Tensor isinf(const Tensor& x) { return predicate<Pred::IsInf>(x, "isinf"); }
Tensor isfinite(const Tensor& x) { return predicate<Pred::IsFinite>(x, "isfinite"); }

Tensor logical_not(const Tensor& x) {
  Tensor out = empty(x.sizes(), DType::Bool);
  logical_not_into(x, out);
  return out;
}

Tensor& logical_not_(Tensor& x) {
  // torch keeps x's dtype: the bool result is written back as 1/0.
  check_inplace("logical_not_", x.dtype(), x);
  if (x.dtype() == DType::Bool) {
    logical_not_into(x, x);
  } else {
    x.copy_(logical_not(x));
  }
  return x;
}

Tensor bitwise_not(const Tensor& x) {
  Tensor out = empty(x.sizes(), x.dtype());
  bitwise_not_into(x, out, "bitwise_not");
  return out;
}

Tensor& bitwise_not_(Tensor& x) {
  check_inplace("bitwise_not_", x.dtype(), x);
  bitwise_not_into(x, x, "bitwise_not_");
  return x;
}

}  // namespace kiln
