// max, min, amax, amin, argmax, argmin front-ends: dtype and empty-dim
// checks, dims -> mask, output allocation, then the op (ops/registry/reduce.h).
#include <string>

#include "ops/reduce_dims.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

void check_ordered(const Tensor& x, const char* op) {
  reject_fp8(x, op);
  if (is_complex(x.dtype()))
    throw TypeError(std::string("[") + op + "] does not support complex input (dtype " + name(x.dtype()) + ")");
}

template <bool kMax>
Tensor whole(const char* op, const Tensor& x) {
  check_ordered(x, op);
  const std::vector<bool> mask(size_t(x.dim()), true);
  require_nonempty(x, mask, true, op);
  Tensor out = empty({}, x.dtype(), x.device());
  (kMax ? ops::max : ops::min)(common_device(op, {&x, &out}), x, mask, out, Tensor());
  return out;
}

template <bool kMax>
ValuesIndices along(const char* op, const Tensor& x, int dim, bool keepdim) {
  check_ordered(x, op);
  const std::vector<bool> mask = reduce_mask(std::vector<int>{dim}, x.dim(), op);
  require_nonempty(x, mask, false, op);
  const Shape shape = reduced_shape(x.shape(), mask, keepdim);
  ValuesIndices r{empty(shape, x.dtype(), x.device()), empty(shape, DType::Int64, x.device())};
  (kMax ? ops::max : ops::min)(common_device(op, {&x, &r.values, &r.indices}), x, mask, r.values, r.indices);
  return r;
}

template <bool kMax>
Tensor a_extremum(const char* op, const Tensor& x, const DimList& dim, bool keepdim) {
  check_ordered(x, op);
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  require_nonempty(x, mask, false, op);
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), x.dtype(), x.device());
  (kMax ? ops::amax : ops::amin)(common_device(op, {&x, &out}), x, mask, out, Tensor());
  return out;
}

template <bool kMax>
Tensor arg_extremum(const char* op, const Tensor& x, std::optional<int> dim, bool keepdim) {
  check_ordered(x, op);
  std::vector<bool> mask;
  if (dim) {
    mask = reduce_mask(std::vector<int>{*dim}, x.dim(), op);
    require_nonempty(x, mask, false, op);
  } else {
    mask.assign(size_t(x.dim()), true);
    require_nonempty(x, mask, true, op);
  }
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), DType::Int64, x.device());
  (kMax ? ops::argmax : ops::argmin)(common_device(op, {&x, &out}), x, mask, Tensor(), out);
  return out;
}

}  // namespace

Tensor max(const Tensor& x) { return whole<true>("max", x); }
Tensor min(const Tensor& x) { return whole<false>("min", x); }
ValuesIndices max(const Tensor& x, int dim, bool keepdim) { return along<true>("max", x, dim, keepdim); }
ValuesIndices min(const Tensor& x, int dim, bool keepdim) { return along<false>("min", x, dim, keepdim); }
Tensor amax(const Tensor& x, const DimList& dim, bool keepdim) { return a_extremum<true>("amax", x, dim, keepdim); }
Tensor amin(const Tensor& x, const DimList& dim, bool keepdim) { return a_extremum<false>("amin", x, dim, keepdim); }
Tensor argmax(const Tensor& x, std::optional<int> dim, bool keepdim) {
  return arg_extremum<true>("argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int> dim, bool keepdim) {
  return arg_extremum<false>("argmin", x, dim, keepdim);
}

}  // namespace kiln
