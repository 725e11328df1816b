// Op table entries of arange, linspace and logspace (core/factory_ops.h). The
// input tensor only names the output's length and dtype; the oracle is the
// sequence's formula in float64 (or int64), converted as C++ converts to the
// dtype (integers wrap, floats truncate toward zero).
#include <cmath>
#include <cstdint>

#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

// The output length: [0], one element, and 40003 (two parallel chunks).
std::vector<InputSpec> range_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0}}};
    case ShapeClass::Scalar:
      return {{{1}}};
    case ShapeClass::Odd:
      return {{{40003}}};
    default:
      return {};  // no out= form: the output is always a new contiguous tensor
  }
}

int64_t length(const std::vector<Tensor>& x) { return x[0].numel(); }

// A double as `d` holds it (integers: truncated toward zero, in range here).
double from_double(double v, DType d) {
  const bool integer = d == DType::Int32 || d == DType::Int64 || d == DType::UInt8;
  return integer ? std::trunc(v) + 0.0 : v;
}

Entry range_entry(const char* op, std::vector<DType> dtypes) {
  Entry e;
  e.op = op;
  e.dtypes = std::move(dtypes);
  e.shapes = range_shapes;
  e.ulps = 1;  // one rounding to the output dtype
  e.perf_shapes = {{{1 << 20}}};
  return e;
}

// Integral bounds: start + i * step in int64 (exact), then converted.
Entry arange_int(int64_t start, int64_t step) {
  Entry e = range_entry("arange", kFloatsAndInts);
  e.call = [start, step](const std::vector<Tensor>& x) {
    const int64_t end = start + length(x) * step;
    return arange(Scalar(start), Scalar(end), Scalar(step), x[0].dtype(), x[0].device());
  };
  e.oracle = [start, step](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (d == DType::Bool) throw raises<TypeError>("TypeError");
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = int_as(start + int64_t(i) * step, d);
    return y;
  };
  return e;
}

// Float bounds: start + i * step in double, n = ceil((end - start) / step).
Entry arange_float(double start, double step) {
  Entry e = range_entry("arange", {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16,
                                   DType::Int32, DType::Int64, DType::Bool});
  e.call = [start, step](const std::vector<Tensor>& x) {
    return arange(Scalar(start), Scalar(start + double(length(x)) * step), Scalar(step), x[0].dtype(),
                  x[0].device());
  };
  e.oracle = [start, step](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (d == DType::Bool) throw raises<TypeError>("TypeError");
    std::vector<double> y(in.values[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = from_double(start + double(i) * step, d);
    return y;
  };
  e.floor = std::fabs(start) + 40003 * std::fabs(step);  // the size of the range
  return e;
}

// linspace(start, end, n)[i] = start + i * (end - start) / (n - 1); one point
// is start.
double linspace_ref(double start, double end, int64_t n, int64_t i) {
  return n == 1 ? start : start + double(i) * (end - start) / double(n - 1);
}

Entry linspace_entry(double start, double end, std::vector<DType> dtypes) {
  Entry e = range_entry("linspace", std::move(dtypes));
  e.call = [start, end](const std::vector<Tensor>& x) {
    return linspace(start, end, length(x), x[0].dtype(), x[0].device());
  };
  e.oracle = [start, end](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (d == DType::Bool) throw raises<TypeError>("TypeError");
    const int64_t n = int64_t(in.values[0].size());
    std::vector<double> y(n);
    for (int64_t i = 0; i < n; ++i) y[i] = from_double(linspace_ref(start, end, n, i), d);
    return y;
  };
  // float64 rounding of the two evaluations differs by ulps of the bounds.
  e.ulps = 4;
  e.floor = std::max(std::fabs(start), std::fabs(end));
  return e;
}

Entry logspace_entry(double start, double end, double base) {
  Entry e = range_entry("logspace", {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16,
                                     DType::Int64, DType::Bool});
  e.call = [start, end, base](const std::vector<Tensor>& x) {
    return logspace(start, end, length(x), base, x[0].dtype(), x[0].device());
  };
  e.oracle = [start, end, base](const Inputs& in, const Tensor&) {
    const DType d = in.tensors[0].dtype();
    if (d == DType::Bool) throw raises<TypeError>("TypeError");
    const int64_t n = int64_t(in.values[0].size());
    std::vector<double> y(n);
    for (int64_t i = 0; i < n; ++i) y[i] = from_double(std::pow(base, linspace_ref(start, end, n, i)), d);
    return y;
  };
  e.ulps = 8;  // relative: the exponent's rounding, scaled by ln(base)
  e.floor = 0;
  return e;
}

KILN_OP_TABLE({
    arange_int(-3, 1),
    arange_int(5, -1),
    arange_int(-30001, 2),  // float16 holds every point in range
    arange_float(-2.75, 0.5),
    arange_float(10.0, -0.25),
    // Whole-number points: exact in every dtype's range, so integers too.
    linspace_entry(-7.0, -7.0 + 2.0 * 40002, {DType::Int32, DType::Int64}),
    linspace_entry(-3.3, 251.7, kFloats),
    linspace_entry(5.0, -5.0, kFloats),
    logspace_entry(-2.1, 2.3, 3.0),
    logspace_entry(1.5, -0.5, 10.0),
});

}  // namespace
}  // namespace op_table
