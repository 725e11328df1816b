// searchsorted and bucketize front-ends: shape, dtype and sorter checks, then
// the op (ops/registry/sort.h).
#include <algorithm>
#include <string>

#include "kiln/reduce.h"
#include "kiln/sort.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

Tensor searchsorted(const Tensor& sorted_in, const Tensor& values_in, bool right, bool out_int32,
                    const Tensor& sorter) {
  const char* op = "searchsorted";
  if (sorted_in.dim() == 0)
    throw ValueError("[searchsorted] boundaries tensor should have positive dimension, but got 0 dimension");
  if (sorted_in.dim() > 1 &&
      (values_in.dim() != sorted_in.dim() ||
       !std::equal(sorted_in.shape().begin(), sorted_in.shape().end() - 1, values_in.shape().begin())))
    throw ValueError(
        "[searchsorted] boundaries tensor should be 1 dimension or the first N-1 dimensions of "
        "boundaries tensor and input value tensor must match, but we got boundaries tensor " +
        shape_str(sorted_in) + " and input value tensor " + shape_str(values_in));
  for (const Tensor* t : {&sorted_in, &values_in})
    if (is_complex(t->dtype()) || is_fp8(t->dtype()) || t->dtype() == DType::Bool)
      throw TypeError(std::string("[searchsorted] does not support ") + name(t->dtype()) + " tensors");
  if (sorter.defined()) {
    if (sorter.dtype() != DType::Int64)
      throw TypeError("[searchsorted] sorter must be an int64 tensor, got " +
                      std::string(name(sorter.dtype())));
    if (sorter.sizes() != sorted_in.sizes())
      throw ValueError(
          "[searchsorted] boundary and sorter must have the same size, but got boundary tensor " +
          shape_str(sorted_in) + " and sorter tensor " + shape_str(sorter));
    const int64_t m = sorted_in.size(-1);
    if (sorter.numel() > 0) {
      const Tensor lo = amin(sorter), hi = amax(sorter);
      if (lo.item<int64_t>() < 0 || hi.item<int64_t>() >= m)
        throw IndexError("[searchsorted] sorter index out of range");
    }
  }
  // Both sides compared in their common dtype.
  const DType common = promote_types(sorted_in.dtype(), values_in.dtype());
  const Tensor sorted = sorted_in.to(common), values = values_in.to(common);
  Tensor out = empty(values.sizes(), out_int32 ? DType::Int32 : DType::Int64, values.device());
  ops::searchsorted(common_device(op, {&sorted, &values, &out}), sorted, values, sorter, right, out);
  return out;
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right, bool out_int32) {
  if (boundaries.dim() != 1)
    throw ValueError("[bucketize] boundaries tensor must be 1 dimension, but got dim(" +
                     std::to_string(boundaries.dim()) + ")");
  return searchsorted(boundaries, x, right, out_int32);
}

}  // namespace kiln
