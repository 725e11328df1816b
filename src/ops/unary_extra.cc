// Front-ends of the inverse trig/hyperbolic, error, gamma and Bessel
// functions, angle conversions, logit, frac, square, sgn, the sign/infinity
// predicates and nan_to_num (ops/registry/unary.h, KILN_OPS_UNARY_EXTRA), with
// torch's dtype rules: the float functions give float32 for bool and integer
// inputs; square and sgn keep x's dtype (square of bool gives int64).
#include "kiln/unary_extra.h"

#include <cfloat>
#include <cmath>

#include "core/dense_layout.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"
#include "ops/unary_grad.h"

namespace kiln {
namespace {

using unary_detail::check_dtype;
using unary_detail::check_inplace;
using unary_detail::inplace_recorded;
using unary_detail::recorded;
using unary_detail::UnaryGrad;
using unary_detail::unsupported;

// float32 for bool/integers, else x's dtype; complex only where `complex`.
DType float_result(const char* op, DType d, bool complex) {
  if (is_fp8(d) || (is_complex(d) && !complex)) unsupported(op, d);
  return is_integral(d, true) ? kDefaultFloat : d;
}

template <typename Sig, typename... P>
Tensor float_op(const Op<Sig>& k, const Tensor& x, const char* op, bool complex, P... p) {
  Tensor out = empty_following(x.sizes(), float_result(op, x.dtype(), complex), x.device(), {&x});
  k(x.device(), x, out, p...);
  return out;
}

// fn is the out-of-place form (recorded when x's history must be).
template <typename Sig, typename Fn, typename... P>
Tensor& float_op_(const Op<Sig>& k, const UnaryGrad& grad, Fn fn, Tensor& x, const char* op, bool complex,
                  P... p) {
  check_inplace(op, float_result(op, x.dtype(), complex), x);
  if (inplace_recorded(op, grad, x, fn)) return x;
  k(x.device(), x, x, p...);
  return x;
}

Tensor predicate(const Op<ops::Unary>& k, const Tensor& x, const char* op, DTypeSet accepts) {
  check_dtype(op, x.dtype(), accepts);
  Tensor out = empty_following(x.sizes(), DType::Bool, x.device(), {&x});
  k(x.device(), x, out);
  return out;
}

double eps_arg(std::optional<double> eps) { return eps ? *eps : -1.0; }

// The largest finite value of a floating dtype (torch.finfo(d).max).
double finite_max(DType d) {
  switch (d) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return FLT_MAX;
    default:
      return DBL_MAX;
  }
}

}  // namespace

