// pow, maximum, minimum, atan2, copysign, heaviside. The kernels are the ops of
// ops/registry/binary.h.
#include "ops/binary_common.h"

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

Tensor maximum_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return minmax_impl<true>(a, b, out, self);
}
Tensor minimum_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return minmax_impl<false>(a, b, out, self);
}
Tensor atan2_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return float_op(FloatOp::Atan2, a, b, out, self);
}
Tensor copysign_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return float_op(FloatOp::Copysign, a, b, out, self);
}

}  // namespace

KILN_DEFINE_BINARY(pow, pow_impl)
KILN_DEFINE_BINARY(maximum, maximum_impl)
KILN_DEFINE_BINARY(minimum, minimum_impl)
KILN_DEFINE_BINARY(atan2, atan2_impl)
KILN_DEFINE_BINARY(copysign, copysign_impl)
KILN_DEFINE_BINARY(heaviside, heaviside_impl)

}  // namespace kiln
