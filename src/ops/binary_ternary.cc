// Ternary elementwise ops: where, clamp (and clamp_min/clamp_max), lerp, addcmul.
// The kernels are the ops of ops/registry/binary.h.
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

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  return where_impl(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, const Tensor& out) {
  return where_impl(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, const Tensor& out) {
  return where_impl(cond, a, b, out);
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b, const Tensor& out) {
  return where_impl(cond, a, b, out);
}

Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
             const Tensor& out) {
  return clamp_scalar(ops::clamp, x, min, max, out, nullptr);
}
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, const Tensor& out) {
  return clamp_tensor(ops::clamp, x, min, max, out, nullptr);
}
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  clamp_scalar(ops::clamp, self, min, max, Tensor(), &self);
  return self;
}
const Tensor& clamp_(const Tensor& self, const Tensor& min, const Tensor& max) {
  clamp_tensor(ops::clamp, self, min, max, Tensor(), &self);
  return self;
}
Tensor clamp_min(const Tensor& x, const Scalar& min, const Tensor& out) {
  return clamp_scalar(ops::clamp_min, x, min, std::nullopt, out, nullptr);
}
Tensor clamp_min(const Tensor& x, const Tensor& min, const Tensor& out) {
  return clamp_tensor(ops::clamp_min, x, min, Tensor(), out, nullptr);
}
Tensor clamp_max(const Tensor& x, const Scalar& max, const Tensor& out) {
  return clamp_scalar(ops::clamp_max, x, std::nullopt, max, out, nullptr);
}
Tensor clamp_max(const Tensor& x, const Tensor& max, const Tensor& out) {
  return clamp_tensor(ops::clamp_max, x, Tensor(), max, out, nullptr);
}

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight, const Tensor& out) {
  return lerp_impl(start, end, &weight, nullptr, out, nullptr);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& out) {
  return lerp_impl(start, end, nullptr, &weight, out, nullptr);
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight) {
  lerp_impl(self, end, &weight, nullptr, Tensor(), &self);
  return self;
}
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  lerp_impl(self, end, nullptr, &weight, Tensor(), &self);
  return self;
}

Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
               const Tensor& out) {
  return addcmul_impl(input, t1, t2, value, out, nullptr);
}
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  addcmul_impl(self, t1, t2, value, Tensor(), &self);
  return self;
}

}  // namespace kiln
