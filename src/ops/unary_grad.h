// Autograd for the unary front-ends: one wrapper records a unary op given its
// derivative, and one handles the in-place forms (recorded out of place, then
// written back). The derivatives live in unary_grad.cc; see
// core/autograd_record.h for the recording rules.
#pragma once

#include <functional>

#include "core/autograd_record.h"

namespace kiln::unary_detail {

// d(op)/dx applied to the incoming gradient g, from the input x and the result
// y (each defined only where the spec saves it), with kiln's public ops.
using UnaryFormula = std::function<Tensor(const Tensor& g, const Tensor& x, const Tensor& y)>;

struct UnaryGrad {
  const char* node;  // torch's node name, e.g. "ExpBackward0"
  bool save_x = false, save_result = false;
  UnaryFormula formula;
  // How the formula serves complex inputs (torch's convention: the gradient
  // of z is dL/dRe(z) + i dL/dIm(z)). None: a complex input that requires
  // grad raises rather than give a wrong gradient. Holomorphic: the formula
  // is g * f'(z), and the gradient is g * conj(f'(z)), computed as
  // conj(formula(conj(g))). Own: the formula handles complex inputs itself.
  enum Complex { None, Holomorphic, Own } complex = None;
};

// Puts spec's node on out = op(x) (rec is active).
void finish_unary(autograd::Record& rec, const char* op, const UnaryGrad& spec, const Tensor& x, Tensor& out);

// out = forward() (op(x), computed as before), recorded when x requires grad.
template <typename F>
Tensor recorded(const char* op, const UnaryGrad& spec, const Tensor& x, F&& forward) {
  autograd::Record rec(op, {&x});
  Tensor out = forward();
  if (rec) finish_unary(rec, op, spec, x, out);
  return out;
}

// For op_(x) after its checks: bumps x's version and, when x's history must be
// recorded, writes out_of_place(x) (recorded) into x and returns true. An op
// that saves its input reads a copy of x, which the write leaves intact.
template <typename F>
bool inplace_recorded(const char* op, const UnaryGrad& spec, const Tensor& x, F&& out_of_place) {
  if (!autograd::inplace_needs_grad(op, x, {})) return false;
  autograd::rebase_inplace(x, out_of_place(spec.save_x ? x.clone() : x));
  return true;
}

// The derivatives (unary_grad.cc).
extern const UnaryGrad exp_grad, exp2_grad, expm1_grad, log_grad, log2_grad, log10_grad, log1p_grad,
    sqrt_grad, rsqrt_grad, reciprocal_grad, sin_grad, cos_grad, tan_grad, tanh_grad, sigmoid_grad, silu_grad,
    neg_grad, abs_grad, sign_grad, sgn_grad, relu_grad, floor_grad, ceil_grad, round_grad, trunc_grad,
    frac_grad, acos_grad, asin_grad, atan_grad, acosh_grad, asinh_grad, atanh_grad, cosh_grad, sinh_grad,
    erf_grad, erfc_grad, erfinv_grad, lgamma_grad, digamma_grad, sinc_grad, deg2rad_grad, rad2deg_grad,
    i0_grad, square_grad, nan_to_num_grad;
extern const UnaryGrad gelu_grad, gelu_tanh_grad;
// logit's derivative with eps (eps < 0: none).
UnaryGrad logit_grad(double eps);

}  // namespace kiln::unary_detail
