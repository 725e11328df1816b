// Op table entries of floor, ceil, round and trunc (ops/registry/unary.h);
// integer inputs are copies.
#include "kiln/unary.h"
#include "op_table/unary_entry.h"

namespace op_table {
namespace {

using namespace kiln;

double floor_ref(double v, DType) { return std::floor(v); }
double ceil_ref(double v, DType) { return std::ceil(v); }
double trunc_ref(double v, DType) { return std::trunc(v); }
// Half to even: the nearest integer, the even one of two at a tie.
double round_ref(double v, DType) {
  if (!std::isfinite(v)) return v;
  const double f = std::floor(v), diff = v - f;
  if (diff != 0.5) return diff < 0.5 ? f : f + 1;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}
double round2_ref(double v, DType d) { return round_ref(v * 100, d) / 100; }
double round_m1_ref(double v, DType d) { return round_ref(v / 10, d) * 10; }

Tensor floor_fn(const Tensor& x) { return kiln::floor(x); }
Tensor ceil_fn(const Tensor& x) { return kiln::ceil(x); }
Tensor trunc_fn(const Tensor& x) { return kiln::trunc(x); }
Tensor round_fn(const Tensor& x) { return kiln::round(x); }
Tensor round2_fn(const Tensor& x) { return kiln::round(x, 2); }
Tensor round_m1_fn(const Tensor& x) { return kiln::round(x, -1); }

KILN_OP_TABLE({
    unary_entry("floor", floor_fn, floor_ref, kFloats + kInts),
    unary_entry("ceil", ceil_fn, ceil_ref, kFloats + kInts),
    unary_entry("trunc", trunc_fn, trunc_ref, kFloats + kInts),
    unary_entry("round", round_fn, round_ref, kFloats + kInts),
    unary_entry("round", round2_fn, round2_ref, kFloats),
    unary_entry("round", round_m1_fn, round_m1_ref, kFloats, -200, 200),
});

}  // namespace
}  // namespace op_table
