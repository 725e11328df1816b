// special_laguerre_polynomial_l(x, n): the Laguerre polynomial L_n(x), x and n
// broadcast against each other. The kernel (the three-term recurrence) is the
// op of ops/registry/unary.h.
#include "kiln/unary.h"
#include "ops/elementwise.h"  // broadcast_shapes
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {

namespace {

constexpr const char* kOp = "special_laguerre_polynomial_l";

Tensor laguerre_impl(const Tensor& x, const Tensor& n, DType dt) {
  if (is_complex(dt) || is_fp8(dt)) unary_detail::unsupported(kOp, dt);
  if (is_integral(dt, true)) dt = kDefaultFloat;
  const Shape shape = broadcast_shapes(x.shape(), n.shape(), kOp);
  // Both operands in the result dtype, as torch's common-dtype iterator (n is
  // truncated from that dtype).
  const Tensor xs = x.to(dt).expand(shape);
  const Tensor ns = n.to(dt).expand(shape);
  Tensor out = empty(shape, dt, x.device());
  ops::special_laguerre_polynomial_l(common_device(kOp, {&xs, &ns, &out}), xs, ns, out);
  return out;
}

Priority priority_of(const Tensor& t) { return t.dim() == 0 ? Priority::ZeroDim : Priority::Dimensioned; }

}  // namespace

Tensor special_laguerre_polynomial_l(const Tensor& x, const Tensor& n) {
  ResultType rt;
  rt.add(x.dtype(), priority_of(x));
  rt.add(n.dtype(), priority_of(n));
  return laguerre_impl(x, n, rt.get());
}

Tensor special_laguerre_polynomial_l(const Scalar& x, const Tensor& n) {
  ResultType rt;
  rt.add(x.promotion_dtype(), Priority::Scalar);
  rt.add(n.dtype(), priority_of(n));
  const DType dt = rt.get();
  return laguerre_impl(scalar_tensor(x, is_integral(dt, true) ? kDefaultFloat : dt, n.device()), n, dt);
}

Tensor special_laguerre_polynomial_l(const Tensor& x, const Scalar& n) {
  ResultType rt;
  rt.add(x.dtype(), priority_of(x));
  rt.add(n.promotion_dtype(), Priority::Scalar);
  const DType dt = rt.get();
  return laguerre_impl(x, scalar_tensor(n, is_integral(dt, true) ? kDefaultFloat : dt, x.device()), dt);
}

}  // namespace kiln
