#include "ops/binary_grad.h"

namespace kiln::bin {
namespace {

const Tensor kUndefined;

// A Python-number operand as the 0-dim tensor a formula can compute with.
Tensor as_tensor(In x, Device d) {
  if (x.t) return *x.t;
  return scalar_tensor(*x.s, x.s->promotion_dtype(), d);
}

}  // namespace

Tensor run_recorded(const char* op, const GradSpec* spec, In a, In b, const Tensor& out, const Tensor* self,
                    const Impl& impl) {
  if (self) {
    if (autograd::inplace_needs_grad(op, *self, {b.t ? b.t : &kUndefined})) {
      const Tensor src = autograd::inplace_source(*self);
      Tensor r = run_recorded(op, spec, src, b, Tensor(), nullptr, impl);
      return autograd::rebase_inplace(*self, r);
    }
    return impl(a, b, out, self);
  }
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
  Tensor ca = a.t ? Tensor() : as_tensor(a, d), cb = b.t ? Tensor() : as_tensor(b, d);
  std::vector<Tensor> saved{spec->save_a && a.t ? *a.t : Tensor(), spec->save_b && b.t ? *b.t : Tensor(),
                            spec->save_result ? r : Tensor()};
  rec.finish(spec->node, {&r}, std::move(saved), [f = spec->formula, ca, cb](autograd::FnNode& n, autograd::Grads& g) {
    GradArgs args{n, g[0], ca.defined() ? ca : n.saved(0), cb.defined() ? cb : n.saved(1), n.saved(2)};
    return f(args);
  });
  return r;
}

}  // namespace kiln::bin
