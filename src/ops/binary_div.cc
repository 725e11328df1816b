// Division family: div (true / "trunc" / "floor"), true_divide, floor_divide,
// remainder (Python's %, sign of the divisor) and fmod (C's, sign of the
// dividend). Integer division by zero raises ValueError; float division by zero
// gives inf/nan as IEEE says.
#include <cmath>

#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

enum class Mode { True, Trunc, Floor, Remainder, Fmod };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::True: return "div";
    case Mode::Trunc: return "div";
    case Mode::Floor: return "floor_divide";
    case Mode::Remainder: return "remainder";
    default: return "fmod";
  }
}

// Python floor division of integers; b != 0 (checked by the caller). b == -1 is
// a wrapping negation so INT_MIN // -1 does not trap.
template <typename C> C int_floordiv(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return bin::wsub(C(0), a);
    const C q = C(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? C(q - 1) : q;
  } else {
    return C(a / b);
  }
}
template <typename C> C int_truncdiv(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return bin::wsub(C(0), a);
  }
  return C(a / b);
}
template <typename C> C int_fmod(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return C(a % b);
}
template <typename C> C int_remainder(C a, C b) {
  const C r = int_fmod(a, b);
  if constexpr (std::is_signed_v<C>) {
    if (r != 0 && ((r < 0) != (b < 0))) return C(r + b);
  }
  return r;
}

// torch's div_floor for floats: floor of the exact quotient, with the sign of
// zero kept and the rounding of (a - fmod(a, b)) / b corrected.
template <typename C> C float_floordiv(C a, C b) {
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
template <typename C> C float_remainder(C a, C b) {
  C mod = std::fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}

Tensor divide(Mode mode, In a, In b, const Tensor* out, const Tensor* self) {
  const char* op = mode_name(mode);
  bin::check_no_fp8(op, a, b);
  const DType r0 = bin::result_type(a, b);
  if (mode == Mode::True && is_integral(r0, true)) {
    // Integers divide in float32 as they are loaded: no converted copies.
    bin::Plan p = bin::make_plan(op, a, b, r0, kDefaultFloat, out, self);
    dispatch<kBoolSet | kIntSet>(r0, op, [&]<typename T>() {
      bin::run<float, T, T>(p, [](T x, T y) { return float(x) / float(y); });
    });
    return bin::finish(p);
  }
  if (mode == Mode::True) {
    const DType r = r0;
    bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
    dispatch<kFloatSet | kComplexSet>(r, op, [&]<typename T>() {
      using C = compute_t<T>;
      bin::run<T, T, T>(p, [](C x, C y) { return x / y; }, bin::simd_arith<T>(cpu::ArithOp::Div));
    });
    return bin::finish(p);
  }
  if (r0 == DType::Bool || is_complex(r0)) bin::throw_unsupported(op, r0, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r0, r0, out, self);
  bin::Flag zero;
  dispatch<kIntSet | kFloatSet>(r0, op, [&]<typename T>() {
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
        case Mode::Trunc: bin::run<T, T, T>(p, guarded(int_truncdiv<C>)); break;
        case Mode::Floor: bin::run<T, T, T>(p, guarded(int_floordiv<C>)); break;
        case Mode::Remainder: bin::run<T, T, T>(p, guarded(int_remainder<C>)); break;
        default: bin::run<T, T, T>(p, guarded(int_fmod<C>)); break;
      }
    } else {
      switch (mode) {
        case Mode::Trunc: bin::run<T, T, T>(p, [](C x, C y) { return std::trunc(x / y); }); break;
        case Mode::Floor: bin::run<T, T, T>(p, float_floordiv<C>); break;
        case Mode::Remainder: bin::run<T, T, T>(p, float_remainder<C>); break;
        default: bin::run<T, T, T>(p, [](C x, C y) { return C(std::fmod(x, y)); }); break;
      }
    }
  });
  if (zero)
    throw ValueError(std::string("[") + op + "] integer division by zero (ZeroDivisionError) with " +
                     a.desc() + " and " + b.desc());
  return bin::finish(p);
}

Mode parse_mode(std::string_view m) {
  if (m.empty()) return Mode::True;
  if (m == "trunc") return Mode::Trunc;
  if (m == "floor") return Mode::Floor;
  throw ValueError("[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" +
                   std::string(m) + "'");
}

Tensor true_div_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return divide(Mode::True, a, b, out, self);
}
Tensor floor_div_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return divide(Mode::Floor, a, b, out, self);
}
Tensor remainder_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return divide(Mode::Remainder, a, b, out, self);
}
Tensor fmod_impl(In a, In b, const Tensor* out, const Tensor* self) {
  return divide(Mode::Fmod, a, b, out, self);
}

}  // namespace

Tensor div(const Tensor& a, const Tensor& b, std::string_view rm, const Tensor* out) {
  return divide(parse_mode(rm), a, b, out, nullptr);
}
Tensor div(const Tensor& a, const Scalar& b, std::string_view rm, const Tensor* out) {
  return divide(parse_mode(rm), a, b, out, nullptr);
}
Tensor div(const Scalar& a, const Tensor& b, std::string_view rm, const Tensor* out) {
  return divide(parse_mode(rm), a, b, out, nullptr);
}
const Tensor& div_(const Tensor& self, const Tensor& other, std::string_view rm) {
  divide(parse_mode(rm), self, other, nullptr, &self);
  return self;
}
const Tensor& div_(const Tensor& self, const Scalar& other, std::string_view rm) {
  divide(parse_mode(rm), self, other, nullptr, &self);
  return self;
}

KILN_DEFINE_BINARY(true_divide, true_div_impl)
KILN_DEFINE_BINARY(floor_divide, floor_div_impl)
KILN_DEFINE_BINARY(remainder, remainder_impl)
KILN_DEFINE_BINARY(fmod, fmod_impl)

}  // namespace kiln
