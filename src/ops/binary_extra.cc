// Front-ends of hypot, logaddexp, logaddexp2, xlogy, fmax, fmin, gcd, lcm,
// ldexp, nextafter, float_power and isclose (ops/registry/binary_extra.h),
// and allclose/equal composed of isclose/eq and all. Promotion as torch:
// floating-only ops raise TypeError for integer operands, xlogy and ldexp
// compute integers in float32, float_power in float64/complex128.
#include "kiln/binary_extra.h"

#include "kiln/reduce.h"
#include "ops/binary_common.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

using bin::In;

enum class Rule { FloatOnly, IntsToFloat, Real, IntOnly, Double };

// The compute (= result) dtype of an op under its rule, or TypeError.
DType result_dtype(const char* op, Rule rule, In a, In b) {
  bin::check_no_fp8(op, a, b);
  const DType r = bin::result_type(a, b);
  switch (rule) {
    case Rule::FloatOnly:
      if (!is_floating(r) || is_complex(r)) bin::throw_unsupported(op, r, a, b);
      return r;
    case Rule::IntsToFloat:
      if (is_complex(r)) bin::throw_unsupported(op, r, a, b);
      return is_integral(r, true) ? kDefaultFloat : r;
    case Rule::Real:
      if (is_complex(r)) bin::throw_unsupported(op, r, a, b);
      return r;
    case Rule::IntOnly:
      if (!is_integral(r, false)) bin::throw_unsupported(op, r, a, b);
      return r;
    case Rule::Double:
      return is_complex(r) ? DType::Complex128 : DType::Float64;
  }
  return r;
}

template <Rule R>
Tensor run(const Op<ops::Binary>& k, const char* op, In a, In b, const Tensor& out, const Tensor* self) {
  const DType r = result_dtype(op, R, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  k(bin::device(op, p), p.a, p.b, p.dest);
  return bin::finish(p);
}

#define KILN_IMPL(name, rule)                                             \
  Tensor name##_impl(In a, In b, const Tensor& out, const Tensor* self) { \
    return run<Rule::rule>(ops::name, #name, a, b, out, self);            \
  }
KILN_IMPL(hypot, FloatOnly)
KILN_IMPL(logaddexp, FloatOnly)
KILN_IMPL(logaddexp2, FloatOnly)
KILN_IMPL(nextafter, FloatOnly)
KILN_IMPL(xlogy, IntsToFloat)
KILN_IMPL(ldexp, IntsToFloat)
KILN_IMPL(fmax, Real)
KILN_IMPL(fmin, Real)
KILN_IMPL(gcd, IntOnly)
KILN_IMPL(lcm, IntOnly)
KILN_IMPL(float_power, Double)
#undef KILN_IMPL

}  // namespace

KILN_DEFINE_BINARY(hypot, hypot_impl)
KILN_DEFINE_BINARY(logaddexp, logaddexp_impl)
KILN_DEFINE_BINARY(logaddexp2, logaddexp2_impl)
KILN_DEFINE_BINARY(xlogy, xlogy_impl)
KILN_DEFINE_BINARY(fmax, fmax_impl)
KILN_DEFINE_BINARY(fmin, fmin_impl)
KILN_DEFINE_BINARY(gcd, gcd_impl)
KILN_DEFINE_BINARY(lcm, lcm_impl)
KILN_DEFINE_BINARY(ldexp, ldexp_impl)
KILN_DEFINE_BINARY(nextafter, nextafter_impl)
KILN_DEFINE_BINARY(float_power, float_power_impl)

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  if (a.dtype() != b.dtype())
    throw TypeError("[isclose] expected both inputs to have the same dtype, got " +
                    std::string(name(a.dtype())) + " and " + name(b.dtype()));
  if (is_fp8(a.dtype())) throw TypeError(std::string("[isclose] unsupported dtype ") + name(a.dtype()));
  if (rtol < 0 || atol < 0)
    throw ValueError("[isclose] rtol and atol must be non-negative, got rtol=" + std::to_string(rtol) +
                     " and atol=" + std::to_string(atol));
  bin::Plan p = bin::make_plan("isclose", a, b, a.dtype(), DType::Bool, Tensor(), nullptr);
  ops::isclose(bin::device("isclose", p), p.a, p.b, rtol, atol, equal_nan, p.dest);
  return bin::finish(p);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan)).item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  return all(eq(a, b)).item<bool>();
}

}  // namespace kiln
