// logical_and/or/xor (bool results from any dtype: nonzero is true) and
// bitwise_and/or/xor and shifts (integers and bool; shifts integers only).
#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

enum class Logic { And, Or, Xor };

Tensor logical(Logic k, In a, In b, const Tensor* out, const Tensor* self) {
  const char* op = k == Logic::And ? "logical_and" : k == Logic::Or ? "logical_or" : "logical_xor";
  bin::check_no_fp8(op, a, b);
  // Truthiness survives promotion, so each operand is reduced to bool on its own.
  bin::Plan p = bin::make_plan(op, a, b, DType::Bool, DType::Bool, out, self);
  switch (k) {
    case Logic::And: bin::run<bool, bool, bool>(p, [](bool x, bool y) { return x && y; }); break;
    case Logic::Or: bin::run<bool, bool, bool>(p, [](bool x, bool y) { return x || y; }); break;
    default: bin::run<bool, bool, bool>(p, [](bool x, bool y) { return x != y; }); break;
  }
  return bin::finish(p);
}

enum class Bits { And, Or, Xor, Shl, Shr };

const char* bits_name(Bits k) {
  static const char* kNames[] = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                                 "bitwise_right_shift"};
  return kNames[int(k)];
}

// torch's shifts: a count outside [0, bits) shifts everything out (<<: 0;
// >>: 0 or -1 by sign).
template <typename C> C shift_left(C a, C b) {
  constexpr int kBits = int(sizeof(C) * 8);
  using U = std::make_unsigned_t<C>;
  if constexpr (std::is_signed_v<C>) {
    if (b < 0) return C(0);
  }
  if (b >= C(kBits)) return C(0);
  return C(U(U(a) << int(b)));
}
template <typename C> C shift_right(C a, C b) {
  constexpr int kBits = int(sizeof(C) * 8);
  bool out_of_range = b >= C(kBits);
  if constexpr (std::is_signed_v<C>) out_of_range = out_of_range || b < 0;
  if (out_of_range) {
    if constexpr (std::is_signed_v<C>) return a < 0 ? C(-1) : C(0);
    else return C(0);
  }
  return C(a >> int(b));
}

Tensor bitwise(Bits k, In a, In b, const Tensor* out, const Tensor* self) {
  const char* op = bits_name(k);
  bin::check_no_fp8(op, a, b);
  const DType r = bin::result_type(a, b);
  const bool shift = k == Bits::Shl || k == Bits::Shr;
  if (!is_integral(r, !shift)) bin::throw_unsupported(op, r, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  dispatch<kBoolSet | kIntSet>(r, op, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      switch (k) {
        case Bits::And: bin::run<T, T, T>(p, [](bool x, bool y) { return x && y; }); break;
        case Bits::Or: bin::run<T, T, T>(p, [](bool x, bool y) { return x || y; }); break;
        default: bin::run<T, T, T>(p, [](bool x, bool y) { return x != y; }); break;
      }
    } else {
      switch (k) {
        case Bits::And: bin::run<T, T, T>(p, [](T x, T y) { return T(x & y); }); break;
        case Bits::Or: bin::run<T, T, T>(p, [](T x, T y) { return T(x | y); }); break;
        case Bits::Xor: bin::run<T, T, T>(p, [](T x, T y) { return T(x ^ y); }); break;
        case Bits::Shl: bin::run<T, T, T>(p, shift_left<T>); break;
        default: bin::run<T, T, T>(p, shift_right<T>); break;
      }
    }
  });
  return bin::finish(p);
}

Tensor land(In a, In b, const Tensor* o, const Tensor* s) { return logical(Logic::And, a, b, o, s); }
Tensor lor(In a, In b, const Tensor* o, const Tensor* s) { return logical(Logic::Or, a, b, o, s); }
Tensor lxor(In a, In b, const Tensor* o, const Tensor* s) { return logical(Logic::Xor, a, b, o, s); }
Tensor band(In a, In b, const Tensor* o, const Tensor* s) { return bitwise(Bits::And, a, b, o, s); }
Tensor bor(In a, In b, const Tensor* o, const Tensor* s) { return bitwise(Bits::Or, a, b, o, s); }
Tensor bxor(In a, In b, const Tensor* o, const Tensor* s) { return bitwise(Bits::Xor, a, b, o, s); }
Tensor bshl(In a, In b, const Tensor* o, const Tensor* s) { return bitwise(Bits::Shl, a, b, o, s); }
Tensor bshr(In a, In b, const Tensor* o, const Tensor* s) { return bitwise(Bits::Shr, a, b, o, s); }

}  // namespace

KILN_DEFINE_BINARY(logical_and, land)
KILN_DEFINE_BINARY(logical_or, lor)
KILN_DEFINE_BINARY(logical_xor, lxor)
KILN_DEFINE_BINARY(bitwise_and, band)
KILN_DEFINE_BINARY(bitwise_or, bor)
KILN_DEFINE_BINARY(bitwise_xor, bxor)
KILN_DEFINE_BINARY(bitwise_left_shift, bshl)
KILN_DEFINE_BINARY(bitwise_right_shift, bshr)

}  // namespace kiln
