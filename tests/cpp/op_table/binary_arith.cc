// Op table entries of add, sub, mul, the division ops and pow, maximum,
// minimum, atan2, copysign, heaviside (ops/registry/binary.h).
#include "op_table/binary.h"

namespace op_table::binary {
namespace {

using namespace kiln;
using V = const std::vector<double>&;
using X = const std::vector<Tensor>&;

bool is_bool(const Tensor& out) { return out.dtype() == DType::Bool; }

// Python's floor division and remainder (sign of the divisor), from fmod.
double floordiv_ref(double a, double b) { return std::floor(a / b); }
double remainder_ref(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

const auto kArithDtypes = kFloatsAndInts;
const auto kSigned = join(kFloats, {DType::Int32, DType::Int64});

using C = const std::vector<cdouble>&;

// Complex operands: both parts from [lo, hi]; pow's base keeps a positive
// real part (its principal branch is smooth there).
KILN_OP_TABLE({
    complex_tensors(
        "add", -4, 4, [](X x) { return add(x[0], x[1]); }, [](C v) { return v[0] + v[1]; }),
    complex_tensors(
        "add", -4, 4, [](X x) { return add(x[0], x[1], Scalar(2)); }, [](C v) { return v[0] + 2.0 * v[1]; }),
    complex_tensors(
        "sub", -4, 4, [](X x) { return sub(x[0], x[1]); }, [](C v) { return v[0] - v[1]; }),
    complex_tensors(
        "mul", -4, 4, [](X x) { return mul(x[0], x[1]); }, [](C v) { return v[0] * v[1]; }),
    complex_tensors(
        "div", -4, 4, [](X x) { return div(x[0], x[1]); }, [](C v) { return v[0] / v[1]; }),
    complex_tensors(
        "true_divide", -4, 4, [](X x) { return true_divide(x[0], x[1]); }, [](C v) { return v[0] / v[1]; }),
    complex_tensors(
        "pow", 0.25, 2, [](X x) { return kiln::pow(x[0], x[1]); }, [](C v) { return std::pow(v[0], v[1]); }),
});

KILN_OP_TABLE({
    // add: bool + bool is or.
    tensors(
        "add", kArithDtypes, -4, 4, [](X x) { return add(x[0], x[1]); },
        [](V v, const Tensor& o) { return is_bool(o) ? truth(v[0] + v[1]) : v[0] + v[1]; }),
    tensors(
        "add", join(kFloats, kInts), -4, 4, [](X x) { return add(x[0], x[1], Scalar(2)); },
        [](V v, const Tensor&) { return v[0] + 2 * v[1]; }),
    with_scalar(
        "add", join(kFloats, kInts), -4, 4, [](X x) { return add(x[0], Scalar(3)); },
        [](V v, const Tensor&) { return v[0] + 3; }),
    with_scalar(
        "add", kFloats, -4, 4, [](X x) { return add(x[0], Scalar(0.75)); },
        [](V v, const Tensor&) { return v[0] + 0.75; }),
    tensors(
        "sub", kSigned, -4, 4, [](X x) { return sub(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] - v[1]; }),
    tensors(
        "sub", kSigned, -4, 4, [](X x) { return sub(x[0], x[1], Scalar(3)); },
        [](V v, const Tensor&) { return v[0] - 3 * v[1]; }),
    with_scalar(
        "sub", kSigned, -4, 4, [](X x) { return sub(Scalar(2), x[0]); },
        [](V v, const Tensor&) { return 2 - v[0]; }),
    tensors(
        "mul", kArithDtypes, -4, 4, [](X x) { return mul(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] * v[1]; }),
    with_scalar(
        "mul", kFloats, -4, 4, [](X x) { return mul(x[0], Scalar(-1.5)); },
        [](V v, const Tensor&) { return v[0] * -1.5; }),

    // Division: floats over both signs; integers over positive divisors, and
    // a negative Python-number divisor.
    tensors(
        "div", kFloats, -4, 4, [](X x) { return div(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] / v[1]; }),
    tensors(
        "div", join(kInts, {DType::Bool}), 1, 9, [](X x) { return div(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] / v[1]; }),
    tensors(
        "div", kFloats, -4, 4, [](X x) { return div(x[0], x[1], "trunc"); },
        [](V v, const Tensor&) { return std::trunc(v[0] / v[1]); }),
    tensors(
        "div", kInts, 1, 9, [](X x) { return div(x[0], x[1], "trunc"); },
        [](V v, const Tensor&) { return std::trunc(v[0] / v[1]); }),
    with_scalar(
        "div", {DType::Int32, DType::Int64}, -9, 9, [](X x) { return div(x[0], Scalar(-4), "floor"); },
        [](V v, const Tensor&) { return floordiv_ref(v[0], -4); }),
    with_scalar(
        "div", kFloats, -4, 4, [](X x) { return div(x[0], Scalar(0.5)); },
        [](V v, const Tensor&) { return v[0] / 0.5; }),
    tensors(
        "true_divide", kFloats, -4, 4, [](X x) { return true_divide(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] / v[1]; }),
    tensors(
        "true_divide", kInts, 1, 9, [](X x) { return true_divide(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] / v[1]; }),
    tensors(
        "floor_divide", kFloats, -4, 4, [](X x) { return floor_divide(x[0], x[1]); },
        [](V v, const Tensor&) { return floordiv_ref(v[0], v[1]); }),
    tensors(
        "floor_divide", kInts, 1, 9, [](X x) { return floor_divide(x[0], x[1]); },
        [](V v, const Tensor&) { return floordiv_ref(v[0], v[1]); }),
    with_scalar(
        "floor_divide", {DType::Int32, DType::Int64}, -9, 9,
        [](X x) { return floor_divide(x[0], Scalar(-4)); },
        [](V v, const Tensor&) { return floordiv_ref(v[0], -4); }),
    tensors(
        "remainder", kFloats, -4, 4, [](X x) { return remainder(x[0], x[1]); },
        [](V v, const Tensor&) { return remainder_ref(v[0], v[1]); }),
    tensors(
        "remainder", kInts, 1, 9, [](X x) { return remainder(x[0], x[1]); },
        [](V v, const Tensor&) { return remainder_ref(v[0], v[1]); }),
    with_scalar(
        "remainder", {DType::Int32, DType::Int64}, -9, 9, [](X x) { return remainder(x[0], Scalar(-4)); },
        [](V v, const Tensor&) { return remainder_ref(v[0], -4); }),
    tensors(
        "fmod", kFloats, -4, 4, [](X x) { return fmod(x[0], x[1]); },
        [](V v, const Tensor&) { return std::fmod(v[0], v[1]); }),
    tensors(
        "fmod", kInts, 1, 9, [](X x) { return fmod(x[0], x[1]); },
        [](V v, const Tensor&) { return std::fmod(v[0], v[1]); }),
    with_scalar(
        "fmod", {DType::Int32, DType::Int64}, -9, 9, [](X x) { return fmod(x[0], Scalar(-4)); },
        [](V v, const Tensor&) { return std::fmod(v[0], -4); }),

    // Other math.
    tensors(
        "pow", kFloats, 0.25, 3, [](X x) { return kiln::pow(x[0], x[1]); },
        [](V v, const Tensor&) { return std::pow(v[0], v[1]); }),
    tensors(
        "pow", kInts, 0, 3, [](X x) { return kiln::pow(x[0], x[1]); },
        [](V v, const Tensor&) { return std::pow(v[0], v[1]); }),
    with_scalar(
        "pow", kSigned, -3, 3, [](X x) { return kiln::pow(x[0], Scalar(2)); },
        [](V v, const Tensor&) { return v[0] * v[0]; }),
    tensors(
        "maximum", kArithDtypes, -4, 4, [](X x) { return maximum(x[0], x[1]); },
        [](V v, const Tensor&) { return std::max(v[0], v[1]); }),
    tensors(
        "minimum", kArithDtypes, -4, 4, [](X x) { return minimum(x[0], x[1]); },
        [](V v, const Tensor&) { return std::min(v[0], v[1]); }),
    with_scalar(
        "minimum", kFloats, -4, 4, [](X x) { return minimum(x[0], Scalar(0.5)); },
        [](V v, const Tensor&) { return std::min(v[0], 0.5); }),
    tensors(
        "atan2", kArithDtypes, -4, 4, [](X x) { return kiln::atan2(x[0], x[1]); },
        [](V v, const Tensor&) { return std::atan2(v[0], v[1]); }),
    tensors(
        "copysign", kArithDtypes, -4, 4, [](X x) { return kiln::copysign(x[0], x[1]); },
        [](V v, const Tensor&) { return std::copysign(v[0], v[1]); }),
    tensors(
        "heaviside", kArithDtypes, -2, 2, [](X x) { return heaviside(x[0], x[1]); },
        [](V v, const Tensor&) { return v[0] == 0 ? v[1] : (v[0] > 0 ? 1.0 : 0.0); }),
});

}  // namespace
}  // namespace op_table::binary
