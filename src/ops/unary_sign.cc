// Sign and magnitude ops that keep integer dtypes: neg, abs, sign, relu.
#include <cmath>
#include <complex>
#include <type_traits>

#include "kiln/unary.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

using unary_detail::check_inplace;
using unary_detail::unsupported;

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

void neg_into(const Tensor& x, const Tensor& out) {
  dispatch<kNegAbsSet>(x.dtype(), "neg", [&]<typename T>() { unary_loop<T, T>(out, x, [](T v) { return neg_one(v); }); });
}

void abs_into(const Tensor& x, const Tensor& out) {
  dispatch<kNegAbsSet | kBoolSet>(x.dtype(), "abs", [&]<typename T>() {
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      unary_loop<R, T>(out, x, [](T v) { return std::abs(v); });
    } else {
      unary_loop<T, T>(out, x, [](T v) { return abs_one(v); });
    }
  });
}

void sign_into(const Tensor& x, const Tensor& out, const char* op) {
  if (is_complex(x.dtype()))
    throw TypeError(std::string("[") + op + "] is not defined for complex tensors (dtype " + name(x.dtype()) +
                    "); use sgn");
  dispatch<kBoolSet | kIntSet | kFloatSet>(x.dtype(), op, [&]<typename T>() {
    unary_loop<T, T>(out, x, [](T v) { return sign_one(v); });
  });
}

void relu_into(const Tensor& x, const Tensor& out, const char* op) {
  if (x.dtype() == DType::Bool) throw TypeError(std::string("[") + op + "] boolean inputs are not supported");
  dispatch<kIntSet | kFloatSet>(x.dtype(), op, [&]<typename T>() {
    unary_loop<T, T>(out, x, [](T v) { return relu_one(v); });
  });
}

void check_neg(const Tensor& x, const char* op) {
  if (x.dtype() == DType::Bool)
    throw TypeError(std::string("[") + op +
                    "] negation of a bool tensor is not supported; use logical_not or ~ to invert a mask");
}

}  // namespace

Tensor neg(const Tensor& x) {
  check_neg(x, "neg");
  Tensor out = empty(x.sizes(), x.dtype());
  neg_into(x, out);
  return out;
}
Tensor& neg_(Tensor& x) {
  check_neg(x, "neg_");
  check_inplace("neg_", x.dtype(), x);
  neg_into(x, x);
  return x;
}

Tensor abs(const Tensor& x) {
  Tensor out = empty(x.sizes(), to_real(x.dtype()));
  abs_into(x, out);
  return out;
}
Tensor& abs_(Tensor& x) {
  check_inplace("abs_", to_real(x.dtype()), x);
  abs_into(x, x);
  return x;
}

Tensor sign(const Tensor& x) {
  Tensor out = empty(x.sizes(), x.dtype());
  sign_into(x, out, "sign");
  return out;
}
Tensor& sign_(Tensor& x) {
  check_inplace("sign_", x.dtype(), x);
  sign_into(x, x, "sign_");
  return x;
}

Tensor relu(const Tensor& x) {
  Tensor out = empty(x.sizes(), x.dtype());
  relu_into(x, out, "relu");
  return out;
}
Tensor& relu_(Tensor& x) {
  check_inplace("relu_", x.dtype(), x);
  relu_into(x, x, "relu_");
  return x;
}

}  // namespace kiln
