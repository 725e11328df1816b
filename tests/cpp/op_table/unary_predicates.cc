// Op table entries of isnan, isinf, isfinite, logical_not and bitwise_not
// (ops/registry/unary.h); float inputs carry NaN and +-inf (kEdgeValues).
#include "kiln/unary.h"
#include "op_table/unary_entry.h"

namespace op_table {
namespace {

using namespace kiln;

double isnan_ref(double v, DType) { return v != v; }
double isinf_ref(double v, DType) {
  return v == std::numeric_limits<double>::infinity() || -v == std::numeric_limits<double>::infinity();
}
double isfinite_ref(double v, DType d) { return !isnan_ref(v, d) && !isinf_ref(v, d); }
double logical_not_ref(double v, DType) { return v == 0; }  // NaN is true, as in C
// ~v in two's complement: -v - 1; 255 - v for uint8; !v for bool.
double bitwise_not_ref(double v, DType d) {
  if (d == DType::Bool) return 1 - v;
  if (d == DType::UInt8) return 255 - v;
  return -v - 1;
}

Tensor isnan_fn(const Tensor& x) { return kiln::isnan(x); }
Tensor isinf_fn(const Tensor& x) { return kiln::isinf(x); }
Tensor isfinite_fn(const Tensor& x) { return kiln::isfinite(x); }
Tensor logical_not_fn(const Tensor& x) { return kiln::logical_not(x); }
Tensor bitwise_not_fn(const Tensor& x) { return kiln::bitwise_not(x); }

KILN_OP_TABLE({
    unary_entry("isnan", isnan_fn, isnan_ref, kFloatsAndInts),
    unary_entry("isinf", isinf_fn, isinf_ref, kFloatsAndInts),
    unary_entry("isfinite", isfinite_fn, isfinite_ref, kFloatsAndInts),
    unary_entry("logical_not", logical_not_fn, logical_not_ref, kFloatsAndInts),
    unary_entry("bitwise_not", bitwise_not_fn, bitwise_not_ref, kInts + std::vector<DType>{DType::Bool}),
});

}  // namespace
}  // namespace op_table
