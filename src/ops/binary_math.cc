// pow, maximum, minimum, atan2, copysign, heaviside.
#include <cmath>

#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

// Integer power by squaring, wrapping on overflow; e >= 0.
template <typename C> C int_pow(C base, C e) {
  using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
  U result = 1, b = U(std::make_unsigned_t<C>(base));
  auto ue = std::make_unsigned_t<C>(e);
  while (ue) {
    if (ue & 1) result = U(result * b);
    b = U(b * b);
    ue >>= 1;
  }
  return C(std::make_unsigned_t<C>(result));
}

Tensor pow_impl(In a, In b, const Tensor* out, const Tensor* self) {
  bin::check_no_fp8("pow", a, b);
  const DType r = bin::result_type(a, b);
  if (r == DType::Bool) bin::throw_unsupported("pow", r, a, b);
  bin::Plan p = bin::make_plan("pow", a, b, r, r, out, self);
  bin::Flag negative;
  dispatch<kIntSet | kFloatSet | kComplexSet>(r, "pow", [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C>) {
      bin::run<T, T, T>(p, [&negative](C x, C e) -> C {
        if constexpr (std::is_signed_v<C>) {
          if (e < 0) {
            negative.raise();
            return C(0);
          }
        }
        return int_pow(x, e);
      });
    } else {
      bin::run<T, T, T>(p, [](C x, C e) { return C(std::pow(x, e)); });
    }
  });
  if (negative)
    throw ValueError("[pow] integers to negative integer powers are not allowed (" + a.desc() + ", " +
                     b.desc() + ")");
  return bin::finish(p);
}

template <bool kMax>
Tensor minmax_impl(In a, In b, const Tensor* out, const Tensor* self) {
  const char* op = kMax ? "maximum" : "minimum";
  bin::check_no_fp8(op, a, b);
  const DType r = bin::result_type(a, b);
  if (is_complex(r)) bin::throw_unsupported(op, r, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  dispatch<kBoolSet | kIntSet | kFloatSet>(r, op, [&]<typename T>() {
    using C = compute_t<T>;
    bin::run<T, T, T>(p, [](C x, C y) -> C {
      if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(x)) return x;  // NaN propagates, as torch.maximum
        if (std::isnan(y)) return y;
      }
      if constexpr (kMax) return x < y ? y : x;
      else return y < x ? y : x;
    });
  });
  return bin::finish(p);
}

enum class FloatOp { Atan2, Copysign };

// Ops that always compute in floating point: integers give float32.
Tensor float_op(FloatOp fop, In a, In b, const Tensor* out, const Tensor* self) {
  const char* op = fop == FloatOp::Atan2 ? "atan2" : "copysign";
  bin::check_no_fp8(op, a, b);
  const DType r0 = bin::result_type(a, b);
  if (is_complex(r0)) bin::throw_unsupported(op, r0, a, b);
  if (is_integral(r0, true)) {
    // Integers compute in float32 as they are loaded: no converted copies.
    bin::Plan p = bin::make_plan(op, a, b, r0, kDefaultFloat, out, self);
    dispatch<kBoolSet | kIntSet>(r0, op, [&]<typename T>() {
      if (fop == FloatOp::Atan2) bin::run<float, T, T>(p, [](T y, T x) { return std::atan2(float(y), float(x)); });
      else bin::run<float, T, T>(p, [](T x, T y) { return std::copysign(float(x), float(y)); });
    });
    return bin::finish(p);
  }
  const DType r = r0;
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  dispatch<kFloatSet>(r, op, [&]<typename T>() {
    using C = compute_t<T>;
    if (fop == FloatOp::Atan2) bin::run<T, T, T>(p, [](C y, C x) { return C(std::atan2(y, x)); });
    else bin::run<T, T, T>(p, [](C x, C y) { return C(std::copysign(x, y)); });
  });
  return bin::finish(p);
}

Tensor heaviside_impl(In a, In b, const Tensor* out, const Tensor* self) {
  bin::check_no_fp8("heaviside", a, b);
  if (a.t && b.t && a.t->dtype() != b.t->dtype())
    throw TypeError(std::string("[heaviside] is not implemented for tensors with different dtypes (") +
                    a.desc() + ", " + b.desc() + ")");
  const DType r = a.t && b.t ? a.t->dtype() : bin::result_type(a, b);
  if (is_complex(r)) bin::throw_unsupported("heaviside", r, a, b);
  bin::Plan p = bin::make_plan("heaviside", a, b, r, r, out, self);
  dispatch<kBoolSet | kIntSet | kFloatSet>(r, "heaviside", [&]<typename T>() {
    using C = compute_t<T>;
    // torch: x == 0 gives values, otherwise (x > 0); NaN gives 0.
    bin::run<T, T, T>(p, [](C x, C v) { return x == C(0) ? v : C(x > C(0)); });
  });
  return bin::finish(p);
}

Tensor maximum_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return minmax_impl<true>(a, b, out, self);
}
Tensor minimum_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return minmax_impl<false>(a, b, out, self);
}
Tensor atan2_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return float_op(FloatOp::Atan2, a, b, out, self);
}
Tensor copysign_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return float_op(FloatOp::Copysign, a, b, out, self);
}

}  // namespace

KILN_DEFINE_BINARY(pow, pow_impl)
KILN_DEFINE_BINARY(maximum, maximum_impl)
KILN_DEFINE_BINARY(minimum, minimum_impl)
KILN_DEFINE_BINARY(atan2, atan2_impl)
KILN_DEFINE_BINARY(copysign, copysign_impl)
KILN_DEFINE_BINARY(heaviside, heaviside_impl)

}  // namespace kiln
