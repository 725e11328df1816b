// CPU kernels of the division ops (ops/registry/binary.h): div (true, "trunc",
// "floor"), true_divide, floor_divide, remainder (Python's %, sign of the
// divisor) and fmod (C's, sign of the dividend). An integer zero divisor writes
// 0 and is reported to the front-end; float division follows IEEE.
#include <cmath>

#include "cpu/ops/binary_loop.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class Mode { True, Trunc, Floor, Remainder, Fmod };

// Python floor division of integers; b != 0 (checked by the caller). b == -1 is
// a wrapping negation so INT_MIN // -1 does not trap.
template <typename C>
C int_floordiv(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return wsub(C(0), a);
    const C q = C(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? C(q - 1) : q;
  } else {
    return C(a / b);
  }
}
template <typename C>
C int_truncdiv(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return wsub(C(0), a);
  }
  return C(a / b);
}
template <typename C>
C int_fmod(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return C(a % b);
}
template <typename C>
C int_remainder(C a, C b) {
  const C r = int_fmod(a, b);
  if constexpr (std::is_signed_v<C>) {
    if (r != 0 && ((r < 0) != (b < 0))) return C(r + b);
  }
  return r;
}

// torch's div_floor for floats: floor of the exact quotient, with the sign of
// zero kept and the rounding of (a - fmod(a, b)) / b corrected.
template <typename C>
C float_floordiv(C a, C b) {
  if (b == 0) return a / b;
  const C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= C(1);
  if (div != 0) {
    C fl = std::floor(div);
    if (div - fl > C(0.5)) fl += C(1);
    return fl;
  }
  return std::copysign(C(0), a / b);
}
template <typename C>
C float_remainder(C a, C b) {
  C mod = std::fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}

// Returns true when an integer divisor was zero.
bool divide(Mode mode, const Operand& a, const Operand& b, const Tensor& out) {
  const DType r = a.dtype;  // the compute dtype
  if (mode == Mode::True && is_integral(r, true)) {
    // Integers divide in float32 as they are loaded: no converted copies.
    dispatch<kBoolSet | kIntSet>(r, "div", [&]<typename T>() {
      run<float, T, T>(out, a, b, [](T x, T y) { return float(x) / float(y); });
    });
    return false;
  }
  if (mode == Mode::True) {
    dispatch<kFloatSet | kComplexSet>(r, "div", [&]<typename T>() {
      using C = compute_t<T>;
      run<T, T, T>(
          out, a, b, [](C x, C y) { return x / y; }, simd_arith<T>(ArithOp::Div));
    });
    return false;
  }
  Flag zero;
  dispatch<kIntSet | kFloatSet>(r, "div", [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C>) {
      auto guarded = [&zero](auto fn) {
        return [&zero, fn](C x, C y) -> C {
          if (y == 0) {
            zero.raise();
            return C(0);
          }
          return fn(x, y);
        };
      };
      switch (mode) {
        case Mode::Trunc:
          run<T, T, T>(out, a, b, guarded(int_truncdiv<C>));
          break;
        case Mode::Floor:
          run<T, T, T>(out, a, b, guarded(int_floordiv<C>));
          break;
        case Mode::Remainder:
          run<T, T, T>(out, a, b, guarded(int_remainder<C>));
          break;
        default:
          run<T, T, T>(out, a, b, guarded(int_fmod<C>));
          break;
      }
    } else {
      switch (mode) {
        case Mode::Trunc:
          run<T, T, T>(out, a, b, [](C x, C y) { return std::trunc(x / y); });
          break;
        case Mode::Floor:
          run<T, T, T>(out, a, b, float_floordiv<C>);
          break;
        case Mode::Remainder:
          run<T, T, T>(out, a, b, float_remainder<C>);
          break;
        default:
          run<T, T, T>(out, a, b, [](C x, C y) { return C(std::fmod(x, y)); });
          break;
      }
    }
  });
  return bool(zero);
}

bool div_rounding(const Operand& a, const Operand& b, ops::DivMode m, const Tensor& out) {
  const Mode mode = m == ops::DivMode::Trunc   ? Mode::Trunc
                    : m == ops::DivMode::Floor ? Mode::Floor
                                               : Mode::True;
  return divide(mode, a, b, out);
}
void true_divide(const Operand& a, const Operand& b, const Tensor& out) { divide(Mode::True, a, b, out); }
template <Mode M>
bool divide_as(const Operand& a, const Operand& b, const Tensor& out) {
  return divide(M, a, b, out);
}

}  // namespace

void register_binary_div_kernels() {
  ops::div.set_kernel(DeviceKind::CPU, div_rounding);
  ops::true_divide.set_kernel(DeviceKind::CPU, true_divide);
  ops::floor_divide.set_kernel(DeviceKind::CPU, divide_as<Mode::Floor>);
  ops::remainder.set_kernel(DeviceKind::CPU, divide_as<Mode::Remainder>);
  ops::fmod.set_kernel(DeviceKind::CPU, divide_as<Mode::Fmod>);
}

}  // namespace kiln::cpu
