// CPU kernels of neg, abs, sign and relu (ops/registry/unary.h): scalar
// bodies over the strided loop, in x's storage type (abs of complex stores
// its real magnitude). The front-end has rejected the dtypes each op does not
// take (neg/relu of bool, sign of complex, FP8 for sign and relu).
#include <cmath>
#include <complex>
#include <type_traits>

#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Two's-complement wrap for signed negation (torch: -INT_MIN == INT_MIN)
// without the undefined behaviour of negating the minimum in C++.
template <typename T>
T wrap_neg(T v) {
  using U = std::make_unsigned_t<T>;
  return T(U(0) - U(v));
}

template <typename T>
T neg_one(T v) {
  if constexpr (is_narrow_float_v<T>) return T(-float(v));  // exact: flips the sign
  else if constexpr (std::is_integral_v<T>) return wrap_neg(v);
  else return -v;
}

template <typename T>
T abs_one(T v) {
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) return v;
  else if constexpr (is_narrow_float_v<T>) return T(std::fabs(float(v)));
  else if constexpr (std::is_integral_v<T>) return v < 0 ? wrap_neg(v) : v;
  else return std::fabs(v);
}

// (0 < v) - (v < 0), as torch: sign(NaN) = 0 and sign(-0.0) = +0.
template <typename T>
T sign_one(T v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else {
    using C = compute_t<T>;
    const C c = C(v);
    return T(C(int(C(0) < c) - int(c < C(0))));
  }
}

template <typename T>
T relu_one(T v) {
  using C = compute_t<T>;
  const C c = C(v);
  return c > C(0) ? v : (c != c ? v : T(C(0)));  // NaN propagates, as clamp_min
}

// Fp8 is kept for neg and abs: their results are exact in the same format.
constexpr DTypeSet kNegAbsSet = kIntSet | kFloatSet | kFp8Set | kComplexSet;

void neg(const Tensor& x, const Tensor& out) {
  dispatch<kNegAbsSet>(x.dtype(), "neg", [&]<typename T>() { unary_loop<T, T>(out, x, [](T v) { return neg_one(v); }); });
}

void abs(const Tensor& x, const Tensor& out) {
  dispatch<kNegAbsSet | kBoolSet>(x.dtype(), "abs", [&]<typename T>() {
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      unary_loop<R, T>(out, x, [](T v) { return std::abs(v); });
    } else {
      unary_loop<T, T>(out, x, [](T v) { return abs_one(v); });
    }
  });
}

void sign(const Tensor& x, const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), "sign", [&]<typename T>() {
    unary_loop<T, T>(out, x, [](T v) { return sign_one(v); });
  });
}

void relu(const Tensor& x, const Tensor& out) {
  dispatch<kIntSet | kFloatSet>(x.dtype(), "relu", [&]<typename T>() {
    unary_loop<T, T>(out, x, [](T v) { return relu_one(v); });
  });
}

}  // namespace

void register_unary_sign_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::neg.set_kernel(kCpu, neg);
  ops::abs.set_kernel(kCpu, abs);
  ops::sign.set_kernel(kCpu, sign);
  ops::relu.set_kernel(kCpu, relu);
}

}  // namespace kiln::cpu
