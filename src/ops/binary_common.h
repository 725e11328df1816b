// Machinery shared by the binary op front-ends (src/ops/binary_*.cc): operands
// that are tensors or Python numbers, torch.result_type over them, the out= /
// in-place destination, and the operands the kernels of ops/registry/binary.h
// take (scalar and 0-dim operands stay one value in compute precision, as
// torch's cpu-scalar path does).
#pragma once

#include "kiln/binary.h"
#include "ops/elementwise.h"
#include "ops/registry/all.h"

namespace kiln::bin {

// One operand of a binary op: a tensor or a Python number.
struct In {
  const Tensor* t = nullptr;
  const Scalar* s = nullptr;
  In(const Tensor& x) : t(&x) {}
  In(const Scalar& x) : s(&x) {}
  // Read once and broadcast as a value: a Python number or a 0-dim tensor.
  bool is_value() const { return s != nullptr || t->dim() == 0; }
  DType dtype() const { return t ? t->dtype() : s->promotion_dtype(); }
  Priority priority() const {
    return t ? (t->dim() > 0 ? Priority::Dimensioned : Priority::ZeroDim) : Priority::Scalar;
  }
  std::string desc() const;  // "Tensor[2, 3] float32" or "Scalar int64", for messages
};

inline void add_operand(ResultType& rt, In x) { rt.add(x.dtype(), x.priority()); }
DType result_type(In a, In b);

// Throws TypeError "[op] ... float8 ..." when a tensor operand has an FP8 dtype.
void check_no_fp8(const char* op, In a, In b);
// Throws TypeError "[op] not supported for <dtype>" naming both operands.
[[noreturn]] void throw_unsupported(const char* op, DType d, In a, In b);

struct Plan {
  Device device;     // where every operand and dest live (checked)
  Shape shape;       // broadcast shape
  Tensor dest;       // what the kernel writes; dtype = the op's result dtype
  Tensor final_out;  // defined when dest must be copied into out/self afterwards
  ops::Operand a, b;
};

// Broadcasts, converts tensor operands to `compute`, and picks the destination:
// `self` (in-place; shape must equal the broadcast shape), `out`, or a new tensor
// of dtype `result`. With self/out the result must be castable (TypeError).
Plan make_plan(const char* op, In a, In b, DType compute, DType result, const Tensor& out,
               const Tensor* self);
// Prepares one operand for shape/compute dtype (used by the ternary ops too).
ops::Operand make_arg(In x, const Shape& shape, DType compute);
// The device of out/self and every defined input (null entries skipped): Error
// "[op] expected all tensors on the same device" when two differ; the CPU
// when there is no tensor at all.
Device operands_device(const char* op, std::initializer_list<const Tensor*> inputs, const Tensor* target);
// The destination for a result of `result` dtype and `shape`, on the operands'
// device (stored in *device when given); sets final_out when the kernel must
// write a temporary (dtype differs or an input partly overlaps).
Tensor make_dest(const char* op, const Shape& shape, DType result, const Tensor& out, const Tensor* self,
                 std::initializer_list<const Tensor*> inputs, Tensor* final_out, Device* device = nullptr);
// Copies dest into final_out when needed and returns the op's result.
Tensor finish(Plan& p);
Tensor finish(const Tensor& dest, const Tensor& final_out);

Shape broadcast_all(std::initializer_list<const Tensor*> ts, const char* op);

// The device the op runs on: that of the prepared tensors (value operands, which
// torch lets live anywhere, are not counted).
inline Device device(const char*, const Plan& p) { return p.device; }

}  // namespace kiln::bin

// Defines the five public overloads of a plain binary op in terms of
// impl(In a, In b, const Tensor& out, const Tensor* self).
#define KILN_DEFINE_BINARY(op, impl)                                                                  \
  Tensor op(const Tensor& a, const Tensor& b, const Tensor& out) { return impl(a, b, out, nullptr); } \
  Tensor op(const Tensor& a, const Scalar& b, const Tensor& out) { return impl(a, b, out, nullptr); } \
  Tensor op(const Scalar& a, const Tensor& b, const Tensor& out) { return impl(a, b, out, nullptr); } \
  const Tensor& op##_(const Tensor& self, const Tensor& other) {                                      \
    impl(self, other, Tensor(), &self);                                                               \
    return self;                                                                                      \
  }                                                                                                   \
  const Tensor& op##_(const Tensor& self, const Scalar& other) {                                      \
    impl(self, other, Tensor(), &self);                                                               \
    return self;                                                                                      \
  }
