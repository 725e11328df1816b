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

// Complex: NaN when either part is; infinite when either part is (and
// neither NaN, as torch); logical_not: z == 0.
cdouble c_isnan(cdouble z) { return std::isnan(z.real()) || std::isnan(z.imag()); }
cdouble c_isinf(cdouble z) { return !c_isnan(z).real() && (std::isinf(z.real()) || std::isinf(z.imag())); }
cdouble c_isfinite(cdouble z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); }
cdouble c_logical_not(cdouble z) { return z == cdouble(0); }

// The edge values in one part of every 7th complex element: the real part,
// then the imaginary one (index 3, 10, 17, ...).
void complex_edges(size_t, const Shape&, std::vector<cdouble>& v) {
  for (size_t i = 3, k = 0; i < v.size(); i += 7, ++k) {
    const double x = kEdgeValues[k % kEdgeValues.size()];
    if ((k / kEdgeValues.size()) % 2 == 0)
      v[i].real(x);
    else
      v[i].imag(x);
  }
}

Entry with_complex_edges(Entry e, cdouble (*f)(cdouble)) {
  e = with_complex(std::move(e), elementwise(f));
  e.complex_condition = complex_edges;
  return e;
}

Tensor isnan_fn(const Tensor& x) { return kiln::isnan(x); }
Tensor isinf_fn(const Tensor& x) { return kiln::isinf(x); }
Tensor isfinite_fn(const Tensor& x) { return kiln::isfinite(x); }
Tensor logical_not_fn(const Tensor& x) { return kiln::logical_not(x); }
Tensor bitwise_not_fn(const Tensor& x) { return kiln::bitwise_not(x); }

KILN_OP_TABLE({
    with_complex_edges(unary_entry("isnan", isnan_fn, isnan_ref, kFloatsAndInts + kFp8), c_isnan),
    with_complex_edges(unary_entry("isinf", isinf_fn, isinf_ref, kFloatsAndInts + kFp8), c_isinf),
    with_complex_edges(unary_entry("isfinite", isfinite_fn, isfinite_ref, kFloatsAndInts + kFp8), c_isfinite),
    with_complex_edges(unary_entry("logical_not", logical_not_fn, logical_not_ref, kFloatsAndInts + kFp8),
                       c_logical_not),
    unary_entry("bitwise_not", bitwise_not_fn, bitwise_not_ref, kInts + std::vector<DType>{DType::Bool}),
});

}  // namespace
}  // namespace op_table
