// masked_fill, masked_select, nonzero: the front-ends check the mask and
// broadcast it; the kernels are the ops of ops/registry/index.h.
#include "core/autograd_record.h"
#include "kiln/index.h"
#include "kiln/reduce.h"
#include "ops/elementwise.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_mask(const Tensor& mask, const char* op) {
  if (!mask.defined()) throw ValueError(std::string("[") + op + "] mask is undefined");
  if (mask.dtype() != DType::Bool)
    throw TypeError(std::string("[") + op + "] expected a bool mask, got " + name(mask.dtype()));
}

Tensor& masked_fill_impl(Tensor& x, const Tensor& mask_in, const Scalar& value) {
  assert_no_internal_overlap(x, "masked_fill_");
  check_mask(mask_in, "masked_fill_");
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[masked_fill_] cannot fill ") + name(x.dtype()) + " with a complex value");
  Tensor mask;
  try {
    mask = mask_in.expand(x.sizes());
  } catch (const ValueError&) {
    throw ValueError("[masked_fill_] mask of shape " + mask_in.shape_str() + " cannot be broadcast to self " +
                     x.shape_str());
  }
  if (x.numel() == 0) return x;
  if (mask.storage() == x.storage()) mask = mask.contiguous().clone();
  ops::masked_fill(common_device("masked_fill_", {&x, &mask}), x, mask, value);
  return x;
}

Tensor masked_fill_plain(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_mask(mask, "masked_fill");
  Tensor out = x.expand(broadcast_shapes(x.shape(), mask.shape(), "masked_fill")).clone();
  return masked_fill_impl(out, mask, value);
}

}  // namespace

Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Scalar& value) {
  if (autograd::inplace_needs_grad("masked_fill_", x, {})) {
    autograd::rebase_inplace(x, masked_fill(x, mask, value));
    return x;
  }
  return masked_fill_impl(x, mask, value);
}

Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw ValueError("[masked_fill_] only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s)");
  if (autograd::inplace_needs_grad("masked_fill_", x, {&value})) {
    autograd::rebase_inplace(x, masked_fill(x, mask, value));
    return x;
  }
  return masked_fill_impl(x, mask, value.item());
}

// x's gradient is g with the filled places zeroed; a tensor value's is the sum
// of g over them.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  autograd::Record rec("masked_fill", {&x, &mask});
  Tensor out = masked_fill_plain(x, mask, value);
  if (rec)
    rec.finish("MaskedFillBackward0", {&out}, {mask}, [](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{masked_fill(g[0], n.saved(0), Scalar(0.0)), Tensor()};
    });
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw ValueError("[masked_fill] only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s)");
  autograd::Record rec("masked_fill", {&x, &mask, &value});
  Tensor out = masked_fill_plain(x, mask, value.item());
  if (rec)
    rec.finish("MaskedFillBackward1", {&out}, {mask}, [](autograd::FnNode& n, autograd::Grads& g) {
      const Tensor mask = n.saved(0);
      autograd::Grads r(3);
      if (n.needs(0)) r[0] = masked_fill(g[0], mask, Scalar(0.0));
      if (n.needs(2)) r[2] = sum(masked_select(g[0], mask));
      return r;
    });
  return out;
}

// x's gradient: g put back at the selected places of the broadcast shape (the
// engine sums it down to x's shape).
Tensor masked_select(const Tensor& x, const Tensor& mask_in) {
  autograd::Record rec("masked_select", {&x, &mask_in});
  check_mask(mask_in, "masked_select");
  const Shape shape = broadcast_shapes(x.shape(), mask_in.shape(), "masked_select");
  const Tensor xe = x.expand(shape), mask = mask_in.expand(shape);
  const int64_t n = shape_numel(shape, "masked_select");
  Tensor out = n == 0 ? empty({0}, x.dtype(), x.device())
                      : ops::masked_select(common_device("masked_select", {&xe, &mask}), xe, mask);
  if (rec)
    rec.finish("MaskedSelectBackward0", {&out}, {mask_in}, [shape](autograd::FnNode& n, autograd::Grads& g) {
      const Tensor m = n.saved(0).expand(shape);
      return autograd::Grads{index_put(zeros(shape, g[0].dtype(), g[0].device()), {TensorIndex(m)}, g[0]),
                             Tensor()};
    });
  return out;
}

Tensor nonzero(const Tensor& x) {
  const int64_t n = x.numel();
  const int nd = x.dim();
  if (n == 0) return empty({0, nd}, DType::Int64, x.device());
  return ops::nonzero(common_device("nonzero", {&x}), x);
}

}  // namespace kiln
