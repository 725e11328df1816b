// Op table entries of frexp (mantissa and exponent) and
// special_laguerre_polynomial_l (tensor x tensor with broadcasting, and the
// scalar forms) (ops/registry/unary.h).
#include "kiln/unary.h"
#include "op_table/unary_entry.h"

namespace op_table {
namespace {

using namespace kiln;

// v = m * 2^e with |m| in [0.5, 1): e = ilogb(v) + 1; (v, 0) for 0, inf, NaN.
int frexp_exponent(double v) { return (v == 0 || !std::isfinite(v)) ? 0 : std::ilogb(v) + 1; }
double mantissa_ref(double v, DType) { return std::scalbn(v, -frexp_exponent(v)); }
double exponent_ref(double v, DType) { return frexp_exponent(v); }

Tensor mantissa_fn(const Tensor& x) { return kiln::frexp(x).first; }
Tensor exponent_fn(const Tensor& x) { return kiln::frexp(x).second; }

// L_n(x) = sum_{k=0..n} (-1)^k C(n, k) x^k / k! for n = trunc(n) >= 0, else 0,
// in long double (the closed form, not the recurrence the kernel runs).
double laguerre_ref(double x, double nv) {
  if (!(nv > -1)) return 0;  // trunc(n) < 0, NaN n
  const int64_t n = int64_t(nv);
  long double sum = 0, term = 1;  // term = (-1)^k C(n, k) x^k / k!
  for (int64_t k = 0; k <= n; ++k) {
    sum += term;
    term *= -(long double)(n - k) * x / ((long double)(k + 1) * (k + 1));
  }
  return double(sum);
}

// Two inputs of the elementwise shape classes; broadcast: [5, 1] x [1, 37].
std::vector<InputSpec> two_input_shapes(ShapeClass c) {
  switch (c) {
    case ShapeClass::Empty:
      return {{{0, 5}}, {{0, 5}}};
    case ShapeClass::Scalar:
      return {{{}}, {{}}};
    case ShapeClass::Odd:
      return {{{5, 37}}, {{5, 37}}};
    case ShapeClass::NonContiguous:
      return {{{5, 37}, InputSpec::Transposed}, {{5, 37}, InputSpec::Strided}};
    case ShapeClass::Broadcast:
      return {{{5, 1}}, {{1, 37}}};
  }
  return {};
}

// Row-major value of input k at out's multi-index `i` (broadcast from its shape).
double at(const Inputs& in, size_t k, const Shape& out_shape, int64_t i) {
  const Shape& s = in.shapes[k];
  int64_t off = 0, stride = 1;
  for (size_t d = out_shape.size(); d-- > 0;) {
    const int64_t idx = i % out_shape[d];
    i /= out_shape[d];
    const size_t sd = d + s.size() - out_shape.size();
    if (d + s.size() >= out_shape.size()) {
      off += (s[sd] == 1 ? 0 : idx) * stride;
      stride *= s[sd];
    }
  }
  return in.values[k][off];
}

Entry laguerre_entry() {
  Entry e;
  e.op = "special_laguerre_polynomial_l";
  e.dtypes = kFloatsAndInts;
  e.lo = -1;
  e.hi = 6;
  e.specials = {0.0, -0.0};
  e.shapes = two_input_shapes;
  e.call = [](const std::vector<Tensor>& t) { return special_laguerre_polynomial_l(t[0], t[1]); };
  e.oracle = [](const Inputs& in, const Tensor& out) {
    const Shape shape = out.sizes();
    std::vector<double> y(out.numel());
    for (int64_t i = 0; i < int64_t(y.size()); ++i)
      y[i] = laguerre_ref(at(in, 0, shape, i), at(in, 1, shape, i));
    return y;
  };
  e.floor = 4;
  e.perf_shapes = {{{1024, 1024}}, {{1024, 1024}}};
  return e;
}

Tensor laguerre_n3(const Tensor& x) { return special_laguerre_polynomial_l(x, Scalar(3)); }
double laguerre_n3_ref(double x, DType) { return laguerre_ref(x, 3); }
Tensor laguerre_x_half(const Tensor& n) { return special_laguerre_polynomial_l(Scalar(0.5), n); }
double laguerre_x_half_ref(double n, DType) { return laguerre_ref(0.5, n); }

KILN_OP_TABLE({
    unary_entry("frexp", mantissa_fn, mantissa_ref, kFloats, -300, 300),
    unary_entry("frexp", exponent_fn, exponent_ref, kFloats, -300, 300),
    laguerre_entry(),
    unary_entry("special_laguerre_polynomial_l", laguerre_n3, laguerre_n3_ref, kFloatsAndInts, -1, 6, {0.0}),
    unary_entry("special_laguerre_polynomial_l", laguerre_x_half, laguerre_x_half_ref, kFloatsAndInts, -2, 9,
                {0.0}),
});

}  // namespace
}  // namespace op_table
