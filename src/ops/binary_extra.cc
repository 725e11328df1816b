// Front-ends of hypot, logaddexp, logaddexp2, xlogy, fmax, fmin, gcd, lcm,
// ldexp, nextafter, float_power and isclose (ops/registry/binary_extra.h),
// and allclose/equal composed of isclose/eq and all. Promotion as torch:
// floating-only ops raise TypeError for integer operands, xlogy and ldexp
// compute integers in float32, float_power in float64/complex128.
#include "kiln/binary_extra.h"

#include "kiln/reduce.h"
#include "kiln/unary.h"
#include "ops/binary_grad.h"
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
KILN_IMPL(gcd, IntOnly)
KILN_IMPL(lcm, IntOnly)
#undef KILN_IMPL

// ---- derivatives (torch's formulas) -------------------------------------------

using autograd::Grads;
using bin::GradArgs;
using bin::GradSpec;

constexpr double kLn2 = 0.6931471805599453;

// d hypot(a, b) = (g a, g b) / result.
const GradSpec kHypotGrad{"HypotBackward0", true, true, true, [](const GradArgs& x) {
                            return Grads{x.needs_a() ? div(mul(x.g, x.a), x.result) : Tensor(),
                                         x.needs_b() ? div(mul(x.g, x.b), x.result) : Tensor()};
                          }};
// d log(e^a + e^b) = g / (1 + e^(b - a)), g / (1 + e^(a - b)); base 2 alike.
const GradSpec kLogaddexpGrad{
    "LogaddexpBackward0", true, true, false, [](const GradArgs& x) {
      auto part = [&](const Tensor& u, const Tensor& v) {
        return div(x.g, add(exp(sub(v, u)), Scalar(1.0)));
      };
      return Grads{x.needs_a() ? part(x.a, x.b) : Tensor(), x.needs_b() ? part(x.b, x.a) : Tensor()};
    }};
const GradSpec kLogaddexp2Grad{
    "Logaddexp2Backward0", true, true, false, [](const GradArgs& x) {
      auto part = [&](const Tensor& u, const Tensor& v) {
        return div(x.g, add(pow(Scalar(2.0), sub(v, u)), Scalar(1.0)));
      };
      return Grads{x.needs_a() ? part(x.a, x.b) : Tensor(), x.needs_b() ? part(x.b, x.a) : Tensor()};
    }};
// d xlogy(a, b) = (g log b, g a / b); at a == 0 with b <= 0 (undefined nearby)
// grad a is 0, torch's directional derivative along a = 0.
const GradSpec kXlogyGrad{"XlogyBackward0", true, true, false, [](const GradArgs& x) {
                            Tensor ga;
                            if (x.needs_a())
                              ga = where(logical_and(eq(x.a, Scalar(0.0)), le(x.b, Scalar(0.0))), Scalar(0.0),
                                         xlogy(x.g, x.b));
                            return Grads{ga, x.needs_b() ? div(mul(x.g, x.a), x.b) : Tensor()};
                          }};
// fmax/fmin: the whole gradient to the operand chosen (a on ties, the non-NaN
// one when one is NaN).
template <bool kMax>
Grads fminmax_grads(const GradArgs& x) {
  const Tensor to_a = logical_or(kMax ? ge(x.a, x.b) : le(x.a, x.b), isnan(x.b));
  return Grads{x.needs_a() ? where(to_a, x.g, Scalar(0.0)) : Tensor(),
               x.needs_b() ? where(to_a, Scalar(0.0), x.g) : Tensor()};
}
const GradSpec kFmaxGrad{"FmaxBackward0", true, true, false, fminmax_grads<true>};
const GradSpec kFminGrad{"FminBackward0", true, true, false, fminmax_grads<false>};
// ldexp(a, b) = a 2^b: (g 2^b, g result ln 2).
const GradSpec kLdexpGrad{"LdexpBackward0", false, true, true, [](const GradArgs& x) {
                            return Grads{x.needs_a() ? mul(x.g, exp2(x.b.to(x.result.dtype()))) : Tensor(),
                                         x.needs_b() ? mul(mul(x.g, x.result), Scalar(kLn2)) : Tensor()};
                          }};
// float_power is pow in float64.
const GradSpec kFloatPowerGrad{"PowBackward1", true, true, true, [](const GradArgs& x) {
                                 const DType d = x.result.dtype();
                                 return bin::pow_grads(x, x.a.to(d), x.b.to(d));
                               }};
template <Rule R>
Tensor run_rec(const Op<ops::Binary>& k, const char* op, const GradSpec* spec, In a, In b, const Tensor& out,
               const Tensor* self) {
  return bin::run_recorded(op, spec, a, b, out, self, [&k, op](In x, In y, const Tensor& o, const Tensor* s) {
    return run<R>(k, op, x, y, o, s);
  });
}

#define KILN_REC(name, rule, spec)                                       \
  Tensor name##_rec(In a, In b, const Tensor& out, const Tensor* self) { \
    return run_rec<Rule::rule>(ops::name, #name, spec, a, b, out, self); \
  }
KILN_REC(hypot, FloatOnly, &kHypotGrad)
KILN_REC(logaddexp, FloatOnly, &kLogaddexpGrad)
KILN_REC(logaddexp2, FloatOnly, &kLogaddexp2Grad)
// nextafter has no derivative in torch (not_implemented): it raises here too.
KILN_REC(nextafter, FloatOnly, nullptr)
KILN_REC(xlogy, IntsToFloat, &kXlogyGrad)
KILN_REC(ldexp, IntsToFloat, &kLdexpGrad)
KILN_REC(fmax, Real, &kFmaxGrad)
KILN_REC(fmin, Real, &kFminGrad)
KILN_REC(float_power, Double, &kFloatPowerGrad)
#undef KILN_REC

}  // namespace

KILN_DEFINE_BINARY(hypot, hypot_rec)
KILN_DEFINE_BINARY(logaddexp, logaddexp_rec)
KILN_DEFINE_BINARY(logaddexp2, logaddexp2_rec)
KILN_DEFINE_BINARY(xlogy, xlogy_rec)
KILN_DEFINE_BINARY(fmax, fmax_rec)
KILN_DEFINE_BINARY(fmin, fmin_rec)
KILN_DEFINE_BINARY(gcd, gcd_impl)
KILN_DEFINE_BINARY(lcm, lcm_impl)
KILN_DEFINE_BINARY(ldexp, ldexp_rec)
KILN_DEFINE_BINARY(nextafter, nextafter_rec)
KILN_DEFINE_BINARY(float_power, float_power_rec)

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
