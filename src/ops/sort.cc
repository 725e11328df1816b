// sort, argsort, topk front-ends: dtype and k checks, the dim, output
// allocation, then the op (ops/registry/sort.h). A 0-d x is one row of one.
#include "kiln/sort.h"

#include <string>

#include "ops/reduce_grad.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// Sorts (k < 0) or selects the top k of every row along dim. Outputs have x's
// shape with size(dim) = k (or n), contiguous; values only when want_values.
SortResult sort_rows(const Tensor& x_in, int dim_in, bool descending, int64_t k, bool sorted,
                     bool want_values, const char* op) {
  if (is_complex(x_in.dtype()))
    throw TypeError(std::string("[") + op + "] complex tensors (" + name(x_in.dtype()) + ") are not ordered");
  const bool scalar = x_in.dim() == 0;
  const Tensor x = scalar ? x_in.view({1}) : x_in;
  const int dim = wrap_dim(dim_in, x.dim(), op);
  const int64_t n = x.size(dim);
  const bool topk = k >= 0;
  if (topk && k > n)
    throw ValueError(std::string("[") + op + "] k (" + std::to_string(k) +
                     ") is out of range for dimension " + std::to_string(dim) + " of size " +
                     std::to_string(n) + " in tensor of shape " + x_in.shape_str());
  const int64_t m = topk ? k : n;
  Shape out_shape = x.sizes();
  out_shape[dim] = m;
  SortResult r{want_values ? empty(out_shape, x.dtype(), x.device()) : Tensor(), empty(out_shape, DType::Int64, x.device())};
  const Device device = common_device(op, {&x, &r.values, &r.indices});
  if (topk)
    ops::topk(device, x, k, dim, descending, sorted, r.values, r.indices);
  else
    (want_values ? ops::sort : ops::argsort)(device, x, dim, descending, r.values, r.indices);
  if (scalar && m == 1) return {want_values ? r.values.view({}) : Tensor(), r.indices.view({})};
  return r;
}

// The values' gradient goes back to the positions the indices name.
SortResult recorded(const char* op, const char* node, const Tensor& x, int dim, bool descending, int64_t k,
                    bool sorted) {
  autograd::Record rec(op, {&x});
  SortResult r = sort_rows(x, dim, descending, k, sorted, true, op);
  if (rec) {
    const int d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), op);
    rec.finish(node, {&r.values, &r.indices}, {r.indices},
               [d, sizes = x.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{rgrad::select_backward(g[0], n.saved(0), d, /*keepdim=*/true, sizes)};
               });
  }
  return r;
}

}  // namespace

SortResult sort(const Tensor& x, int dim, bool descending, bool stable) {
  return recorded("sort", "SortBackward0", x, dim, descending, -1, true);
}

Tensor argsort(const Tensor& x, int dim, bool descending, bool stable) {
  return sort_rows(x, dim, descending, -1, true, false, "argsort").indices;
}

SortResult topk(const Tensor& x, int64_t k, int dim, bool largest, bool sorted) {
  if (k < 0) throw ValueError("[topk] k (" + std::to_string(k) + ") must be non-negative");
  return recorded("topk", "TopkBackward0", x, dim, largest, k, sorted);
}

}  // namespace kiln