#define KILN_FLOAT_UNARY(fn, complex)                                                                     \
  Tensor fn(const Tensor& x) {                                                                            \
    return recorded(#fn, unary_detail::fn##_grad, x, [&] { return float_op(ops::fn, x, #fn, complex); }); \
  }                                                                                                       \
  Tensor& fn##_(Tensor& x) {                                                                              \
    return float_op_(                                                                                     \
        ops::fn, unary_detail::fn##_grad, [](const Tensor& t) { return fn(t); }, x, #fn "_", complex);    \
  }
KILN_FLOAT_UNARY(acos, true)
KILN_FLOAT_UNARY(asin, true)
KILN_FLOAT_UNARY(atan, true)
KILN_FLOAT_UNARY(acosh, true)
KILN_FLOAT_UNARY(asinh, true)
KILN_FLOAT_UNARY(atanh, true)
KILN_FLOAT_UNARY(cosh, true)
KILN_FLOAT_UNARY(sinh, true)
KILN_FLOAT_UNARY(erf, false)
KILN_FLOAT_UNARY(erfc, false)
KILN_FLOAT_UNARY(erfinv, false)
KILN_FLOAT_UNARY(lgamma, false)
KILN_FLOAT_UNARY(digamma, false)
KILN_FLOAT_UNARY(log10, true)
KILN_FLOAT_UNARY(sinc, false)
KILN_FLOAT_UNARY(deg2rad, false)
KILN_FLOAT_UNARY(rad2deg, false)
KILN_FLOAT_UNARY(i0, false)
#undef KILN_FLOAT_UNARY

Tensor logit(const Tensor& x, std::optional<double> eps) {
  autograd::Record rec("logit", {&x});
  Tensor out = float_op(ops::logit, x, "logit", false, eps_arg(eps));
  if (rec) unary_detail::finish_unary(rec, "logit", unary_detail::logit_grad(eps_arg(eps)), x, out);
  return out;
}
Tensor& logit_(Tensor& x, std::optional<double> eps) {
  // The Record of logit(x.clone()) saves the clone.
  static const UnaryGrad saves_input{"LogitBackward0", true};
  return float_op_(
      ops::logit, saves_input, [eps](const Tensor& t) { return logit(t, eps); }, x, "logit_", false,
      eps_arg(eps));
}

// frac takes floating inputs only (torch: "frac_cpu" not implemented for 'Long').
Tensor frac(const Tensor& x) {
  check_dtype("frac", x.dtype(), kFloatSet);
  return recorded("frac", unary_detail::frac_grad, x, [&] { return float_op(ops::frac, x, "frac", false); });
}
Tensor& frac_(Tensor& x) {
  check_dtype("frac_", x.dtype(), kFloatSet);
  return float_op_(
      ops::frac, unary_detail::frac_grad, [](const Tensor& t) { return frac(t); }, x, "frac_", false);
}

// square = pow(x, 2): integers keep their dtype, bool gives int64.
Tensor square(const Tensor& x) {
  if (is_fp8(x.dtype())) unsupported("square", x.dtype());
  return recorded("square", unary_detail::square_grad, x, [&] {
    Tensor out =
        empty_following(x.sizes(), x.dtype() == DType::Bool ? DType::Int64 : x.dtype(), x.device(), {&x});
    ops::square(x.device(), x, out);
    return out;
  });
}
Tensor& square_(Tensor& x) {
  if (is_fp8(x.dtype())) unsupported("square_", x.dtype());
  check_inplace("square_", x.dtype() == DType::Bool ? DType::Int64 : x.dtype(), x);
  if (inplace_recorded("square_", unary_detail::square_grad, x, [](const Tensor& t) { return square(t); }))
    return x;
  ops::square(x.device(), x, x);
  return x;
}

Tensor sgn(const Tensor& x) {
  check_dtype("sgn", x.dtype(), kBoolSet | kIntSet | kFloatSet | kComplexSet);
  return recorded("sgn", unary_detail::sgn_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    ops::sgn(x.device(), x, out);
    return out;
  });
}
Tensor& sgn_(Tensor& x) {
  check_dtype("sgn_", x.dtype(), kBoolSet | kIntSet | kFloatSet | kComplexSet);
  assert_no_internal_overlap(x, "sgn_");
  if (inplace_recorded("sgn_", unary_detail::sgn_grad, x, [](const Tensor& t) { return sgn(t); })) return x;
  ops::sgn(x.device(), x, x);
  return x;
}

// positive(x) is x itself (torch returns the input); bool raises, as torch.
Tensor positive(const Tensor& x) {
  if (x.dtype() == DType::Bool) throw TypeError("[positive] does not support bool tensors, got dtype bool");
  return x;
}

constexpr DTypeSet kReal = kBoolSet | kIntSet | kFloatSet;
Tensor signbit(const Tensor& x) { return predicate(ops::signbit, x, "signbit", kReal); }
Tensor isposinf(const Tensor& x) { return predicate(ops::isposinf, x, "isposinf", kReal); }
Tensor isneginf(const Tensor& x) { return predicate(ops::isneginf, x, "isneginf", kReal); }
Tensor isreal(const Tensor& x) { return predicate(ops::isreal, x, "isreal", kReal | kComplexSet); }

// nan_to_num: posinf/neginf default to the dtype's largest/lowest finite value.
// Integer and bool inputs (never NaN or inf) give a copy.
Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  check_dtype("nan_to_num", x.dtype(), kReal);
  if (is_integral(x.dtype(), true)) return x.clone();
  const double m = finite_max(x.dtype());
  return recorded("nan_to_num", unary_detail::nan_to_num_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    ops::nan_to_num(x.device(), x, out, nan, posinf.value_or(m), neginf.value_or(-m));
    return out;
  });
}
Tensor& nan_to_num_(Tensor& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  check_dtype("nan_to_num_", x.dtype(), kReal);
  if (is_integral(x.dtype(), true)) return x;
  assert_no_internal_overlap(x, "nan_to_num_");
  if (inplace_recorded("nan_to_num_", unary_detail::nan_to_num_grad, x,
                       [&](const Tensor& t) { return nan_to_num(t, nan, posinf, neginf); }))
    return x;
  const double m = finite_max(x.dtype());
  ops::nan_to_num(x.device(), x, x, nan, posinf.value_or(m), neginf.value_or(-m));
  return x;
}

}  // namespace kiln
