// Op table entries of where, clamp, clamp_min, clamp_max, lerp and addcmul
// (ops/registry/binary.h).
#include "op_table/binary.h"

namespace op_table::binary {
namespace {

using namespace kiln;
using V = const std::vector<double>&;
using X = const std::vector<Tensor>&;

// where's condition: x truncated toward zero is nonzero (made with a
// conversion, so about half the elements select each side).
Tensor cond_of(const Tensor& x) { return x.to(DType::Int64).to(DType::Bool); }
bool cond_ref(double v) { return std::trunc(v) != 0; }

// torch's clamp: lower bound, then upper bound (min > max gives max).
double clamp_ref(double x, double lo, double hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

const auto kClampDtypes = join(kFloats, kInts);
const auto kAddcmulDtypes = join(kFloats, kInts);

// Complex lerp and addcmul (complex walks only): parts from [0, 1] / [-3, 3].
Entry complex_ternary(const char* op, double lo, double hi, std::function<Tensor(X)> call,
                      ComplexElementFn f) {
  Entry e = complex_tensors(op, lo, hi, std::move(call), std::move(f));
  e.shapes = ternary_shapes;
  e.perf_shapes = {};
  return e;
}

KILN_OP_TABLE({
    complex_ternary(
        "lerp", 0, 1, [](X x) { return lerp(x[0], x[1], x[2]); },
        [](const std::vector<cdouble>& v) { return v[0] + v[2] * (v[1] - v[0]); }),
    complex_ternary(
        "addcmul", -3, 3, [](X x) { return addcmul(x[0], x[1], x[2], Scalar(2)); },
        [](const std::vector<cdouble>& v) { return v[0] + 2.0 * v[1] * v[2]; }),
});

KILN_OP_TABLE({
    tensors(
        "where", kFloatsAndInts, -1.9, 1.9, [](X x) { return where(cond_of(x[0]), x[1], x[2]); },
        [](V v, const Tensor&) { return cond_ref(v[0]) ? v[1] : v[2]; }, true),
    with_scalar(
        "where", kFloats, -1.9, 1.9, [](X x) { return where(cond_of(x[0]), x[0], Scalar(0.5)); },
        [](V v, const Tensor&) { return cond_ref(v[0]) ? v[0] : 0.5; }),

    with_scalar(
        "clamp", join(kFloats, {DType::Int32, DType::Int64}), -4, 4,
        [](X x) { return clamp(x[0], Scalar(-1), Scalar(2)); },
        [](V v, const Tensor&) { return clamp_ref(v[0], -1, 2); }),
    with_scalar(
        "clamp", {DType::UInt8}, 0, 9, [](X x) { return clamp(x[0], Scalar(2), Scalar(5)); },
        [](V v, const Tensor&) { return clamp_ref(v[0], 2, 5); }),
    with_scalar(
        "clamp", kFloats, -4, 4, [](X x) { return clamp(x[0], Scalar(-1.5), std::nullopt); },
        [](V v, const Tensor&) { return std::max(v[0], -1.5); }),
    tensors(
        "clamp", kClampDtypes, -4, 4, [](X x) { return clamp(x[0], x[1], x[2]); },
        [](V v, const Tensor&) { return clamp_ref(v[0], v[1], v[2]); }, true),
    tensors(
        "clamp", kClampDtypes, -4, 4, [](X x) { return clamp(x[0], Tensor(), x[1]); },
        [](V v, const Tensor&) { return std::min(v[0], v[1]); }),
    with_scalar(
        "clamp_min", kClampDtypes, -4, 4, [](X x) { return clamp_min(x[0], Scalar(1)); },
        [](V v, const Tensor&) { return std::max(v[0], 1.0); }),
    tensors(
        "clamp_min", kClampDtypes, -4, 4, [](X x) { return clamp_min(x[0], x[1]); },
        [](V v, const Tensor&) { return std::max(v[0], v[1]); }),
    with_scalar(
        "clamp_max", kClampDtypes, -4, 4, [](X x) { return clamp_max(x[0], Scalar(1)); },
        [](V v, const Tensor&) { return std::min(v[0], 1.0); }),
    tensors(
        "clamp_max", kClampDtypes, -4, 4, [](X x) { return clamp_max(x[0], x[1]); },
        [](V v, const Tensor&) { return std::min(v[0], v[1]); }),

    // lerp over [0, 1]: start, end and weight of one dtype, so no cancellation
    // larger than the tolerance.
    tensors(
        "lerp", kFloats, 0, 1, [](X x) { return lerp(x[0], x[1], x[2]); },
        [](V v, const Tensor&) { return v[0] + v[2] * (v[1] - v[0]); }, true),
    tensors(
        "lerp", kFloats, 0, 1, [](X x) { return lerp(x[0], x[1], Scalar(0.3)); },
        [](V v, const Tensor&) { return v[0] + 0.3 * (v[1] - v[0]); }),

    tensors(
        "addcmul", kAddcmulDtypes, -3, 3, [](X x) { return addcmul(x[0], x[1], x[2], Scalar(2)); },
        [](V v, const Tensor&) { return v[0] + 2 * v[1] * v[2]; }, true),
});

}  // namespace
}  // namespace op_table::binary
