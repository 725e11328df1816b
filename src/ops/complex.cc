// Front-ends of the complex-part ops (kiln/complex.h, ops/registry/complex.h)
// and their derivatives in torch's convention: for a real loss L, the gradient
// of z = x + iy is dL/dx + i dL/dy, so an op's node maps g to the gradient of
// Re(sum(conj(g) * out)).
#include "kiln/complex.h"

#include "core/autograd_record.h"
#include "core/dense_layout.h"
#include "kiln/binary.h"
#include "kiln/shape.h"
#include "kiln/unary.h"
#include "kiln/unary_extra.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

using unary_detail::check_dtype;

constexpr DTypeSet kNumeric = kBoolSet | kIntSet | kFloatSet | kComplexSet;
const Scalar kI{complex128(0.0, 1.0)};

// A node with one input and one output: grad = f(g, saved x).
template <typename F>
Tensor unary_node(const char* op, const char* node, const Tensor& x, bool save_x, F f,
                  const std::function<Tensor()>& forward) {
  autograd::Record rec(op, {&x});
  Tensor out = forward();
  if (rec)
    rec.finish(node, {&out}, {save_x ? x : Tensor()}, [f](autograd::FnNode& n, autograd::Grads& g) {
      if (!n.needs(0) || !g[0].defined()) return autograd::Grads{Tensor()};
      return autograd::Grads{f(g[0], n.saved(0))};
    });
  return out;
}

Tensor run_unary(const Op<ops::Unary>& k, const Tensor& x, DType out_dtype) {
  Tensor out = empty_following(x.sizes(), out_dtype, x.device(), {&x});
  k(x.device(), x, out);
  return out;
}

// complex / polar: float32 or float64 operands of one dtype, broadcast.
Tensor make_complex(const char* op, const Op<ops::MakeComplex>& k, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || (a.dtype() != DType::Float32 && a.dtype() != DType::Float64))
    throw TypeError(std::string("[") + op + "] expected float32 or float64 inputs of one dtype, got " +
                    name(a.dtype()) + " and " + name(b.dtype()));
  const Shape shapes[2] = {a.sizes(), b.sizes()};
  const Shape s = broadcast_shapes(shapes);
  Tensor out = empty_following(s, to_complex(a.dtype()), a.device(), {&a, &b});
  k(common_device(op, {&a, &b, &out}), a.expand(s), b.expand(s), out);
  return out;
}

}  // namespace

// d conj(z) = conj(g).
Tensor conj(const Tensor& x) {
  check_dtype("conj", x.dtype(), kNumeric);
  return unary_node(
      "conj", "ConjBackward0", x, false, [](const Tensor& g, const Tensor&) { return conj(g); },
      [&] { return run_unary(ops::conj, x, x.dtype()); });
}

// real(z) = x: the gradient g (real) as complex, g + 0i.
Tensor real(const Tensor& x) {
  if (!is_complex(x.dtype())) return x;
  return unary_node(
      "real", "RealBackward0", x, false, [](const Tensor& g, const Tensor&) { return g; },
      [&] { return run_unary(ops::real, x, to_real(x.dtype())); });
}

// imag(z) = y: the gradient i g.
Tensor imag(const Tensor& x) {
  if (!is_complex(x.dtype()))
    throw TypeError(std::string("[imag] is not implemented for tensors with non-complex dtypes, got ") +
                    name(x.dtype()));
  return unary_node(
      "imag", "ImagBackward0", x, false, [](const Tensor& g, const Tensor&) { return mul(g, kI); },
      [&] { return run_unary(ops::imag, x, to_real(x.dtype())); });
}

// angle(z) = atan2(y, x): d/dx = -y/|z|^2, d/dy = x/|z|^2, so the gradient is
// g i z / |z|^2 (0 at z = 0, as torch); a real x's angle is piecewise constant.
Tensor angle(const Tensor& x) {
  check_dtype("angle", x.dtype(), kNumeric);
  const DType r = is_complex(x.dtype())          ? to_real(x.dtype())
                  : is_integral(x.dtype(), true) ? kDefaultFloat
                                                 : x.dtype();
  return unary_node(
      "angle", "AngleBackward0", x, is_complex(x.dtype()),
      [](const Tensor& g, const Tensor& z) {
        if (!z.defined()) return zeros_like(g);
        const Tensor d = div(mul(z, kI), square(abs(z)));
        return where(eq(z, Scalar(0.0)), Scalar(0.0), mul(g, d));
      },
      [&] { return run_unary(ops::angle, x.dtype() == r || is_complex(x.dtype()) ? x : x.to(r), r); });
}

// out = re + i im: grad re = Re(g), grad im = Im(g).
Tensor complex(const Tensor& re, const Tensor& im) {
  autograd::Record rec("complex", {&re, &im});
  Tensor out = make_complex("complex", ops::complex, re, im);
  if (rec)
    rec.finish("ComplexBackward0", {&out}, {}, [](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{n.needs(0) ? real(g[0]) : Tensor(), n.needs(1) ? imag(g[0]) : Tensor()};
    });
  return out;
}

// out = r e^(i t): grad r = Re(conj(g) e^(i t)), grad t = Re(conj(g) i out).
Tensor polar(const Tensor& abs, const Tensor& angle) {
  autograd::Record rec("polar", {&abs, &angle});
  Tensor out = make_complex("polar", ops::polar, abs, angle);
  if (rec)
    rec.finish("PolarBackward0", {&out}, {angle, out}, [](autograd::FnNode& n, autograd::Grads& g) {
      const Tensor gc = conj(g[0]);
      Tensor ga, gt;
      if (n.needs(0)) {
        const Tensor t = n.saved(0);
        ga = real(mul(gc, complex(cos(t), sin(t))));
      }
      if (n.needs(1)) gt = real(mul(gc, mul(n.saved(1), kI)));
      return autograd::Grads{ga, gt};
    });
  return out;
}

}  // namespace kiln
