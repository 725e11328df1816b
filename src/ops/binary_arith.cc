// add, sub, mul: a + alpha * b, a - alpha * b, a * b with torch's promotion and
// alpha checks; the kernels are the ops of ops/registry/binary.h.
#include "ops/binary_grad.h"
#include "kiln/unary.h"

namespace kiln {
namespace {

using bin::In;

// torch's alpha_check.
void check_alpha(const char* op, DType r, const Scalar& alpha) {
  if (alpha.is_bool() && r != DType::Bool)
    throw TypeError(std::string("[") + op + "] boolean alpha only supported for bool results, got " + name(r));
  if (is_integral(r, true) && !(alpha.is_integral() || alpha.is_bool()))
    throw TypeError(std::string("[") + op + "] for integral input tensors (result " + name(r) +
                    "), argument alpha must not be a floating point number, got " + alpha.str());
  if (alpha.is_complex() && !is_complex(r))
    throw TypeError(std::string("[") + op + "] for non-complex input tensors (result " + name(r) +
                    "), argument alpha must not be a complex number");
}

enum class Kind { Add, Sub, Mul };

Tensor arith(Kind kind, In a, In b, const Scalar& alpha, const Tensor& out, const Tensor* self) {
  const char* op = kind == Kind::Add ? "add" : kind == Kind::Sub ? "sub" : "mul";
  bin::check_no_fp8(op, a, b);
  const DType r = bin::result_type(a, b);
  if (kind == Kind::Sub && (a.dtype() == DType::Bool || b.dtype() == DType::Bool))
    throw TypeError(std::string("[sub] subtraction with a bool operand is not supported (") + a.desc() +
                    ", " + b.desc() + "); use logical_xor or ~ instead");
  if (kind != Kind::Mul) check_alpha(op, r, alpha);
  bin::Plan p = bin::make_plan(op, a, b, r, r, out, self);
  const Device d = bin::device(op, p);
  if (kind == Kind::Add)
    ops::add(d, p.a, p.b, alpha, p.dest);
  else if (kind == Kind::Sub)
    ops::sub(d, p.a, p.b, alpha, p.dest);
  else
    ops::mul(d, p.a, p.b, p.dest);
  return bin::finish(p);
}

Tensor mul_plain(In a, In b, const Tensor& out, const Tensor* self) {
  return arith(Kind::Mul, a, b, Scalar(int64_t(1)), out, self);
}

// d(a + alpha b) = (g, alpha g); d(a - alpha b) = (g, -alpha g); d(ab) = (g b, g a)
// (conjugated for complex operands, torch's convention).
// The gradient g times the constant c: conj(c) for a complex c.
Tensor scaled(const Tensor& g, const Scalar& c) {
  if (c.is_complex()) {
    const complex128 z = c.to_complex();
    return mul(g, Scalar(complex128(z.real(), -z.imag())));
  }
  return c.to_double() == 1.0 ? g : mul(g, c);
}

const bin::GradSpec& add_grad(const Scalar& alpha) {
  static thread_local bin::GradSpec spec;
  spec = bin::GradSpec{
      "AddBackward0",
      false,
      false,
      false,
      [alpha](const bin::GradArgs& x) {
        return autograd::Grads{x.needs_a() ? x.g : Tensor(), x.needs_b() ? scaled(x.g, alpha) : Tensor()};
      },
      true};
  return spec;
}
const bin::GradSpec& sub_grad(const Scalar& alpha) {
  static thread_local bin::GradSpec spec;
  spec = bin::GradSpec{"SubBackward0",
                       false,
                       false,
                       false,
                       [alpha](const bin::GradArgs& x) {
                         return autograd::Grads{x.needs_a() ? x.g : Tensor(),
                                                x.needs_b() ? neg(scaled(x.g, alpha)) : Tensor()};
                       },
                       true};
  return spec;
}
const bin::GradSpec kMulGrad{"MulBackward0",
                             true,
                             true,
                             false,
                             [](const bin::GradArgs& x) {
                               return autograd::Grads{
                                   x.needs_a() ? mul(x.g, bin::conj_if_complex(x.b)) : Tensor(),
                                   x.needs_b() ? mul(x.g, bin::conj_if_complex(x.a)) : Tensor()};
                             },
                             true};

Tensor mul_impl(In a, In b, const Tensor& out, const Tensor* self) {
  return bin::run_recorded("mul", &kMulGrad, a, b, out, self, mul_plain);
}

Tensor arith_recorded(Kind kind, In a, In b, const Scalar& alpha, const Tensor& out, const Tensor* self) {
  const bin::GradSpec& spec = kind == Kind::Add ? add_grad(alpha) : sub_grad(alpha);
  return bin::run_recorded(kind == Kind::Add ? "add" : "sub", &spec, a, b, out, self,
                           [kind, &alpha](In x, In y, const Tensor& o, const Tensor* s) {
                             return arith(kind, x, y, alpha, o, s);
                           });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha, const Tensor& out) {
  return arith_recorded(Kind::Add, a, b, alpha, out, nullptr);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha, const Tensor& out) {
  return arith_recorded(Kind::Add, a, b, alpha, out, nullptr);
}
Tensor add(const Scalar& a, const Tensor& b, const Scalar& alpha, const Tensor& out) {
  return arith_recorded(Kind::Add, a, b, alpha, out, nullptr);
}
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  arith_recorded(Kind::Add, self, other, alpha, Tensor(), &self);
  return self;
}
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  arith_recorded(Kind::Add, self, other, alpha, Tensor(), &self);
  return self;
}

Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha, const Tensor& out) {
  return arith_recorded(Kind::Sub, a, b, alpha, out, nullptr);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha, const Tensor& out) {
  return arith_recorded(Kind::Sub, a, b, alpha, out, nullptr);
}
Tensor sub(const Scalar& a, const Tensor& b, const Scalar& alpha, const Tensor& out) {
  return arith_recorded(Kind::Sub, a, b, alpha, out, nullptr);
}
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  arith_recorded(Kind::Sub, self, other, alpha, Tensor(), &self);
  return self;
}
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  arith_recorded(Kind::Sub, self, other, alpha, Tensor(), &self);
  return self;
}

KILN_DEFINE_BINARY(mul, mul_impl)

}  // namespace kiln
