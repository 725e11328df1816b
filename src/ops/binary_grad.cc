#include "ops/binary_grad.h"

#include "kiln/complex.h"
#include "kiln/unary.h"

namespace kiln::bin {
namespace {

const Tensor kUndefined;

// A Python-number operand as the 0-dim tensor a formula can compute with, in
// the result's dtype (a Python float is a double: float32 would round 0.1).
Tensor as_tensor(In x, DType result, Device d) {
  if (x.t) return *x.t;
  return scalar_tensor(*x.s, autograd::detail::differentiable_dtype(result) ? result : x.s->promotion_dtype(),
                       d);
}

}  // namespace

Tensor conj_if_complex(const Tensor& t) { return is_complex(t.dtype()) ? conj(t) : t; }

// d(a^b)/da = b a^(b-1), zero where b == 0 (so 0^0 gives 0, not 0 * inf);
// d(a^b)/db = a^b log(a), zero where a == 0 and b >= 0 (the limit from a > 0).
autograd::Grads pow_grads(const bin::GradArgs& x, const Tensor& a, const Tensor& b) {
  Tensor ga, gb;
  if (x.needs_a()) ga = where(eq(b, Scalar(0.0)), Scalar(0.0), mul(x.g, mul(b, pow(a, sub(b, Scalar(1.0))))));
  if (x.needs_b())
    gb = mul(x.g,
             where(logical_and(eq(a, Scalar(0.0)), ge(b, Scalar(0.0))), Scalar(0.0), mul(x.result, log(a))));
  return {ga, gb};
}

namespace {

// An operand the formula reads: for an in-place op, an operand on self's
// storage is about to be overwritten, so the formula keeps a copy (torch saves
// the original self alike).
Tensor to_save(const Tensor& t, const Tensor* inplace_self) {
  if (inplace_self && t.storage() == inplace_self->storage()) return t.detach().clone();
  return t;
}

Tensor record(const char* op, const GradSpec* spec, In a, In b, const Tensor& out, const Tensor* self,
              const Impl& impl, const Tensor* inplace_self) {
  autograd::Record rec(op, {a.t ? a.t : &kUndefined, b.t ? b.t : &kUndefined});
  if (!rec) {
    autograd::wrote(out);
    return impl(a, b, out, self);
  }
  rec.no_out(out);
  if (!spec) autograd::detail::throw_no_derivative(op);
  Tensor r = impl(a, b, out, self);
  if (is_complex(r.dtype()) && !spec->complex_ok)
    throw NotImplementedError(std::string("[") + op + "] complex gradients are not implemented in kiln yet");
  const Device d = r.device();
  // Operands that are Python numbers are constants: captured, not saved.
  Tensor ca = a.t ? Tensor() : as_tensor(a, r.dtype(), d), cb = b.t ? Tensor() : as_tensor(b, r.dtype(), d);
  std::vector<Tensor> saved{spec->save_a && a.t ? to_save(*a.t, inplace_self) : Tensor(),
                            spec->save_b && b.t ? to_save(*b.t, inplace_self) : Tensor(),
                            spec->save_result ? r : Tensor()};
  rec.finish(spec->node, {&r}, std::move(saved), [f = spec->formula, ca, cb](autograd::FnNode& n, autograd::Grads& g) {
    GradArgs args{n, g[0], ca.defined() ? ca : n.saved(0), cb.defined() ? cb : n.saved(1), n.saved(2)};
    return f(args);
  });
  return r;
}

}  // namespace

Tensor run_recorded(const char* op, const GradSpec* spec, In a, In b, const Tensor& out, const Tensor* self,
                    const Impl& impl) {
  if (self) {
    if (autograd::inplace_needs_grad(op, *self, {b.t ? b.t : &kUndefined}))
      return autograd::rebase_inplace(*self, record(op, spec, a, b, Tensor(), nullptr, impl, self));
    return impl(a, b, out, self);
  }
  return record(op, spec, a, b, out, nullptr, impl, nullptr);
}

}  // namespace kiln::bin
