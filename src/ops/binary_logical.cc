// logical_and/or/xor (bool results from any dtype: nonzero is true) and
// bitwise_and/or/xor and shifts (integers and bool; shifts integers only). The
// kernels are the ops of ops/registry/binary.h.
#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

enum class Logic { And, Or, Xor };

Tensor logical(Logic k, In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = k == Logic::And ? "logical_and" : k == Logic::Or ? "logical_or" : "logical_xor";
  bin::check_no_fp8(op, a, b);
  // Truthiness survives promotion, so each operand is reduced to bool on its own.
  bin::Plan p = bin::make_plan(op, a, b, DType::Bool, DType::Bool, out, self);
  const Device d = bin::device(op, p);
  switch (k) {
    case Logic::And:
      ops::logical_and(d, p.a, p.b, p.dest);
      break;
    case Logic::Or:
      ops::logical_or(d, p.a, p.b, p.dest);
      break;
    default:
      ops::logical_xor(d, p.a, p.b, p.dest);
      break;
  }
  return bin::finish(p);
}

enum class Bits { And, Or, Xor, Shl, Shr };

const char* bits_name(Bits k) {
  static const char* kNames[] = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                                 "bitwise_right_shift"};
  return kNames[int(k)];
}

Tensor bitwise(Bits k, In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = bits_name(k);
  bin::check_no_fp8(op, a, b);
  const DType r = bin::result_type(a, b);
  const bool shift = k == Bits::Shl || k == Bits::Shr;
  if (!is_integral(r, !shift)) bin::throw_unsupported(op, r, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  const Device d = bin::device(op, p);
  switch (k) {
    case Bits::And:
      ops::bitwise_and(d, p.a, p.b, p.dest);
      break;
    case Bits::Or:
      ops::bitwise_or(d, p.a, p.b, p.dest);
      break;
    case Bits::Xor:
      ops::bitwise_xor(d, p.a, p.b, p.dest);
      break;
    case Bits::Shl:
      ops::bitwise_left_shift(d, p.a, p.b, p.dest);
      break;
    default:
      ops::bitwise_right_shift(d, p.a, p.b, p.dest);
      break;
  }
  return bin::finish(p);
}

Tensor land(In a, In b, const Tensor& o, const Tensor* s) { return logical(Logic::And, a, b, o, s); }
Tensor lor(In a, In b, const Tensor& o, const Tensor* s) { return logical(Logic::Or, a, b, o, s); }
Tensor lxor(In a, In b, const Tensor& o, const Tensor* s) { return logical(Logic::Xor, a, b, o, s); }
Tensor band(In a, In b, const Tensor& o, const Tensor* s) { return bitwise(Bits::And, a, b, o, s); }
Tensor bor(In a, In b, const Tensor& o, const Tensor* s) { return bitwise(Bits::Or, a, b, o, s); }
Tensor bxor(In a, In b, const Tensor& o, const Tensor* s) { return bitwise(Bits::Xor, a, b, o, s); }
Tensor bshl(In a, In b, const Tensor& o, const Tensor* s) { return bitwise(Bits::Shl, a, b, o, s); }
Tensor bshr(In a, In b, const Tensor& o, const Tensor* s) { return bitwise(Bits::Shr, a, b, o, s); }

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
