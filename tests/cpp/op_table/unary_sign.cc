// Op table entries of neg, abs, sign and relu (ops/registry/unary.h).
#include "kiln/unary.h"
#include "op_table/unary_entry.h"

namespace op_table {
namespace {

using namespace kiln;

// -v, wrapping modulo 256 for uint8 (values here are small).
double neg_ref(double v, DType d) { return d == DType::UInt8 ? (v == 0 ? 0 : 256 - v) : -v; }
double abs_ref(double v, DType) { return v < 0 ? -v : v; }
double sign_ref(double v, DType) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }  // NaN -> 0
double relu_ref(double v, DType) { return v != v ? v : (v > 0 ? v : 0); }  // NaN propagates

cdouble c_neg(cdouble z) { return -z; }
cdouble c_abs(cdouble z) { return std::abs(z); }  // a real result

Tensor neg_fn(const Tensor& x) { return kiln::neg(x); }
Tensor abs_fn(const Tensor& x) { return kiln::abs(x); }
Tensor sign_fn(const Tensor& x) { return kiln::sign(x); }
Tensor relu_fn(const Tensor& x) { return kiln::relu(x); }

KILN_OP_TABLE({
    with_complex(unary_entry("neg", neg_fn, neg_ref, kFloats + kInts + kFp8), elementwise(c_neg)),
    with_complex(unary_entry("abs", abs_fn, abs_ref,
                             kFloats + kInts + kFp8 + std::vector<DType>{DType::Bool}),
                 elementwise(c_abs)),
    unary_entry("sign", sign_fn, sign_ref, kFloats + kInts + std::vector<DType>{DType::Bool}),
    unary_entry("relu", relu_fn, relu_ref, kFloats + kInts),
});

}  // namespace
}  // namespace op_table
