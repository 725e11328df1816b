// CPU kernels of logical_and/or/xor (bool operands, bool out) and bitwise_and/
// or/xor and shifts (ops/registry/binary.h); shifts follow torch: a count
// outside [0, bits) shifts everything out.
#include "cpu/ops/binary_loop.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

enum class Logic { And, Or, Xor };

template <Logic K>
void logical(const Operand& a, const Operand& b, const Tensor& out) {
  if constexpr (K == Logic::And)
    run<bool, bool, bool>(out, a, b, [](bool x, bool y) { return x && y; });
  else if constexpr (K == Logic::Or)
    run<bool, bool, bool>(out, a, b, [](bool x, bool y) { return x || y; });
  else
    run<bool, bool, bool>(out, a, b, [](bool x, bool y) { return x != y; });
}

enum class Bits { And, Or, Xor, Shl, Shr };

// torch's shifts: a count outside [0, bits) shifts everything out (<<: 0;
// >>: 0 or -1 by sign).
template <typename C>
C shift_left(C a, C b) {
  constexpr int kBits = int(sizeof(C) * 8);
  using U = std::make_unsigned_t<C>;
  if constexpr (std::is_signed_v<C>) {
    if (b < 0) return C(0);
  }
  if (b >= C(kBits)) return C(0);
  return C(U(U(a) << int(b)));
}
template <typename C>
C shift_right(C a, C b) {
  constexpr int kBits = int(sizeof(C) * 8);
  bool out_of_range = b >= C(kBits);
  if constexpr (std::is_signed_v<C>) out_of_range = out_of_range || b < 0;
  if (out_of_range) {
    if constexpr (std::is_signed_v<C>)
      return a < 0 ? C(-1) : C(0);
    else
      return C(0);
  }
  return C(a >> int(b));
}

template <Bits K>
void bitwise(const Operand& a, const Operand& b, const Tensor& out) {
  dispatch<kBoolSet | kIntSet>(out.dtype(), "bitwise", [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      switch (K) {
        case Bits::And:
          run<T, T, T>(out, a, b, [](bool x, bool y) { return x && y; });
          break;
        case Bits::Or:
          run<T, T, T>(out, a, b, [](bool x, bool y) { return x || y; });
          break;
        default:
          run<T, T, T>(out, a, b, [](bool x, bool y) { return x != y; });
          break;
      }
    } else {
      switch (K) {
        case Bits::And:
          run<T, T, T>(out, a, b, [](T x, T y) { return T(x & y); });
          break;
        case Bits::Or:
          run<T, T, T>(out, a, b, [](T x, T y) { return T(x | y); });
          break;
        case Bits::Xor:
          run<T, T, T>(out, a, b, [](T x, T y) { return T(x ^ y); });
          break;
        case Bits::Shl:
          run<T, T, T>(out, a, b, shift_left<T>);
          break;
        default:
          run<T, T, T>(out, a, b, shift_right<T>);
          break;
      }
    }
  });
}

}  // namespace

void register_binary_logical_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::logical_and.set_kernel(kCpu, logical<Logic::And>);
  ops::logical_or.set_kernel(kCpu, logical<Logic::Or>);
  ops::logical_xor.set_kernel(kCpu, logical<Logic::Xor>);
  ops::bitwise_and.set_kernel(kCpu, bitwise<Bits::And>);
  ops::bitwise_or.set_kernel(kCpu, bitwise<Bits::Or>);
  ops::bitwise_xor.set_kernel(kCpu, bitwise<Bits::Xor>);
  ops::bitwise_left_shift.set_kernel(kCpu, bitwise<Bits::Shl>);
  ops::bitwise_right_shift.set_kernel(kCpu, bitwise<Bits::Shr>);
}

}  // namespace kiln::cpu
