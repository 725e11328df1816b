// index_select and index_add (torch semantics: a 1-D (or 0-D) index of values
// in [0, size), no wrapping). The front-ends validate shapes and indices; the
// kernels are the ops of ops/registry/index.h.
#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/index.h"
#include "ops/index_common.h"
#include "ops/registry/all.h"

namespace kiln {
using namespace index_detail;
namespace {

Tensor index_select_impl(const Tensor& x, int dim, const Tensor& index);
Tensor& index_add_impl(Tensor& x, int dim, const Tensor& index, const Tensor& source, const Scalar& alpha);

// The index as a 1-D int64 tensor; more than one dim throws ValueError.
Tensor vector_index(const Tensor& index, const char* op) {
  Tensor idx = index_to_int64(index, op);
  if (idx.dim() > 1)
    throw ValueError(std::string("[") + op + "] index is supposed to be a vector, got shape " +
                     idx.shape_str());
  return idx.dim() == 0 ? idx.view({1}) : idx;
}

}  // namespace

Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  autograd::Record rec("index_select", {&x, &index});
  Tensor out = index_select_impl(x, dim, index);
  if (rec)  // x's gradient: g added back at the selected places (repeats sum)
    rec.finish("IndexSelectBackward0", {&out}, {index},
               [dim, sh = x.sizes()](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{
                     index_add(zeros(sh, g[0].dtype(), g[0].device()), dim, n.saved(0), g[0]), Tensor()};
               });
  return out;
}

namespace {
Tensor index_select_impl(const Tensor& x, int dim, const Tensor& index) {
  const Tensor idx = vector_index(index, "index_select");
  const Tensor x1 = x.dim() == 0 ? x.view({1}) : x;
  dim = wrap_dim(dim, x1.dim(), "index_select");
  if (x.dim() == 0 && idx.numel() != 1)
    throw ValueError("[index_select] index to a 0-dim tensor can have only 1 value, got " +
                     std::to_string(idx.numel()));
  check_indices(idx, x1.size(dim), false, "index_select", dim);
  // out: x's shape with size(dim) = index.numel().
  Shape out_shape = x1.sizes();
  out_shape[dim] = idx.numel();
  Tensor out = empty(out_shape, x.dtype(), x.device());
  if (out.numel() > 0) ops::index_select(common_device("index_select", {&x, &idx, &out}), x1, dim, idx, out);
  return x.dim() == 0 ? out.view({}) : out;
}
}  // namespace

Tensor& index_add_(Tensor& x, int dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  if (autograd::inplace_needs_grad("index_add_", x, {&source})) {
    autograd::rebase_inplace(x, index_add(x, dim, index, source, alpha));
    return x;
  }
  return index_add_impl(x, dim, index, source, alpha);
}

namespace {
Tensor& index_add_impl(Tensor& x, int dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  const char* op = "index_add";
  assert_no_internal_overlap(x, op);
  Tensor idx = vector_index(index, op);
  if (source.dtype() != x.dtype())
    throw TypeError(std::string("[index_add] self (") + name(x.dtype()) + ") and source (" +
                    name(source.dtype()) + ") must have the same dtype");
  if (is_integral(x.dtype(), true) && (alpha.is_floating() || alpha.is_complex()))
    throw TypeError(std::string("[index_add] for integral input tensors (") + name(x.dtype()) +
                    "), alpha must not be a floating point number");
  if (!is_complex(x.dtype()) && alpha.is_complex())
    throw TypeError(std::string("[index_add] complex alpha needs a complex tensor, got ") + name(x.dtype()));
  Tensor x1 = x.dim() == 0 ? x.view({1}) : x;
  Tensor s1 = source.dim() == 0 ? source.view({1}) : source;
  dim = wrap_dim(dim, x1.dim(), op);
  bool ok = x1.dim() == s1.dim() && s1.size(dim) == idx.numel();
  for (int d = 0; ok && d < x1.dim(); ++d)
    if (d != dim && x1.size(d) != s1.size(d)) ok = false;
  if (!ok)
    throw ValueError("[index_add] source of shape " + source.shape_str() + " does not match self " +
                     x.shape_str() + " with index of " + std::to_string(idx.numel()) +
                     " elements along dim " + std::to_string(dim));
  check_indices(idx, x1.size(dim), false, op, dim);
  if (idx.numel() == 0 || x.numel() == 0) return x;
  if (s1.storage() == x1.storage()) s1 = s1.clone();
  if (idx.storage() == x1.storage()) idx = idx.clone();
  ops::index_add(common_device(op, {&x, &idx, &s1}), x1, dim, idx, s1, alpha);
  return x;
}
}  // namespace

// self's gradient is g; source's is alpha times g at the indexed places.
Tensor index_add(const Tensor& x, int dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  autograd::Record rec("index_add", {&x, &index, &source});
  Tensor out = x.clone();
  index_add_impl(out, dim, index, source, alpha);
  if (rec)
    rec.finish("IndexAddBackward0", {&out}, {index}, [dim, alpha](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(3);
      if (n.needs(0)) r[0] = g[0];
      if (n.needs(2)) {
        r[2] = index_select(g[0], dim, n.saved(0));
        if (alpha.is_complex())  // conjugated, torch's convention
          r[2] = mul(r[2], Scalar(complex128(alpha.to_double(), -alpha.to_complex().imag())));
        else if (alpha.to_double() != 1.0)
          r[2] = mul(r[2], alpha);
      }
      return r;
    });
  return out;
}

}  // namespace kiln
