// Front-ends of kiln.special's Bessel, Airy, ndtri, zeta, polygamma and
// incomplete gamma ops (include/kiln/special.h): the result dtype, the operands
// cast to it (and broadcast), the kernel, and torch's derivatives for i0e, i1,
// i1e and polygamma.
#include "kiln/special.h"

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/unary.h"
#include "kiln/unary_extra.h"
#include "ops/elementwise.h"  // broadcast_shapes
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

DType float_result(const char* op, DType d) {
  if (is_complex(d) || is_fp8(d)) unary_detail::unsupported(op, d);
  return is_integral(d, true) ? kDefaultFloat : d;
}

Tensor unary(const Op<ops::Unary>& k, const char* op, const Tensor& x) {
  const DType dt = float_result(op, x.dtype());
  const Tensor xs = x.to(dt);
  Tensor out = empty(x.sizes(), dt, x.device());
  k(common_device(op, {&xs, &out}), xs, out);
  return out;
}

// A unary op with its derivative: grad(g, x, y) with y the result.
template <typename Grad>
Tensor unary_recorded(const Op<ops::Unary>& k, const char* op, const char* node, const Tensor& x, Grad grad) {
  autograd::Record rec(op, {&x});
  Tensor out = unary(k, op, x);
  if (rec)
    rec.finish(node, {&out}, {x, out}, [grad](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{grad(g[0], n.saved(0), n.saved(1))};
    });
  return out;
}

Priority priority_of(const Tensor& t) { return t.dim() == 0 ? Priority::ZeroDim : Priority::Dimensioned; }

Tensor binary(const Op<ops::SpecialBinary>& k, const char* op, const Tensor& a, const Tensor& b, DType dt) {
  dt = float_result(op, dt);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  const Tensor as = a.to(dt).expand(shape), bs = b.to(dt).expand(shape);
  Tensor out = empty(shape, dt, a.device());
  k(common_device(op, {&as, &bs, &out}), as, bs, out);
  return out;
}

Tensor binary(const Op<ops::SpecialBinary>& k, const char* op, const Tensor& a, const Tensor& b) {
  ResultType rt;
  rt.add(a.dtype(), priority_of(a));
  rt.add(b.dtype(), priority_of(b));
  return binary(k, op, a, b, rt.get());
}

}  // namespace

Tensor special_bessel_j0(const Tensor& x) { return unary(ops::special_bessel_j0, "special_bessel_j0", x); }
Tensor special_bessel_j1(const Tensor& x) { return unary(ops::special_bessel_j1, "special_bessel_j1", x); }
Tensor special_bessel_y0(const Tensor& x) { return unary(ops::special_bessel_y0, "special_bessel_y0", x); }
Tensor special_bessel_y1(const Tensor& x) { return unary(ops::special_bessel_y1, "special_bessel_y1", x); }
Tensor special_modified_bessel_k0(const Tensor& x) {
  return unary(ops::special_modified_bessel_k0, "special_modified_bessel_k0", x);
}
Tensor special_modified_bessel_k1(const Tensor& x) {
  return unary(ops::special_modified_bessel_k1, "special_modified_bessel_k1", x);
}
Tensor special_scaled_modified_bessel_k0(const Tensor& x) {
  return unary(ops::special_scaled_modified_bessel_k0, "special_scaled_modified_bessel_k0", x);
}
Tensor special_scaled_modified_bessel_k1(const Tensor& x) {
  return unary(ops::special_scaled_modified_bessel_k1, "special_scaled_modified_bessel_k1", x);
}
Tensor special_airy_ai(const Tensor& x) { return unary(ops::special_airy_ai, "special_airy_ai", x); }
Tensor special_ndtri(const Tensor& x) { return unary(ops::special_ndtri, "special_ndtri", x); }

// i0e' = i1e - sign(x) i0e.
Tensor special_i0e(const Tensor& x) {
  return unary_recorded(ops::special_i0e, "special_i0e", "SpecialI0EBackward0", x,
                        [](const Tensor& g, const Tensor& x, const Tensor& y) {
                          return mul(g, sub(special_i1e(x), mul(sign(x), y)));
                        });
}
// i1' = i0 - i1 / x (1/2 at 0).
Tensor special_i1(const Tensor& x) {
  return unary_recorded(ops::special_i1, "special_i1", "SpecialI1Backward0", x,
                        [](const Tensor& g, const Tensor& x, const Tensor& y) {
                          return mul(g, where(eq(x, Scalar(0.0)), Scalar(0.5), sub(i0(x), div(y, x))));
                        });
}
// i1e' = i0e - i1e (sign(x) + 1 / x) (1/2 at 0).
Tensor special_i1e(const Tensor& x) {
  return unary_recorded(ops::special_i1e, "special_i1e", "SpecialI1EBackward0", x,
                        [](const Tensor& g, const Tensor& x, const Tensor& y) {
                          return mul(g, where(eq(x, Scalar(0.0)), Scalar(0.5),
                                              sub(special_i0e(x), mul(y, add(sign(x), reciprocal(x))))));
                        });
}

Tensor special_zeta(const Tensor& x, const Tensor& q) {
  return binary(ops::special_zeta, "special_zeta", x, q);
}
Tensor special_zeta(const Scalar& x, const Tensor& q) {
  ResultType rt;
  rt.add(x.promotion_dtype(), Priority::Scalar);
  rt.add(q.dtype(), priority_of(q));
  const DType dt = float_result("special_zeta", rt.get());
  return binary(ops::special_zeta, "special_zeta", scalar_tensor(x, dt, q.device()), q, dt);
}
Tensor special_zeta(const Tensor& x, const Scalar& q) {
  ResultType rt;
  rt.add(x.dtype(), priority_of(x));
  rt.add(q.promotion_dtype(), Priority::Scalar);
  const DType dt = float_result("special_zeta", rt.get());
  return binary(ops::special_zeta, "special_zeta", x, scalar_tensor(q, dt, x.device()), dt);
}
Tensor special_gammainc(const Tensor& a, const Tensor& x) {
  return binary(ops::special_gammainc, "special_gammainc", a, x);
}
Tensor special_gammaincc(const Tensor& a, const Tensor& x) {
  return binary(ops::special_gammaincc, "special_gammaincc", a, x);
}

// polygamma(n, x)' = polygamma(n + 1, x).
Tensor special_polygamma(int64_t n, const Tensor& x) {
  KILN_CHECK(n >= 0, ValueError,
             "[special_polygamma] polygamma(n, x) does not support negative n, got " << n);
  autograd::Record rec("special_polygamma", {&x});
  const DType dt = float_result("special_polygamma", x.dtype());
  const Tensor xs = x.to(dt);
  Tensor out = empty(x.sizes(), dt, x.device());
  ops::special_polygamma(common_device("special_polygamma", {&xs, &out}), xs, n, out);
  if (rec)
    rec.finish("PolygammaBackward0", {&out}, {x}, [n](autograd::FnNode& node, autograd::Grads& g) {
      return autograd::Grads{mul(g[0], special_polygamma(n + 1, node.saved(0)))};
    });
  return out;
}

}  // namespace kiln
