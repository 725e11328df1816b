// pow, maximum, minimum, atan2, copysign, heaviside. The kernels are the ops of
// ops/registry/binary.h.
#include "kiln/unary.h"
#include "ops/binary_grad.h"

namespace kiln {
namespace {

using bin::In;

Tensor pow_impl(In a, In b, const Tensor& out, const Tensor* self) {
  bin::check_no_fp8("pow", a, b);
  const DType r = bin::result_type(a, b);
  if (r == DType::Bool) bin::throw_unsupported("pow", r, a, b);
  bin::Plan p = bin::make_plan("pow", a, b, r, r, out, self);
  if (ops::pow(bin::device("pow", p), p.a, p.b, p.dest))
    throw ValueError("[pow] integers to negative integer powers are not allowed (" + a.desc() + ", " +
                     b.desc() + ")");
  return bin::finish(p);
}

template <bool kMax>
Tensor minmax_impl(In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = kMax ? "maximum" : "minimum";
  bin::check_no_fp8(op, a, b);
  const DType r = bin::result_type(a, b);
  if (is_complex(r)) bin::throw_unsupported(op, r, a, b);
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  (kMax ? ops::maximum : ops::minimum)(bin::device(op, p), p.a, p.b, p.dest);
  return bin::finish(p);
}

enum class FloatOp { Atan2, Copysign };

// Ops that always compute in floating point: integers give float32.
Tensor float_op(FloatOp fop, In a, In b, const Tensor& out, const Tensor* self) {
  const char* op = fop == FloatOp::Atan2 ? "atan2" : "copysign";
  bin::check_no_fp8(op, a, b);
  const DType r0 = bin::result_type(a, b);
  if (is_complex(r0)) bin::throw_unsupported(op, r0, a, b);
  // Integers compute in float32 as they are loaded: no converted copies.
  const DType result = is_integral(r0, true) ? kDefaultFloat : r0;
  bin::Plan p = bin::make_plan(op, a, b, r0, result, out, self);
  (fop == FloatOp::Atan2 ? ops::atan2 : ops::copysign)(bin::device(op, p), p.a, p.b, p.dest);
  return bin::finish(p);
}

Tensor heaviside_impl(In a, In b, const Tensor& out, const Tensor* self) {
  bin::check_no_fp8("heaviside", a, b);
  if (a.t && b.t && a.t->dtype() != b.t->dtype())
    throw TypeError(std::string("[heaviside] is not implemented for tensors with different dtypes (") +
                    a.desc() + ", " + b.desc() + ")");
  const DType r = a.t && b.t ? a.t->dtype() : bin::result_type(a, b);
  if (is_complex(r)) bin::throw_unsupported("heaviside", r, a, b);
  bin::Plan p = bin::make_plan("heaviside", a, b, r, r, out, self);
  ops::heaviside(bin::device("heaviside", p), p.a, p.b, p.dest);
  return bin::finish(p);
}

// ---- derivatives (torch's formulas) -------------------------------------------

const bin::GradSpec kPowGrad{"PowBackward1", true, true, true,
                             [](const bin::GradArgs& x) { return bin::pow_grads(x, x.a, x.b); }};

// maximum/minimum: the gradient goes to the larger (smaller) operand, split
// evenly on ties (NaN: to both, as torch).
template <bool kMax>
autograd::Grads minmax_grads(const bin::GradArgs& x) {
  const Tensor tie = eq(x.a, x.b);
  const Tensor half = mul(x.g, Scalar(0.5));
  Tensor ga, gb;
  if (x.needs_a()) ga = where(tie, half, where(kMax ? lt(x.a, x.b) : gt(x.a, x.b), Scalar(0.0), x.g));
  if (x.needs_b()) gb = where(tie, half, where(kMax ? gt(x.a, x.b) : lt(x.a, x.b), Scalar(0.0), x.g));
  return {ga, gb};
}
const bin::GradSpec kMaximumGrad{"MaximumBackward0", true, true, false, minmax_grads<true>};
const bin::GradSpec kMinimumGrad{"MinimumBackward0", true, true, false, minmax_grads<false>};

// d atan2(a, b) = (g b, -g a) / (a^2 + b^2).
const bin::GradSpec kAtan2Grad{"Atan2Backward0", true, true, false, [](const bin::GradArgs& x) {
                                 const Tensor r = add(mul(x.a, x.a), mul(x.b, x.b));
                                 return autograd::Grads{x.needs_a() ? div(mul(x.g, x.b), r) : Tensor(),
                                                        x.needs_b() ? div(mul(neg(x.g), x.a), r) : Tensor()};
                               }};

// copysign(a, b) = ±a: grad a = g * (result / a), 0 where a == 0; none for b.
const bin::GradSpec kCopysignGrad{"CopysignBackward0", true, false, true, [](const bin::GradArgs& x) {
                                    Tensor ga;
                                    if (x.needs_a())
                                      ga = mul(x.g,
                                               where(eq(x.a, Scalar(0.0)), Scalar(0.0), div(x.result, x.a)));
                                    return autograd::Grads{ga, x.needs_b() ? zeros_like(x.g) : Tensor()};
                                  }};

// heaviside is piecewise constant: zero gradients.
const bin::GradSpec kHeavisideGrad{"HeavisideBackward0", false, false, false, [](const bin::GradArgs& x) {
                                     return autograd::Grads{x.needs_a() ? zeros_like(x.g) : Tensor(),
                                                            x.needs_b() ? zeros_like(x.g) : Tensor()};
                                   }};

Tensor pow_rec(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded("pow", &kPowGrad, a, b, out, self, pow_impl);
}
Tensor maximum_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded("maximum", &kMaximumGrad, a, b, out, self, minmax_impl<true>);
}
Tensor minimum_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded("minimum", &kMinimumGrad, a, b, out, self, minmax_impl<false>);
}
Tensor atan2_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded(
      "atan2", &kAtan2Grad, a, b, out, self,
      [](In x, In y, const Tensor& o, const Tensor* s) { return float_op(FloatOp::Atan2, x, y, o, s); });
}
Tensor copysign_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded(
      "copysign", &kCopysignGrad, a, b, out, self,
      [](In x, In y, const Tensor& o, const Tensor* s) { return float_op(FloatOp::Copysign, x, y, o, s); });
}
Tensor heaviside_rec(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded("heaviside", &kHeavisideGrad, a, b, out, self, heaviside_impl);
}

}  // namespace

KILN_DEFINE_BINARY(pow, pow_rec)
KILN_DEFINE_BINARY(maximum, maximum_impl)
KILN_DEFINE_BINARY(minimum, minimum_impl)
KILN_DEFINE_BINARY(atan2, atan2_impl)
KILN_DEFINE_BINARY(copysign, copysign_impl)
KILN_DEFINE_BINARY(heaviside, heaviside_rec)

}  // namespace kiln
