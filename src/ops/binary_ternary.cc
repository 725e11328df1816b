// Ternary elementwise ops: where, clamp (and clamp_min/clamp_max), lerp, addcmul.
// The kernels are the ops of ops/registry/binary.h.
#include "core/autograd_record.h"
#include "ops/binary_common.h"

namespace kiln {
namespace {

using bin::In;

// x converted to `dtype` and broadcast to `shape` (a value becomes a 0-dim
// tensor on `device`).
Tensor as_operand(In x, const Shape& shape, DType dtype, Device device) {
  Tensor t = x.t ? (x.t->dtype() == dtype ? *x.t : x.t->to(dtype)) : scalar_tensor(*x.s, dtype, device);
  return t.expand(shape);
}

// Shape of a tensor operand, or [] for a Python number.
const Tensor* shape_of(In x) { return x.t; }

[[noreturn]] void throw_fp8(const char* op, DType d) {
  throw TypeError(std::string("[") + op + "] arithmetic on float8 dtypes is not supported (got " + name(d) +
                  "); convert with .to() first");
}

// ---- where ------------------------------------------------------------------------

Tensor where_impl(const Tensor& cond, In a, In b, const Tensor& out) {
  if (cond.dtype() != DType::Bool && cond.dtype() != DType::UInt8)
    throw TypeError(std::string("[where] condition must be a bool (or uint8) tensor, got ") + name(cond.dtype()));
  const DType r = bin::result_type(a, b);
  const Shape shape = bin::broadcast_all({&cond, shape_of(a), shape_of(b)}, "where");
  Tensor final_out;
  const Tensor dest = bin::make_dest("where", shape, r, out, nullptr, {&cond, a.t, b.t}, &final_out);
  const Tensor c = cond.expand(shape);
  const Tensor x = as_operand(a, shape, r, dest.device()), y = as_operand(b, shape, r, dest.device());
  ops::where(common_device("where", {&dest, &c, &x, &y}), c, x, y, dest);
  return bin::finish(dest, final_out);
}

// ---- clamp ---------------------------------------------------------------------------

void check_clamp_dtype(DType r, DType x) {
  if (is_fp8(x)) throw_fp8("clamp", x);
  if (r == DType::Bool || is_complex(r))
    throw TypeError(std::string("[clamp] not supported for dtype ") + name(r));
}

// A clamp bound the kernel reads as one value in the compute dtype r (absent: none).
ops::Operand bound(const std::optional<Scalar>& b, DType r) {
  ops::Operand o;
  o.dtype = r;
  if (b) {
    o.v = *b;
    o.is_value = true;
  }
  return o;
}
// A tensor clamp bound converted to r and expanded to shape (absent: none).
ops::Operand bound(const Tensor* b, const Shape& shape, DType r) {
  ops::Operand o;
  o.dtype = r;
  if (b) o.t = as_operand(*b, shape, r, b->device());
  return o;
}

// `kernel`: the op of the public function (clamp, clamp_min or clamp_max).
Tensor clamp_scalar(const Op<ops::Clamp>& kernel, const Tensor& x, const std::optional<Scalar>& lo,
                    const std::optional<Scalar>& hi, const Tensor& out, const Tensor* self) {
  if (!lo && !hi) throw ValueError("[clamp] at least one of 'min' or 'max' must not be None");
  ResultType rt;
  rt.add(x.dtype(), x.dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim);
  if (lo) rt.add(lo->promotion_dtype(), Priority::Scalar);
  if (hi) rt.add(hi->promotion_dtype(), Priority::Scalar);
  const DType r = rt.get();
  check_clamp_dtype(r, x.dtype());
  bin::Plan p;
  p.shape = x.sizes();
  p.dest = bin::make_dest("clamp", p.shape, r, out, self, {&x}, &p.final_out, &p.device);
  p.a = bin::make_arg(x, p.shape, r);
  kernel(bin::device("clamp", p), p.a, bound(lo, r), bound(hi, r), p.dest);
  return bin::finish(p);
}

Tensor clamp_tensor(const Op<ops::Clamp>& kernel, const Tensor& x, const Tensor& lo, const Tensor& hi,
                    const Tensor& out, const Tensor* self) {
  const Tensor* tl = lo.defined() ? &lo : nullptr;
  const Tensor* th = hi.defined() ? &hi : nullptr;
  if (!tl && !th) throw ValueError("[clamp] at least one of 'min' or 'max' must not be None");
  ResultType rt;
  for (const Tensor* t : {&x, tl, th})
    if (t) rt.add(t->dtype(), t->dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim);
  const DType r = rt.get();
  check_clamp_dtype(r, x.dtype());
  const Shape shape = bin::broadcast_all({&x, tl, th}, "clamp");
  Tensor final_out;
  const Tensor dest = bin::make_dest("clamp", shape, r, out, self, {&x, tl, th}, &final_out);
  ops::Operand xe;
  xe.t = as_operand(x, shape, r, dest.device());
  xe.dtype = r;
  const ops::Operand l = bound(tl, shape, r), h = bound(th, shape, r);
  kernel(common_device("clamp", {&dest, &xe.t, &l.t, &h.t}), xe, l, h, dest);
  return bin::finish(dest, final_out);
}

// ---- lerp ------------------------------------------------------------------------------

void check_lerp(const Tensor& start, const Tensor& end, const Tensor* weight) {
  if (end.dtype() != start.dtype() || (weight && weight->dtype() != start.dtype()))
    throw TypeError(std::string("[lerp] expected start, end") + (weight ? " and weight" : "") +
                    " to share one dtype, got " + name(start.dtype()) + ", " + name(end.dtype()) +
                    (weight ? std::string(", ") + name(weight->dtype()) : std::string()));
  if (is_fp8(start.dtype())) throw_fp8("lerp", start.dtype());
  if (!is_floating(start.dtype()) && !is_complex(start.dtype()))
    throw TypeError(std::string("[lerp] expected a floating point or complex dtype, got ") + name(start.dtype()));
}

Tensor lerp_impl(const Tensor& start, const Tensor& end, const Scalar* ws, const Tensor* wt,
                 const Tensor& out, const Tensor* self) {
  check_lerp(start, end, wt);
  const DType r = start.dtype();
  const Shape shape = bin::broadcast_all({&start, &end, wt}, "lerp");
  Tensor final_out;
  const Tensor dest = bin::make_dest("lerp", shape, r, out, self, {&start, &end, wt}, &final_out);
  const Tensor s = start.expand(shape), e = end.expand(shape);
  ops::Operand w;
  w.dtype = r;
  if (ws) {
    w.v = *ws;
    w.is_value = true;
  } else {
    w.t = wt->expand(shape);
  }
  ops::lerp(common_device("lerp", {&dest, &s, &e, &w.t}), s, e, w, dest);
  return bin::finish(dest, final_out);
}

// ---- addcmul --------------------------------------------------------------------------

Tensor addcmul_impl(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
                    const Tensor& out, const Tensor* self) {
  ResultType rt;
  for (const Tensor* t : {&input, &t1, &t2}) {
    if (is_fp8(t->dtype())) throw_fp8("addcmul", t->dtype());
    rt.add(t->dtype(), t->dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim);
  }
  const DType r = rt.get();
  if (r == DType::Bool) throw TypeError("[addcmul] not supported for dtype bool");
  if (is_integral(r, false) && !(value.is_integral() || value.is_bool()))
    throw TypeError(std::string("[addcmul] for integral input tensors (") + name(r) +
                    "), argument value must not be a floating point number");
  if (value.is_complex() && !is_complex(r))
    throw TypeError("[addcmul] value must not be complex for non-complex tensors");
  const Shape shape = bin::broadcast_all({&input, &t1, &t2}, "addcmul");
  Tensor final_out;
  const Tensor dest = bin::make_dest("addcmul", shape, r, out, self, {&input, &t1, &t2}, &final_out);
  const Device d = dest.device();
  const Tensor a = as_operand(input, shape, r, d), b = as_operand(t1, shape, r, d), c = as_operand(t2, shape, r, d);
  ops::addcmul(common_device("addcmul", {&dest, &a, &b, &c}), a, b, c, value, dest);
  return bin::finish(dest, final_out);
}

// ---- derivatives (torch's formulas) ----------------------------------------------

using autograd::FnNode;
using autograd::Grads;
using autograd::Record;

const Tensor kNone;
const Tensor& or_none(In x) { return x.t ? *x.t : kNone; }

// An input the formula reads: a copy when an in-place op is about to overwrite
// it (torch saves the original self alike).
Tensor to_save(const Tensor& t, const Tensor* inplace_self) {
  if (inplace_self && t.defined() && t.storage() == inplace_self->storage()) return t.detach().clone();
  return t;
}

[[noreturn]] void throw_complex(const char* op) {
  throw NotImplementedError(std::string("[") + op + "] complex gradients are not implemented in kiln yet");
}

// where: the gradient goes to the operand selected (cond has none).
Tensor where_rec(const Tensor& cond, In a, In b, const Tensor& out) {
  Record rec("where", {&or_none(a), &or_none(b)});
  if (!rec) {
    autograd::wrote(out);
    return where_impl(cond, a, b, out);
  }
  rec.no_out(out);
  Tensor r = where_impl(cond, a, b, out);
  rec.finish("WhereBackward0", {&r}, {cond}, [](FnNode& n, Grads& g) {
    const Tensor c = n.saved(0);
    return Grads{n.needs(0) ? where(c, g[0], Scalar(0.0)) : Tensor(),
                 n.needs(1) ? where(c, Scalar(0.0), g[0]) : Tensor()};
  });
  return r;
}

// clamp with scalar bounds: the gradient passes where lo <= x <= hi (zero for
// NaN x), as torch.
Tensor clamp_scalar_rec(const Op<ops::Clamp>& kernel, const Tensor& x, const std::optional<Scalar>& lo,
                        const std::optional<Scalar>& hi, const Tensor& out,
                        const Tensor* inplace_self = nullptr) {
  Record rec("clamp", {&x});
  if (!rec) {
    autograd::wrote(out);
    return clamp_scalar(kernel, x, lo, hi, out, nullptr);
  }
  rec.no_out(out);
  Tensor r = clamp_scalar(kernel, x, lo, hi, out, nullptr);
  rec.finish(lo && hi ? "ClampBackward1"
             : lo     ? "ClampMinBackward0"
                      : "ClampMaxBackward0",
             {&r}, {to_save(x, inplace_self)}, [lo, hi](FnNode& n, Grads& g) {
               const Tensor xs = n.saved(0);
               Tensor pass;
               if (lo) pass = ge(xs, *lo);
               if (hi) pass = pass.defined() ? logical_and(pass, le(xs, *hi)) : le(xs, *hi);
               return Grads{where(pass, g[0], Scalar(0.0))};
             });
  return r;
}

// clamp with tensor bounds: x as above; a bound gets the gradient where it is
// the result (lo where x < lo < hi; hi where x > hi or hi < lo), as torch.
Tensor clamp_tensor_rec(const Op<ops::Clamp>& kernel, const Tensor& x, const Tensor& lo, const Tensor& hi,
                        const Tensor& out, const Tensor* inplace_self = nullptr) {
  Record rec("clamp", {&x, &lo, &hi});
  if (!rec) {
    autograd::wrote(out);
    return clamp_tensor(kernel, x, lo, hi, out, nullptr);
  }
  rec.no_out(out);
  Tensor r = clamp_tensor(kernel, x, lo, hi, out, nullptr);
  const bool has_lo = lo.defined(), has_hi = hi.defined();
  rec.finish(has_lo && has_hi ? "ClampBackward0"
             : has_lo         ? "ClampMinBackward1"
                              : "ClampMaxBackward1",
             {&r}, {to_save(x, inplace_self), lo, hi}, [has_lo, has_hi](FnNode& n, Grads& g) {
               const Tensor xs = n.saved(0), l = has_lo ? n.saved(1) : Tensor(),
                            h = has_hi ? n.saved(2) : Tensor();
               Grads out(3);
               if (n.needs(0)) {
                 Tensor pass;
                 if (has_lo) pass = ge(xs, l);
                 if (has_hi) pass = pass.defined() ? logical_and(pass, le(xs, h)) : le(xs, h);
                 out[0] = where(pass, g[0], Scalar(0.0));
               }
               if (has_lo && n.needs(1)) {
                 Tensor m = lt(xs, l);
                 if (has_hi) m = logical_and(m, lt(l, h));
                 out[1] = where(m, g[0], Scalar(0.0));
               }
               if (has_hi && n.needs(2)) {
                 Tensor m = gt(xs, h);
                 if (has_lo) m = logical_or(m, lt(h, l));
                 out[2] = where(m, g[0], Scalar(0.0));
               }
               return out;
             });
  return r;
}

// lerp = start + w (end - start): (g (1 - w), g w, g (end - start)).
Tensor lerp_rec(const Tensor& start, const Tensor& end, const Scalar* ws, const Tensor* wt, const Tensor& out,
                const Tensor* inplace_self = nullptr) {
  Record rec("lerp", {&start, &end, wt ? wt : &kNone});
  if (!rec) {
    autograd::wrote(out);
    return lerp_impl(start, end, ws, wt, out, nullptr);
  }
  rec.no_out(out);
  Tensor r = lerp_impl(start, end, ws, wt, out, nullptr);
  if (is_complex(r.dtype()) || (ws && ws->is_complex())) throw_complex("lerp");
  if (ws) {
    const double w = ws->to_double();
    rec.finish("LerpBackward0", {&r}, {}, [w](FnNode& n, Grads& g) {
      return Grads{n.needs(0) ? mul(g[0], Scalar(1.0 - w)) : Tensor(),
                   n.needs(1) ? mul(g[0], Scalar(w)) : Tensor(), Tensor()};
    });
  } else {
    const bool need_ends = wt->requires_grad();
    rec.finish("LerpBackward1", {&r},
               {*wt, need_ends ? to_save(start, inplace_self) : Tensor(),
                need_ends ? to_save(end, inplace_self) : Tensor()},
               [](FnNode& n, Grads& g) {
                 const Tensor w = n.saved(0);
                 return Grads{n.needs(0) ? mul(g[0], sub(Scalar(1.0), w)) : Tensor(),
                              n.needs(1) ? mul(g[0], w) : Tensor(),
                              n.needs(2) ? mul(g[0], sub(n.saved(2), n.saved(1))) : Tensor()};
               });
  }
  return r;
}

// addcmul = input + value t1 t2: (g, g value t2, g value t1).
Tensor addcmul_rec(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
                   const Tensor& out, const Tensor* inplace_self = nullptr) {
  Record rec("addcmul", {&input, &t1, &t2});
  if (!rec) {
    autograd::wrote(out);
    return addcmul_impl(input, t1, t2, value, out, nullptr);
  }
  rec.no_out(out);
  Tensor r = addcmul_impl(input, t1, t2, value, out, nullptr);
  if (is_complex(r.dtype())) throw_complex("addcmul");
  rec.finish("AddcmulBackward0", {&r},
             {t2.requires_grad() ? to_save(t1, inplace_self) : Tensor(),
              t1.requires_grad() ? to_save(t2, inplace_self) : Tensor()},
             [value](FnNode& n, Grads& g) {
               return Grads{n.needs(0) ? g[0] : Tensor(),
                            n.needs(1) ? mul(mul(g[0], n.saved(1)), value) : Tensor(),
                            n.needs(2) ? mul(mul(g[0], n.saved(0)), value) : Tensor()};
             });
  return r;
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  return where_rec(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, const Tensor& out) {
  return where_rec(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, const Tensor& out) {
  return where_rec(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b, const Tensor& out) {
  return where_rec(cond, a, b, out);
}

Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
             const Tensor& out) {
  return clamp_scalar_rec(ops::clamp, x, min, max, out);
}
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, const Tensor& out) {
  return clamp_tensor_rec(ops::clamp, x, min, max, out);
}
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  if (autograd::inplace_needs_grad("clamp_", self, {}))
    return autograd::rebase_inplace(self, clamp_scalar_rec(ops::clamp, self, min, max, Tensor(), &self));
  clamp_scalar(ops::clamp, self, min, max, Tensor(), &self);
  return self;
}
const Tensor& clamp_(const Tensor& self, const Tensor& min, const Tensor& max) {
  if (autograd::inplace_needs_grad("clamp_", self, {&min, &max}))
    return autograd::rebase_inplace(self, clamp_tensor_rec(ops::clamp, self, min, max, Tensor(), &self));
  clamp_tensor(ops::clamp, self, min, max, Tensor(), &self);
  return self;
}
Tensor clamp_min(const Tensor& x, const Scalar& min, const Tensor& out) {
  return clamp_scalar_rec(ops::clamp_min, x, min, std::nullopt, out);
}
Tensor clamp_min(const Tensor& x, const Tensor& min, const Tensor& out) {
  return clamp_tensor_rec(ops::clamp_min, x, min, Tensor(), out);
}
Tensor clamp_max(const Tensor& x, const Scalar& max, const Tensor& out) {
  return clamp_scalar_rec(ops::clamp_max, x, std::nullopt, max, out);
}
Tensor clamp_max(const Tensor& x, const Tensor& max, const Tensor& out) {
  return clamp_tensor_rec(ops::clamp_max, x, Tensor(), max, out);
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight, const Tensor& out) {
  return lerp_rec(start, end, &weight, nullptr, out);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& out) {
  return lerp_rec(start, end, nullptr, &weight, out);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  if (autograd::inplace_needs_grad("lerp_", self, {&end}))
    return autograd::rebase_inplace(self, lerp_rec(self, end, &weight, nullptr, Tensor(), &self));
  lerp_impl(self, end, &weight, nullptr, Tensor(), &self);
  return self;
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  if (autograd::inplace_needs_grad("lerp_", self, {&end, &weight}))
    return autograd::rebase_inplace(self, lerp_rec(self, end, nullptr, &weight, Tensor(), &self));
  lerp_impl(self, end, nullptr, &weight, Tensor(), &self);
  return self;
}

Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
               const Tensor& out) {
  return addcmul_rec(input, t1, t2, value, out);
}
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  if (autograd::inplace_needs_grad("addcmul_", self, {&t1, &t2}))
    return autograd::rebase_inplace(self, addcmul_rec(self, t1, t2, value, Tensor(), &self));
  addcmul_impl(self, t1, t2, value, Tensor(), &self);
  return self;
}

}  // namespace kiln
