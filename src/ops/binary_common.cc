// Shared front-end steps of the binary ops: promotion, broadcasting, operand
// preparation and the out= / in-place destination.
#include "ops/binary_common.h"

#include "core/autograd_record.h"
#include "core/dense_layout.h"

namespace kiln {

// ---- public promotion helpers ------------------------------------------------

DType result_type(const Tensor& a, const Tensor& b) { return bin::result_type(a, b); }
DType result_type(const Tensor& a, const Scalar& b) { return bin::result_type(a, b); }
DType result_type(const Scalar& a, const Tensor& b) { return bin::result_type(a, b); }
DType result_type(const Scalar& a, const Scalar& b) { return bin::result_type(a, b); }

// torch.can_cast: no complex -> real, no floating -> integral, no non-bool -> bool.
bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

namespace bin {

namespace {
// Inline compare of short int64 lists (std::equal calls memcmp, which costs more
// than the comparison itself for a few dims).
bool same(std::span<const int64_t> a, std::span<const int64_t> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
}  // namespace

std::string In::desc() const {
  if (s) return std::string("Scalar ") + name(s->promotion_dtype());
  return "Tensor" + t->shape_str() + " " + name(t->dtype());
}

DType result_type(In a, In b) {
  ResultType rt;
  add_operand(rt, a);
  add_operand(rt, b);
  return rt.get();
}

void check_no_fp8(const char* op, In a, In b) {
  for (In x : {a, b}) {
    if (x.t && is_fp8(x.t->dtype()))
      throw TypeError(std::string("[") + op + "] arithmetic on float8 dtypes is not supported (got " +
                      a.desc() + " and " + b.desc() + "); convert with .to() first");
  }
}

void throw_unsupported(const char* op, DType d, In a, In b) {
  throw TypeError(std::string("[") + op + "] not supported for dtype " + name(d) + " (operands " +
                  a.desc() + " and " + b.desc() + ")");
}

Shape broadcast_all(std::initializer_list<const Tensor*> ts, const char* op) {
  Shape shape;
  bool first = true;
  for (const Tensor* t : ts) {
    if (t == nullptr) continue;
    if (first) {
      shape = t->sizes();
      first = false;
    } else if (!same(shape, t->shape())) {
      shape = broadcast_shapes(shape, t->shape(), op);
    }
  }
  return shape;
}

ops::Operand make_arg(In x, const Shape& shape, DType compute) {
  ops::Operand r;
  r.dtype = compute;
  if (x.s) {
    r.v = *x.s;
    r.is_value = true;
  } else if (x.t->dim() == 0) {
    // Scalar holds a uint64 above INT64_MAX only as an integer, so convert such a
    // value with the tensor cast rules first when the compute dtype differs.
    const bool lossy = x.t->dtype() == DType::UInt64 && compute != DType::UInt64;
    r.v = (lossy ? x.t->to(compute) : *x.t).item();
    r.is_value = true;
  } else {
    r.t = x.t->dtype() == compute ? *x.t : x.t->to(compute);
    if (!same(shape, r.t.shape()))
      r.t = r.t.expand(shape);
  }
  return r;
}

namespace {
// True when `in` shares memory with `dest` other than as the very same view
// (elementwise ops may read and write one element in place, nothing else).
bool partial_overlap(const Tensor& dest, const Tensor& in) {
  if (!in.defined() || in.storage() != dest.storage()) return false;
  if (in.data_ptr() == dest.data_ptr() && in.dtype() == dest.dtype() && same(in.shape(), dest.shape()) &&
      same(in.strides(), dest.strides()))
    return false;
  return true;  // conservative: same storage, different view
}
}  // namespace

Device operands_device(const char* op, std::initializer_list<const Tensor*> inputs, const Tensor* target) {
  const Tensor* first = target;
  for (const Tensor* in : inputs) {
    if (!in || !in->defined()) continue;
    if (!first)
      first = in;
    else if (!same_device(first->device(), in->device()))
      throw_device_mismatch(op, first->device(), in->device());
  }
  return first ? first->device() : Device{};
}

Tensor make_dest(const char* op, const Shape& shape, DType result, const Tensor& out, const Tensor* self,
                 std::initializer_list<const Tensor*> inputs, Tensor* final_out, Device* device) {
  const Tensor* target = self ? self : (out.defined() ? &out : nullptr);
  // A front-end that records its derivative runs with grad mode off; one that
  // does not must not drop a gradient (a 0-dim operand is read as a value,
  // which the kernel-level check in Op::operator() does not see). Bool and
  // integer results carry none.
  if (autograd::grad_recording() && autograd::detail::differentiable_dtype(result))
    for (const Tensor* in : inputs)
      if (in && in->defined() && in->requires_grad()) autograd::detail::throw_no_derivative(op);
  const Device dev = operands_device(op, inputs, target);
  if (device) *device = dev;
  if (!target) return empty_following(shape, result, dev, inputs);  // the inputs' layout
  if (!same(shape, target->shape())) {
    if (self)
      throw ValueError(std::string("[") + op + "] output with shape " + self->shape_str() +
                       " doesn't match the broadcast shape " + shape_to_string(shape));
    throw ValueError(std::string("[") + op + "] out has shape " + out.shape_str() + ", expected " +
                     shape_to_string(shape));
  }
  assert_no_internal_overlap(*target, op);
  if (!can_cast(result, target->dtype()))
    throw TypeError(std::string("[") + op + "] result type " + name(result) +
                    " can't be cast to the desired output type " + name(target->dtype()));
  bool temp = target->dtype() != result;
  for (const Tensor* in : inputs)
    if (in && partial_overlap(*target, *in)) temp = true;
  if (!temp) return *target;
  *final_out = *target;
  return empty(shape, result, dev);
}

Plan make_plan(const char* op, In a, In b, DType compute, DType result, const Tensor& out,
               const Tensor* self) {
  Plan p;
  const Tensor* ta = a.is_value() ? nullptr : a.t;
  const Tensor* tb = b.is_value() ? nullptr : b.t;
  p.shape = broadcast_all({ta, tb}, op);
  p.dest = make_dest(op, p.shape, result, out, self, {a.t, b.t}, &p.final_out, &p.device);
  p.a = make_arg(a, p.shape, compute);
  p.b = make_arg(b, p.shape, compute);
  return p;
}

Tensor finish(const Tensor& dest, const Tensor& final_out) {
  if (!final_out.defined()) return dest;
  Tensor r = final_out;
  r.copy_(dest);
  return r;
}

Tensor finish(Plan& p) { return finish(p.dest, p.final_out); }

}  // namespace bin
}  // namespace kiln
