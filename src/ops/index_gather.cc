// gather, scatter, scatter_add (torch semantics: indices in [0, size), no
// wrapping; index.size(d) <= x.size(d) for d != dim). The front-ends validate
// shapes and indices; the kernels are the ops of ops/registry/index.h.
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
#include "kiln/shape.h"
#include "ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln {
using namespace index_detail;
namespace {

Tensor gather_impl(const Tensor& x, int dim, const Tensor& index);

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

// r (index's shape) zero-padded to src's shape (index may be smaller than src
// in every dim; src's positions outside it take no part).
Tensor pad_to(Tensor r, const Shape& src_shape) {
  for (int d = 0; d < r.dim(); ++d) {
    if (r.size(d) == src_shape[size_t(d)]) continue;
    Shape pad = r.sizes();
    pad[size_t(d)] = src_shape[size_t(d)] - r.size(d);
    const Tensor parts[2] = {r, zeros(pad, r.dtype(), r.device())};
    r = cat(parts, d);
  }
  return r;
}

autograd::Grads scatter_grads(autograd::FnNode& n, const Tensor& g, int dim, const Shape& src_shape,
                              bool add) {
  const Tensor index = n.saved(0);
  autograd::Grads r(3);
  if (n.needs(0)) r[0] = add ? g : scatter(g, dim, index, Scalar(0.0));
  if (n.needs(2)) {
    Tensor gs = gather(g, dim, index);
    if (!add) {
      // A repeated index keeps the last write: the src elements it overwrote
      // get no gradient. Scattering each position's number finds the winners.
      const Tensor pos =
          arange(Scalar(int64_t(0)), Scalar(index.numel()), Scalar(int64_t(1)), DType::Int64, g.device())
              .reshape(index.sizes());
      const Tensor written =
          scatter(full(g.sizes(), Scalar(int64_t(-1)), DType::Int64, g.device()), dim, index, pos);
      gs = masked_fill(gs, ne(gather(written, dim, index), pos), Scalar(0.0));
    }
    r[2] = pad_to(gs, src_shape);
  }
  return r;
}

}  // namespace

Tensor gather(const Tensor& x, int dim, const Tensor& index) {
  autograd::Record rec("gather", {&x, &index});
  Tensor out = gather_impl(x, dim, index);
  if (rec)  // x's gradient: g added back at the gathered places
    rec.finish("GatherBackward0", {&out}, {index},
               [dim, sh = x.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{
                     scatter_add(zeros(sh, g[0].dtype(), g[0].device()), dim, n.saved(0), g[0]), Tensor()};
               });
  return out;
}

namespace {
Tensor gather_impl(const Tensor& x, int dim, const Tensor& index) {
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
}  // namespace

// scatter: self's gradient is g with the written places zeroed, src's is g
// gathered from them; scatter_add passes g to self unchanged.
Tensor& scatter_(Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  if (autograd::inplace_needs_grad("scatter_", x, {&src})) {
    autograd::rebase_inplace(x, scatter(x, dim, index, src));
    return x;
  }
  return scatter_impl(x, dim, index, &src, nullptr, false, "scatter");
}
Tensor& scatter_(Tensor& x, int dim, const Tensor& index, const Scalar& value) {
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[scatter] cannot scatter a complex value into ") + name(x.dtype()));
  if (autograd::inplace_needs_grad("scatter_", x, {})) {
    autograd::rebase_inplace(x, scatter(x, dim, index, value));
    return x;
  }
  return scatter_impl(x, dim, index, nullptr, &value, false, "scatter");
}
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  autograd::Record rec("scatter", {&x, &index, &src});
  Tensor out = x.clone();
  scatter_impl(out, dim, index, &src, nullptr, false, "scatter");
  if (rec)
    rec.finish("ScatterBackward0", {&out}, {index},
               [dim, sh = src.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return scatter_grads(n, g[0], dim, sh, false);
               });
  return out;
}
Tensor scatter(const Tensor& x, int dim, const Tensor& index, const Scalar& value) {
  if (value.is_complex() && !is_complex(x.dtype()))
    throw TypeError(std::string("[scatter] cannot scatter a complex value into ") + name(x.dtype()));
  autograd::Record rec("scatter", {&x, &index});
  Tensor out = x.clone();
  scatter_impl(out, dim, index, nullptr, &value, false, "scatter");
  if (rec)
    rec.finish("ScatterBackward1", {&out}, {index}, [dim](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{n.needs(0) ? scatter(g[0], dim, n.saved(0), Scalar(0.0)) : Tensor(), Tensor()};
    });
  return out;
}
Tensor& scatter_add_(Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  if (autograd::inplace_needs_grad("scatter_add_", x, {&src})) {
    autograd::rebase_inplace(x, scatter_add(x, dim, index, src));
    return x;
  }
  return scatter_impl(x, dim, index, &src, nullptr, true, "scatter_add");
}
Tensor scatter_add(const Tensor& x, int dim, const Tensor& index, const Tensor& src) {
  autograd::Record rec("scatter_add", {&x, &index, &src});
  Tensor out = x.clone();
  scatter_impl(out, dim, index, &src, nullptr, true, "scatter_add");
  if (rec)
    rec.finish("ScatterAddBackward0", {&out}, {index},
               [dim, sh = src.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return scatter_grads(n, g[0], dim, sh, true);
               });
  return out;
}

}  // namespace kiln
