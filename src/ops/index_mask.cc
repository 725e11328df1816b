// masked_fill, masked_select, nonzero: the front-ends check the mask and
// broadcast it; the kernels are the ops of ops/registry/index.h.
#include "kiln/index.h"
#include "ops/elementwise.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_mask(const Tensor& mask, const char* op) {
  if (!mask.defined()) throw ValueError(std::string("[") + op + "] mask is undefined");
  if (mask.dtype() != DType::Bool)
    throw TypeError(std::string("[") + op + "] expected a bool mask, got " + name(mask.dtype()));
}

}  // namespace

Tensor& masked_fill_(Tensor& x, const Tensor& mask_in, const Scalar& value) {
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

Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw ValueError("[masked_fill_] only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s)");
  return masked_fill_(x, mask, value.item());
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_mask(mask, "masked_fill");
  Tensor out = x.expand(broadcast_shapes(x.shape(), mask.shape(), "masked_fill")).clone();
  return masked_fill_(out, mask, value);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  if (value.dim() != 0)
    throw ValueError("[masked_fill] only supports a 0-dimensional value tensor, but got tensor with " +
                     std::to_string(value.dim()) + " dimension(s)");
  return masked_fill(x, mask, value.item());
}

Tensor masked_select(const Tensor& x, const Tensor& mask_in) {
  check_mask(mask_in, "masked_select");
  const Shape shape = broadcast_shapes(x.shape(), mask_in.shape(), "masked_select");
  const Tensor xe = x.expand(shape), mask = mask_in.expand(shape);
  const int64_t n = shape_numel(shape, "masked_select");
  if (n == 0) return empty({0}, x.dtype(), x.device());
  return ops::masked_select(common_device("masked_select", {&xe, &mask}), xe, mask);
}

Tensor nonzero(const Tensor& x) {
  const int64_t n = x.numel();
  const int nd = x.dim();
  if (n == 0) return empty({0, nd}, DType::Int64, x.device());
  return ops::nonzero(common_device("nonzero", {&x}), x);
}

}  // namespace kiln
