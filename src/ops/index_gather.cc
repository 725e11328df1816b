// gather, scatter, scatter_add (torch semantics: indices in [0, size), no
// wrapping; index.size(d) <= x.size(d) for d != dim). The front-ends validate
// shapes and indices; the kernels are the ops of ops/registry/index.h.
#include "kiln/index.h"
#include "ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln {
using namespace index_detail;
namespace {

// A 0-dim tensor acts as 1-D of size 1 (torch's ensure_nonempty_dim).
Tensor as_1d_if_scalar(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

std::string shp(const Tensor& t) { return t.shape_str(); }

// Checks for gather/scatter: matching ranks and index no larger than x
// (apart from dim) and than src (every dim).
void check_shapes(const Tensor& x, int dim, const Tensor& idx, const Tensor* src, const char* op) {
  if (x.dim() != idx.dim())
    throw ValueError(std::string("[") + op +
                     "] index tensor must have the same number of dimensions as input " +
                     "tensor; got index " + shp(idx) + " and input " + shp(x));
  if (src && src->dim() != idx.dim())
    throw ValueError(std::string("[") + op +
                     "] index tensor must have the same number of dimensions as src " + "tensor; got index " +
                     shp(idx) + " and src " + shp(*src));
  for (int d = 0; d < x.dim(); ++d) {
    if (d != dim && idx.size(d) > x.size(d))
      throw ValueError(std::string("[") + op + "] size does not match at dimension " + std::to_string(d) +
                       ": expected index " + shp(idx) + " to be no larger than self " + shp(x) +
                       " apart from dimension " + std::to_string(dim));
    if (src && idx.size(d) > src->size(d))
      throw ValueError(std::string("[") + op + "] size does not match at dimension " + std::to_string(d) +
                       ": expected index " + shp(idx) + " to be no larger than src " + shp(*src));
  }
}

// Shared front-end of scatter_ (src or value) and scatter_add_.
Tensor& scatter_impl(Tensor& x, int dim, const Tensor& index, const Tensor* src_in, const Scalar* value,
                     bool add, const char* op) {
  assert_no_internal_overlap(x, op);
  Tensor idx = index_to_int64(index, op);
  Tensor x1 = as_1d_if_scalar(x);
  Tensor i1 = as_1d_if_scalar(idx);
  dim = wrap_dim(dim, x1.dim(), op);
  Tensor s1;
  if (src_in) {
    if (src_in->dtype() != x.dtype())
      throw TypeError(std::string("[") + op + "] expected self.dtype to be equal to src.dtype; got " +
                      name(x.dtype()) + " and " + name(src_in->dtype()));
    s1 = as_1d_if_scalar(*src_in);
  }
  check_shapes(x1, dim, i1, src_in ? &s1 : nullptr, op);
  check_indices(i1, x1.size(dim), false, op, dim);
  if (i1.numel() == 0) return x;
  // Writing x while reading an operand that aliases it would depend on order.
  if (src_in && s1.storage() == x1.storage()) s1 = s1.clone();
  if (i1.storage() == x1.storage()) i1 = i1.clone();
  if (!src_in) s1 = scalar_tensor(*value, x.dtype(), x.device()).view({1}).expand(i1.sizes());

  const Op<ops::Scatter>& kernel = add ? ops::scatter_add : ops::scatter;
  kernel(common_device(op, {&x, &i1, &s1}), x1, dim, i1, s1);
  return x;
}

}  // namespace

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
  Tensor idx = index_to_int64(index, "gather");
  const Tensor x1 = as_1d_if_scalar(x);
  const Tensor i1 = as_1d_if_scalar(idx);
  dim = wrap_dim(dim, x1.dim(), "gather");
  check_shapes(x1, dim, i1, nullptr, "gather");
  check_indices(i1, x1.size(dim), false, "gather", dim);
  Tensor out = empty(idx.sizes(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  ops::gather(common_device("gather", {&x, &idx, &out}), x1, dim, i1, as_1d_if_scalar(out));
  return out;
}

Tensor& scatter_(Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  return scatter_impl(x, dim, index, &src, nullptr, false, "scatter");
}
Tensor& scatter_(Tensor& x, int dim, const Tensor& index, const Scalar& value) {
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[scatter] cannot scatter a complex value into ") + name(x.dtype()));
  return scatter_impl(x, dim, index, nullptr, &value, false, "scatter");
}
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  return scatter_(out, dim, index, src);
}
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Scalar& value) {
  Tensor out = x.clone();
  return scatter_(out, dim, index, value);
}
Tensor& scatter_add_(Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  return scatter_impl(x, dim, index, &src, nullptr, true, "scatter_add");
}
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  return scatter_add_(out, dim, index, src);
}

}  // namespace kiln
