// Op table entries of copy and fill (core/copy_ops.h): Tensor::copy_ into the
// same dtype, into float64 (every source dtype's values exactly) and from
// float64, and Tensor::fill_.
#include <cmath>
#include <optional>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

std::vector<double> identity(const Inputs& in, const Tensor&) { return in.values[0]; }

// y = a new tensor of `to` (or x's dtype) with x's shape; y.copy_(x).
Entry copy_entry(std::optional<DType> to, std::vector<DType> dtypes) {
  Entry e;
  e.op = "copy";
  e.dtypes = std::move(dtypes);
  e.shapes = unary_shapes;
  e.call = [to](const std::vector<Tensor>& x) {
    Tensor y = empty(x[0].sizes(), to.value_or(x[0].dtype()), x[0].device());
    y.copy_(x[0]);
    return y;
  };
  e.oracle = identity;
  e.ulps = 0;
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

// A transposed destination: y is [n, m] contiguous viewed as [m, n].
Entry copy_into_transposed(std::vector<DType> dtypes = kFloatsAndInts) {
  Entry e = copy_entry(std::nullopt, std::move(dtypes));
  e.call = [](const std::vector<Tensor>& x) {
    const Shape shape = x[0].sizes();
    const Shape rev(shape.rbegin(), shape.rend());
    std::vector<int> perm(rev.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int(perm.size() - 1 - i);
    Tensor y = empty(rev, x[0].dtype(), x[0].device()).permute(perm);
    y.copy_(x[0]);
    return y;
  };
  return e;
}

// float64 values that every float dtype holds exactly, copied down.
Entry copy_from_float64(DType to) {
  Entry e = copy_entry(to, {DType::Float64});
  e.lo = -8;
  e.hi = 8;
  // Inputs are float64; keep only values `to` holds (whole numbers).
  e.call = [to](const std::vector<Tensor>& x) {
    Tensor r = kiln::round(x[0]);
    Tensor y = empty(x[0].sizes(), to, x[0].device());
    y.copy_(r);
    return y;
  };
  e.oracle = [](const Inputs& in, const Tensor&) {
    std::vector<double> y(in.values[0]);
    for (double& v : y) v = std::nearbyint(v);
    return y;
  };
  return e;
}

// float32 values rounded to the nearest FP8 code (the format's max saturates
// nothing here: values stay inside [-8, 8]); the oracle rounds by the walk's
// own FP8 decoder, ties impossible at float32's precision in practice.
Entry copy_to_fp8(DType to) {
  Entry e = copy_entry(to, {DType::Float32});
  e.lo = -8;
  e.hi = 8;
  e.oracle = [to](const Inputs& in, const Tensor&) {
    const std::vector<uint8_t> codes = fp8_codes(to, -INFINITY, INFINITY);
    std::vector<double> y(in.values[0]);
    for (double& v : y) {
      double best = fp8_decode(codes[0], to);
      for (uint8_t c : codes) {
        const double q = fp8_decode(c, to);
        if (std::fabs(q - v) < std::fabs(best - v)) best = q;
      }
      v = best == 0 ? std::copysign(0.0, v) : best;
    }
    return y;
  };
  return e;
}

Entry fill_entry() {
  Entry e;
  e.op = "fill";
  e.dtypes = kFloatsAndInts;
  e.shapes = unary_shapes;
  e.call = [](const std::vector<Tensor>& x) {
    Tensor y = x[0].clone();
    y.fill_(Scalar(int64_t(1)));
    return y;
  };
  e.oracle = [](const Inputs& in, const Tensor&) { return std::vector<double>(in.values[0].size(), 1.0); };
  e.ulps = 0;
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

// Complex and FP8 sources: into their own dtype, complex128 and (FP8) float32.
KILN_OP_TABLE({
    with_complex_by_parts(copy_entry(std::nullopt, kFp8)),
    with_complex_by_parts(copy_into_transposed(kFp8)),
    with_complex_by_parts(copy_entry(DType::Complex128, kFp8)),
    copy_entry(DType::Float32, kFp8),
    copy_entry(DType::Float64, kFp8),
    copy_from_float64(DType::Float8_e4m3fn),
    copy_from_float64(DType::Float8_e5m2),
    copy_to_fp8(DType::Float8_e4m3fn),
    copy_to_fp8(DType::Float8_e5m2),
});

KILN_OP_TABLE({
    copy_entry(std::nullopt, kFloatsAndInts),
    copy_entry(DType::Float64, kFloatsAndInts),
    copy_into_transposed(),
    copy_from_float64(DType::Float32),
    copy_from_float64(DType::BFloat16),
    copy_from_float64(DType::Float16),
    copy_from_float64(DType::Int32),
    fill_entry(),
});

}  // namespace
}  // namespace op_table
