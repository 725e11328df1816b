// Helpers for the op table entries of the binary and ternary ops
// (ops/registry/binary.h): entries over two or three tensors with a broadcast
// float64 oracle, and the Tensor-Scalar form over one tensor.
#pragma once

#include <cmath>
#include <cstdint>

#include "kiln/binary.h"
#include "op_table/table.h"

namespace op_table::binary {

using kiln::Scalar;

// Integer dtypes the arithmetic ops take (bool apart).
inline const std::vector<DType> kInts = {DType::Int32, DType::Int64, DType::UInt8};
inline std::vector<DType> join(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// 1 for a true (nonzero) value, 0 for false.
inline double truth(double v) { return v != 0 ? 1.0 : 0.0; }

// op(x0, x1) over binary_shapes (ternary_shapes when `three`).
inline Entry tensors(const char* op, std::vector<DType> dtypes, double lo, double hi,
                     std::function<Tensor(const std::vector<Tensor>&)> call, ElementFn f,
                     bool three = false) {
  Entry e;
  e.op = op;
  e.dtypes = std::move(dtypes);
  e.lo = lo;
  e.hi = hi;
  e.shapes = three ? ternary_shapes : binary_shapes;
  e.call = std::move(call);
  e.oracle = broadcast_elementwise(std::move(f));
  e.perf_shapes = three ? std::vector<InputSpec>{{{1024, 1024}}, {{1024, 1024}}, {{1024, 1024}}}
                        : std::vector<InputSpec>{{{1024, 1024}}, {{1024, 1024}}};
  return e;
}

// The Tensor-Scalar form op(x0, s) over unary_shapes; f(x, s).
inline Entry with_scalar(const char* op, std::vector<DType> dtypes, double lo, double hi,
                         std::function<Tensor(const std::vector<Tensor>&)> call, ElementFn f) {
  Entry e = tensors(op, std::move(dtypes), lo, hi, std::move(call), std::move(f));
  e.shapes = unary_shapes;
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

// The complex form of op(x0, x1) over binary_shapes: complex walks only.
inline Entry complex_tensors(const char* op, double lo, double hi,
                             std::function<Tensor(const std::vector<Tensor>&)> call, ComplexElementFn f) {
  Entry e = tensors(op, {}, lo, hi, std::move(call), nullptr);
  e.oracle = nullptr;
  return with_complex(std::move(e), broadcast_elementwise(std::move(f)));
}

}  // namespace op_table::binary
