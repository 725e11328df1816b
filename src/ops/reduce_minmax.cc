// max, min, amax, amin, argmax, argmin front-ends: dtype and empty-dim
// checks, dims -> mask, output allocation, then the op (ops/registry/reduce.h).
#include <string>

#include "ops/reduce_dims.h"
#include "ops/reduce_grad.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

template <bool kMax>
Tensor whole(const char* op, const Tensor& x) {
  check_ordered(x, op);
  const std::vector<bool> mask(size_t(x.dim()), true);
  require_nonempty(x, mask, true, op);
  autograd::Record rec(op, {&x});
  Tensor out = empty({}, x.dtype(), x.device());
  (kMax ? ops::max : ops::min)(common_device(op, {&x, &out}), x, mask, out, Tensor());
  // Ties (NaN ties included) share the gradient evenly, as torch.
  if (rec)
    rec.finish(
        kMax ? "MaxBackward1" : "MinBackward1", {&out}, {x, out},
        [mask](autograd::FnNode& n, autograd::Grads& g) {
          return autograd::Grads{rgrad::evenly_distribute(g[0], n.saved(0), n.saved(1), mask, false, true)};
        });
  return out;
}

template <bool kMax>
ValuesIndices along(const char* op, const Tensor& x, int dim, bool keepdim) {
  check_ordered(x, op);
  const std::vector<bool> mask = reduce_mask(std::vector<int>{dim}, x.dim(), op);
  require_nonempty(x, mask, false, op);
  const Shape shape = reduced_shape(x.shape(), mask, keepdim);
  autograd::Record rec(op, {&x});
  ValuesIndices r{empty(shape, x.dtype(), x.device()), empty(shape, DType::Int64, x.device())};
  (kMax ? ops::max : ops::min)(common_device(op, {&x, &r.values, &r.indices}), x, mask, r.values, r.indices);
  if (rec) {
    // The whole gradient goes to the returned index.
    const int d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), op);
    rec.finish(kMax ? "MaxBackward0" : "MinBackward0", {&r.values, &r.indices}, {r.indices},
               [d, keepdim, sizes = x.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{rgrad::select_backward(g[0], n.saved(0), d, keepdim, sizes)};
               });
  }
  return r;
}

template <bool kMax>
Tensor a_extremum(const char* op, const Tensor& x, const DimList& dim, bool keepdim) {
  check_ordered(x, op);
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  require_nonempty(x, mask, false, op);
  autograd::Record rec(op, {&x});
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), x.dtype(), x.device());
  (kMax ? ops::amax : ops::amin)(common_device(op, {&x, &out}), x, mask, out, Tensor());
  // Ties share the gradient evenly, as torch.
  if (rec)
    rec.finish(kMax ? "AmaxBackward0" : "AminBackward0", {&out}, {x, out},
               [mask, keepdim](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{
                     rgrad::evenly_distribute(g[0], n.saved(0), n.saved(1), mask, keepdim, false)};
               });
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
