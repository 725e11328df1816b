// Op table entries of the complex-part ops (ops/registry/complex.h): conj,
// real, imag, angle, and complex/polar through the real and imaginary parts of
// their results (the real walks compare real outputs).
#include "kiln/complex.h"

#include <cmath>
#include <numbers>

#include "op_table/binary.h"
#include "op_table/unary_entry.h"

namespace op_table {
namespace {

double same(double v, DType) { return v; }
double angle_ref(double v, DType) { return std::isnan(v) ? v : (v < 0 ? std::numbers::pi : 0.0); }
cdouble c_conj(cdouble z) { return std::conj(z); }
cdouble c_real(cdouble z) { return z.real(); }
cdouble c_imag(cdouble z) { return z.imag(); }
cdouble c_angle(cdouble z) { return std::arg(z); }

const std::vector<DType> kRealDtypes = kFloats + kInts + std::vector<DType>{DType::Bool};

Entry complex_only(const char* op, std::function<Tensor(const Tensor&)> fn, cdouble (*f)(cdouble)) {
  Entry e = unary_entry(op, std::move(fn), same, {});
  e.oracle = nullptr;
  return with_complex(std::move(e), elementwise(f));
}

// complex(a, b) / polar(a, b) seen through part(): float32 and float64 walks.
Entry constructor(const char* op, Tensor (*make)(const Tensor&, const Tensor&), Tensor (*part)(const Tensor&),
                  double (*f)(double, double), double lo) {
  return binary::tensors(
      op, {DType::Float32, DType::Float64}, lo, 4,
      [make, part](const std::vector<Tensor>& x) { return part(make(x[0], x[1])); },
      [f](const std::vector<double>& a, const Tensor&) { return f(a[0], a[1]); });
}

Tensor real_of(const Tensor& t) { return kiln::real(t); }
Tensor imag_of(const Tensor& t) { return kiln::imag(t); }

KILN_OP_TABLE({
    with_complex(unary_entry(
                     "conj", [](const Tensor& x) { return kiln::conj(x); }, same, kRealDtypes),
                 elementwise(c_conj)),
    with_complex(unary_entry(
                     "real", [](const Tensor& x) { return kiln::real(x); }, same, kFloats),
                 elementwise(c_real)),
    complex_only(
        "imag", [](const Tensor& x) { return kiln::imag(x); }, c_imag),
    with_complex(unary_entry(
                     "angle", [](const Tensor& x) { return kiln::angle(x); }, angle_ref, kFloats + kInts),
                 elementwise(c_angle)),
    constructor(
        "complex", kiln::complex, real_of, [](double a, double) { return a; }, -4),
    constructor(
        "complex", kiln::complex, imag_of, [](double, double b) { return b; }, -4),
    constructor(
        "polar", kiln::polar, real_of, [](double r, double t) { return r * std::cos(t); }, 0),
    constructor(
        "polar", kiln::polar, imag_of, [](double r, double t) { return r * std::sin(t); }, 0),
});

}  // namespace
}  // namespace op_table
