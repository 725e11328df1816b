// Op table entries of the floating-point unary math ops (ops/registry/unary.h).
#include <cmath>

#include "kiln/unary.h"
#include "op_table/table.h"

namespace op_table {
namespace {

using namespace kiln;

Entry unary(const char* op, Tensor (*fn)(const Tensor&), double (*f)(double), double lo, double hi,
            const std::vector<DType>& dtypes = kFloatsAndInts) {
  Entry e;
  e.op = op;
  e.dtypes = dtypes;
  e.lo = lo;
  e.hi = hi;
  e.shapes = unary_shapes;
  e.call = [fn](const std::vector<Tensor>& x) { return fn(x[0]); };
  e.oracle = elementwise(f);
  e.perf_shapes = {{{1024, 1024}}};
  return e;
}

double rsqrt_ref(double x) { return 1.0 / std::sqrt(x); }
double reciprocal_ref(double x) { return 1.0 / x; }
double exp2_ref(double x) { return std::exp2(x); }
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double d_exp(double x) { return std::exp(x); }
double d_expm1(double x) { return std::expm1(x); }
double d_log(double x) { return std::log(x); }
double d_log2(double x) { return std::log2(x); }
double d_log1p(double x) { return std::log1p(x); }
double d_sqrt(double x) { return std::sqrt(x); }
double d_sin(double x) { return std::sin(x); }
double d_cos(double x) { return std::cos(x); }
double d_tan(double x) { return std::tan(x); }
double d_tanh(double x) { return std::tanh(x); }

// The complex oracles (std::complex's principal branches, in double).
cdouble c_exp(cdouble z) { return std::exp(z); }
cdouble c_log(cdouble z) { return std::log(z); }
cdouble c_sqrt(cdouble z) { return std::sqrt(z); }
cdouble c_rsqrt(cdouble z) { return 1.0 / std::sqrt(z); }
cdouble c_reciprocal(cdouble z) { return 1.0 / z; }
cdouble c_sin(cdouble z) { return std::sin(z); }
cdouble c_cos(cdouble z) { return std::cos(z); }
cdouble c_tan(cdouble z) { return std::tan(z); }
cdouble c_tanh(cdouble z) { return std::tanh(z); }
cdouble c_sigmoid(cdouble z) { return 1.0 / (1.0 + std::exp(-z)); }

Tensor gelu_none(const Tensor& x) { return gelu(x, "none"); }
Tensor gelu_tanh(const Tensor& x) { return gelu(x, "tanh"); }
Tensor exp_(const Tensor& x) { return kiln::exp(x); }
Tensor exp2_(const Tensor& x) { return kiln::exp2(x); }
Tensor expm1_(const Tensor& x) { return kiln::expm1(x); }
Tensor log_(const Tensor& x) { return kiln::log(x); }
Tensor log2_(const Tensor& x) { return kiln::log2(x); }
Tensor log1p_(const Tensor& x) { return kiln::log1p(x); }
Tensor sqrt_(const Tensor& x) { return kiln::sqrt(x); }
Tensor rsqrt_(const Tensor& x) { return kiln::rsqrt(x); }
Tensor reciprocal_(const Tensor& x) { return kiln::reciprocal(x); }
Tensor sin_(const Tensor& x) { return kiln::sin(x); }
Tensor cos_(const Tensor& x) { return kiln::cos(x); }
Tensor tan_(const Tensor& x) { return kiln::tan(x); }
Tensor tanh_(const Tensor& x) { return kiln::tanh(x); }
Tensor sigmoid_(const Tensor& x) { return kiln::sigmoid(x); }
Tensor silu_(const Tensor& x) { return kiln::silu(x); }

// Complex inputs: real and imaginary parts from [lo, hi]; tanh and sigmoid
// over a narrower box that keeps clear of their poles (i pi/2, i pi).
KILN_OP_TABLE({
    with_complex(unary("exp", exp_, d_exp, -4, 4, {}), elementwise(c_exp)),
    with_complex(unary("log", log_, d_log, 0.05, 8, {}), elementwise(c_log)),
    with_complex(unary("log", log_, d_log, -8, 8, {}), elementwise(c_log)),  // every quadrant
    with_complex(unary("sqrt", sqrt_, d_sqrt, -9, 9, {}), elementwise(c_sqrt)),
    with_complex(unary("rsqrt", rsqrt_, rsqrt_ref, 0.05, 9, {}), elementwise(c_rsqrt)),
    with_complex(unary("reciprocal", reciprocal_, reciprocal_ref, 0.25, 4, {}), elementwise(c_reciprocal)),
    with_complex(unary("sin", sin_, d_sin, -4, 4, {}), elementwise(c_sin)),
    with_complex(unary("cos", cos_, d_cos, -4, 4, {}), elementwise(c_cos)),
    with_complex(unary("tan", tan_, d_tan, -1.4, 1.4, {}), elementwise(c_tan)),
    with_complex(unary("tanh", tanh_, d_tanh, -1.2, 1.2, {}), elementwise(c_tanh)),
    with_complex(unary("sigmoid", sigmoid_, sigmoid_ref, -2.5, 2.5, {}), elementwise(c_sigmoid)),
});

KILN_OP_TABLE({
    unary("exp", exp_, d_exp, -4, 4),
    unary("exp2", exp2_, exp2_ref, -6, 6),
    unary("expm1", expm1_, d_expm1, -4, 4),
    unary("log", log_, d_log, 0.05, 8),
    unary("log2", log2_, d_log2, 0.05, 8),
    unary("log1p", log1p_, d_log1p, -0.9, 8),
    unary("sqrt", sqrt_, d_sqrt, 0, 9),
    unary("rsqrt", rsqrt_, rsqrt_ref, 0.05, 9),
    unary("reciprocal", reciprocal_, reciprocal_ref, 0.25, 4),
    unary("sin", sin_, d_sin, -6, 6),
    unary("cos", cos_, d_cos, -6, 6),
    unary("tan", tan_, d_tan, -1.4, 1.4),
    unary("tanh", tanh_, d_tanh, -4, 4),

    unary("sigmoid", sigmoid_, sigmoid_ref, -8, 8),
    unary("silu", silu_, silu_ref, -8, 8, kFloats),
    unary("gelu", gelu_none, gelu_erf_ref, -5, 5, kFloats),
    unary("gelu", gelu_tanh, gelu_tanh_ref, -5, 5, kFloats),
});

}  // namespace
}  // namespace op_table
