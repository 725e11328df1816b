// Op table entries of the comparisons, logical and bitwise ops
// (ops/registry/binary.h).
#include "op_table/binary.h"

namespace op_table::binary {
namespace {

using namespace kiln;
using V = const std::vector<double>&;
using X = const std::vector<Tensor>&;

double b2d(bool b) { return b ? 1.0 : 0.0; }

// Bits of an integer dtype, for the shift oracles.
int bits_of(DType d) {
  switch (d) {
    case DType::UInt8:
      return 8;
    case DType::Int32:
      return 32;
    default:
      return 64;
  }
}
// v wrapped to a `bits`-wide integer (unsigned for uint8), as a double.
double wrap(double v, DType d) {
  const int bits = bits_of(d);
  if (bits == 64) return v;  // the test values stay far inside int64
  const double m = std::ldexp(1.0, bits);
  double r = std::fmod(v, m);
  if (r < 0) r += m;
  if (d != DType::UInt8 && r >= m / 2) r -= m;
  return r;
}
// torch's shifts: a count outside [0, bits) shifts everything out.
double shl_ref(double a, double b, DType d) {
  if (b < 0 || b >= bits_of(d)) return 0;
  return wrap(a * std::ldexp(1.0, int(b)), d);
}
double shr_ref(double a, double b, DType d) {
  if (b < 0 || b >= bits_of(d)) return a < 0 ? -1 : 0;
  return std::floor(a / std::ldexp(1.0, int(b)));
}
// Bitwise ops on the two's complement of a and b.
int64_t bits(double v) { return int64_t(v); }

const auto kBitDtypes = join(kInts, {DType::Bool});

#define CMP(name, expr)                                                            \
  tensors(                                                                         \
      #name, kFloatsAndInts, -3, 3, [](X x) { return name(x[0], x[1]); },          \
      [](V v, const Tensor&) { return b2d(v[0] expr v[1]); }),                     \
      with_scalar(                                                                 \
          #name, kFloatsAndInts, -3, 3, [](X x) { return name(x[0], Scalar(1)); }, \
          [](V v, const Tensor&) { return b2d(v[0] expr 1); }),                    \
      with_scalar(                                                                 \
          #name, {DType::UInt8}, 0, 3, [](X x) { return name(x[0], Scalar(-1)); }, \
          [](V v, const Tensor&) { return b2d(v[0] expr - 1); })

// Complex operands with both parts in {-2, ..., 2}, so equal elements occur.
void small_integers(size_t, const Shape&, std::vector<cdouble>& v) {
  for (cdouble& z : v) z = {std::nearbyint(z.real() / 2), std::nearbyint(z.imag() / 2)};
}
Entry complex_cmp(const char* op, Tensor (*fn)(const Tensor&, const Tensor&, const Tensor&), bool eq) {
  Entry e = complex_tensors(
      op, -4, 4, [fn](X x) { return fn(x[0], x[1], Tensor()); },
      [eq](const std::vector<cdouble>& v) { return cdouble((v[0] == v[1]) == eq); });
  e.complex_condition = small_integers;
  return e;
}

KILN_OP_TABLE({
    complex_cmp("eq", kiln::eq, true),
    complex_cmp("ne", kiln::ne, false),
});

KILN_OP_TABLE({
    CMP(eq, ==),
    CMP(ne, !=),
    CMP(lt, <),
    CMP(le, <=),
    CMP(gt, >),
    CMP(ge, >=),
    with_scalar(
        "lt", kFloats, -3, 3, [](X x) { return lt(x[0], Scalar(0.5)); },
        [](V v, const Tensor&) { return b2d(v[0] < 0.5); }),

    tensors(
        "logical_and", kFloatsAndInts, -2, 2, [](X x) { return logical_and(x[0], x[1]); },
        [](V v, const Tensor&) { return b2d(v[0] != 0 && v[1] != 0); }),
    tensors(
        "logical_or", kFloatsAndInts, -2, 2, [](X x) { return logical_or(x[0], x[1]); },
        [](V v, const Tensor&) { return b2d(v[0] != 0 || v[1] != 0); }),
    tensors(
        "logical_xor", kFloatsAndInts, -2, 2, [](X x) { return logical_xor(x[0], x[1]); },
        [](V v, const Tensor&) { return b2d((v[0] != 0) != (v[1] != 0)); }),
    with_scalar(
        "logical_and", kFloatsAndInts, -2, 2, [](X x) { return logical_and(x[0], Scalar(true)); },
        [](V v, const Tensor&) { return b2d(v[0] != 0); }),

    tensors(
        "bitwise_and", kBitDtypes, -9, 9, [](X x) { return bitwise_and(x[0], x[1]); },
        [](V v, const Tensor&) { return double(bits(v[0]) & bits(v[1])); }),
    tensors(
        "bitwise_or", kBitDtypes, -9, 9, [](X x) { return bitwise_or(x[0], x[1]); },
        [](V v, const Tensor&) { return double(bits(v[0]) | bits(v[1])); }),
    tensors(
        "bitwise_xor", kBitDtypes, -9, 9, [](X x) { return bitwise_xor(x[0], x[1]); },
        [](V v, const Tensor&) { return double(bits(v[0]) ^ bits(v[1])); }),
    with_scalar(
        "bitwise_and", kInts, -9, 9, [](X x) { return bitwise_and(x[0], Scalar(6)); },
        [](V v, const Tensor&) { return double(bits(v[0]) & 6); }),
    tensors(
        "bitwise_left_shift", kInts, -9, 9, [](X x) { return bitwise_left_shift(x[0], x[1]); },
        [](V v, const Tensor& o) { return shl_ref(v[0], v[1], o.dtype()); }),
    tensors(
        "bitwise_right_shift", kInts, -9, 9, [](X x) { return bitwise_right_shift(x[0], x[1]); },
        [](V v, const Tensor& o) { return shr_ref(v[0], v[1], o.dtype()); }),
    with_scalar(
        "bitwise_left_shift", {DType::Int32, DType::Int64}, -9, 9,
        [](X x) { return bitwise_left_shift(x[0], Scalar(40)); },
        [](V v, const Tensor& o) { return shl_ref(v[0], 40, o.dtype()); }),
});

#undef CMP

}  // namespace
}  // namespace op_table::binary
