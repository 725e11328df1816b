// CPU kernels of pow, maximum, minimum, atan2, copysign, heaviside
// (ops/registry/binary.h).
#include <cmath>

#include "cpu/ops/binary_loop.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// Integer power by squaring, wrapping on overflow; e >= 0.
template <typename C>
C int_pow(C base, C e) {
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

// Returns true when an integer exponent was negative.
bool pow_checked(const Operand& a, const Operand& b, const Tensor& out) {
  Flag negative;
  dispatch<kIntSet | kFloatSet | kComplexSet>(out.dtype(), "pow", [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C>) {
      run<T, T, T>(out, a, b, [&negative](C x, C e) -> C {
        if constexpr (std::is_signed_v<C>) {
          if (e < 0) {
            negative.raise();
            return C(0);
          }
        }
        return int_pow(x, e);
      });
    } else {
      run<T, T, T>(out, a, b, [](C x, C e) { return C(std::pow(x, e)); });
    }
  });
  return bool(negative);
}

template <bool kMax>
void minmax(const Operand& a, const Operand& b, const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet>(out.dtype(), kMax ? "maximum" : "minimum", [&]<typename T>() {
    using C = compute_t<T>;
    run<T, T, T>(out, a, b, [](C x, C y) -> C {
      if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(x)) return x;  // NaN propagates, as torch.maximum
        if (std::isnan(y)) return y;
      }
      if constexpr (kMax)
        return x < y ? y : x;
      else
        return y < x ? y : x;
    });
  });
}

enum class FloatOp { Atan2, Copysign };

// Integer operands (a.dtype integral) compute in float32 as they are loaded.
template <FloatOp K>
void float_op(const Operand& a, const Operand& b, const Tensor& out) {
  if (is_integral(a.dtype, true)) {
    dispatch<kBoolSet | kIntSet>(a.dtype, "float_op", [&]<typename T>() {
      if (K == FloatOp::Atan2)
        run<float, T, T>(out, a, b, [](T y, T x) { return std::atan2(float(y), float(x)); });
      else
        run<float, T, T>(out, a, b, [](T x, T y) { return std::copysign(float(x), float(y)); });
    });
    return;
  }
  dispatch<kFloatSet>(a.dtype, "float_op", [&]<typename T>() {
    using C = compute_t<T>;
    if (K == FloatOp::Atan2)
      run<T, T, T>(out, a, b, [](C y, C x) { return C(std::atan2(y, x)); });
    else
      run<T, T, T>(out, a, b, [](C x, C y) { return C(std::copysign(x, y)); });
  });
}

void heaviside(const Operand& a, const Operand& b, const Tensor& out) {
  dispatch<kBoolSet | kIntSet | kFloatSet>(out.dtype(), "heaviside", [&]<typename T>() {
    using C = compute_t<T>;
    // torch: x == 0 gives values, otherwise (x > 0); NaN gives 0.
    run<T, T, T>(out, a, b, [](C x, C v) { return x == C(0) ? v : C(x > C(0)); });
  });
}

}  // namespace

void register_binary_math_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::pow.set_kernel(kCpu, pow_checked);
  ops::maximum.set_kernel(kCpu, minmax<true>);
  ops::minimum.set_kernel(kCpu, minmax<false>);
  ops::atan2.set_kernel(kCpu, float_op<FloatOp::Atan2>);
  ops::copysign.set_kernel(kCpu, float_op<FloatOp::Copysign>);
  ops::heaviside.set_kernel(kCpu, heaviside);
}

}  // namespace kiln::cpu
