// cat / stack front-ends (ops/registry/shape.h) and the numpy-style stacking
// helpers composed from them: validate shapes and dims, promote the dtype,
// allocate on the inputs' device, run the op.
#include <string>
#include <vector>

#include "core/autograd_record.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/memory_format.h"
#include "kiln/shape.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// torch's legacy rule: a 1-D tensor of shape [0] takes no part in cat's shape.
bool skipped(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// The device all inputs (and out) share.
Device inputs_device(const char* op, std::span<const Tensor> xs, const Tensor& out) {
  Device d = common_device(op, {&out});
  const Tensor* first = out.defined() ? &out : nullptr;
  for (const Tensor& t : xs) {
    if (!first) {
      first = &t;
      d = t.device();
    } else {
      d = common_device(op, {first, &t});
    }
  }
  return d;
}

DType promoted(std::span<const Tensor> xs) {
  ResultType rt;
  for (const Tensor& t : xs) rt.add(t.dtype(), Priority::Dimensioned);
  return rt.get();
}

void check_out(const char* op, const Tensor& out, const Shape& shape, DType dtype) {
  KILN_CHECK(out.sizes() == shape, ValueError,
             "[" << op << "] out has shape " << out.shape_str() << ", expected " << shape_to_string(shape));
  KILN_CHECK(
      can_cast(dtype, out.dtype()), TypeError,
      "[" << op << "] result dtype " << name(dtype) << " can't be cast to out dtype " << name(out.dtype()));
  assert_no_internal_overlap(out, op);
}

// Validates cat's inputs; returns the output shape, sets `dim` (wrapped) and
// `parts` (the inputs that are copied).
Shape cat_shape(std::span<const Tensor> xs, int& dim, std::vector<Tensor>& parts) {
  KILN_CHECK(!xs.empty(), ValueError, "[cat] expected a non-empty list of tensors");
  for (size_t i = 0; i < xs.size(); ++i)
    KILN_CHECK(xs[i].dim() > 0, ValueError,
               "[cat] zero-dimensional tensor (at position " << i << ") cannot be concatenated");
  const Tensor* ref = nullptr;
  size_t ref_i = 0;
  for (size_t i = 0; i < xs.size() && !ref; ++i)
    if (!skipped(xs[i])) ref = &xs[i], ref_i = i;
  if (!ref) {  // every input is [0]
    wrap_dim(dim, 1, "cat");
    dim = 0;
    return {0};
  }
  dim = wrap_dim(dim, ref->dim(), "cat");
  Shape shape = ref->sizes();
  shape[dim] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    if (skipped(t)) continue;
    KILN_CHECK(t.dim() == ref->dim(), ValueError,
               "[cat] tensors must have the same number of dimensions: got "
                   << ref->dim() << " and " << t.dim() << " (tensor " << i << ")");
    for (int d = 0; d < t.dim(); ++d)
      KILN_CHECK(d == dim || t.size(d) == ref->size(d), ValueError,
                 "[cat] sizes of tensors must match except in dimension "
                     << dim << ": expected size " << ref->size(d) << " but got size " << t.size(d)
                     << " for tensor number " << i << " in the list (shapes " << ref->shape_str() << " at "
                     << ref_i << ", " << t.shape_str() << " at " << i << ")");
    shape[dim] += t.size(dim);
    if (t.numel() > 0) parts.push_back(t);
  }
  return shape;
}

// The output layout, as torch's cat: the inputs' suggested memory format when
// they all share one (channels-last frames joined in time stay channels-last),
// else row-major.
MemoryFormat cat_format(const std::vector<Tensor>& parts) {
  if (parts.empty() || parts[0].dim() < 4) return MemoryFormat::Contiguous;
  const MemoryFormat f = suggest_memory_format(parts[0]);
  for (const Tensor& t : parts)
    if (suggest_memory_format(t) != f) return MemoryFormat::Contiguous;
  return f;
}

void run_cat(std::span<const Tensor> xs, int dim, const Tensor* out_arg, Tensor& out) {
  const Device device = inputs_device("cat", xs, out_arg ? *out_arg : Tensor());
  std::vector<Tensor> parts;
  const Shape shape = cat_shape(xs, dim, parts);
  const DType dtype = promoted(xs);
  if (out_arg) {
    check_out("cat", *out_arg, shape, dtype);
    out = *out_arg;
  } else {
    out = empty(shape, dtype, device, cat_format(parts));
  }
  if (out.numel() > 0) ops::cat(device, parts, dim, out);
}

Shape stack_shape(std::span<const Tensor> xs, int& dim) {
  KILN_CHECK(!xs.empty(), ValueError, "[stack] expected a non-empty list of tensors");
  const Tensor& ref = xs[0];
  for (size_t i = 1; i < xs.size(); ++i)
    KILN_CHECK(xs[i].sizes() == ref.sizes(), ValueError,
               "[stack] expects each tensor to be equal size, but got "
                   << ref.shape_str() << " at entry 0 and " << xs[i].shape_str() << " at entry " << i);
  dim = wrap_dim(dim, ref.dim() + 1, "stack");
  Shape shape = ref.sizes();
  shape.insert(shape.begin() + dim, int64_t(xs.size()));
  return shape;
}

void run_stack(std::span<const Tensor> xs, int dim, const Tensor* out_arg, Tensor& out) {
  const Device device = inputs_device("stack", xs, out_arg ? *out_arg : Tensor());
  const Shape shape = stack_shape(xs, dim);
  const DType dtype = promoted(xs);
  if (out_arg) {
    check_out("stack", *out_arg, shape, dtype);
    out = *out_arg;
  } else {
    out = empty(shape, dtype, device);
  }
  if (out.numel() == 0) return;
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (const Tensor& t : xs) parts.push_back(t.unsqueeze(dim));
  ops::stack(device, parts, dim, out);
}

std::vector<Tensor> map(std::span<const Tensor> xs, Tensor (*f)(const Tensor&)) {
  std::vector<Tensor> r;
  r.reserve(xs.size());
  for (const Tensor& t : xs) r.push_back(f(t));
  return r;
}

}  // namespace

Tensor cat(std::span<const Tensor> xs, int dim) {
  autograd::Record rec("cat", xs);
  Tensor out;
  run_cat(xs, dim, nullptr, out);
  if (rec) {
    // Input i's gradient is its slab of g along the (wrapped) cat dim; a
    // skipped [0] input gets an empty one.
    const int d = out.dim() == 1 ? 0 : wrap_dim(dim, out.dim(), "cat");
    std::vector<int64_t> sizes;
    for (const Tensor& t : xs) sizes.push_back(skipped(t) ? -1 : t.size(d));
    rec.finish("CatBackward0", {&out}, {}, [d, sizes](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(sizes.size());
      int64_t start = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] < 0) {
          if (n.needs(i)) r[i] = zeros({0}, g[0].dtype(), g[0].device());
          continue;
        }
        if (n.needs(i)) r[i] = g[0].narrow(d, start, sizes[i]);
        start += sizes[i];
      }
      return r;
    });
  }
  return out;
}
void cat_out(std::span<const Tensor> xs, int dim, const Tensor& out) {
  autograd::Record rec("cat", xs);
  rec.no_out(out);
  autograd::wrote(out);
  Tensor r;
  run_cat(xs, dim, &out, r);
}
Tensor stack(std::span<const Tensor> xs, int dim) {
  autograd::Record rec("stack", xs);
  Tensor out;
  run_stack(xs, dim, nullptr, out);
  if (rec) {
    const int d = wrap_dim(dim, out.dim(), "stack");
    rec.finish("StackBackward0", {&out}, {}, [d, k = xs.size()](autograd::FnNode& n, autograd::Grads& g) {
      autograd::Grads r(k);
      for (size_t i = 0; i < k; ++i)
        if (n.needs(i)) r[i] = g[0].select(d, int64_t(i));
      return r;
    });
  }
  return out;
}
void stack_out(std::span<const Tensor> xs, int dim, const Tensor& out) {
  autograd::Record rec("stack", xs);
  rec.no_out(out);
  autograd::wrote(out);
  Tensor r;
  run_stack(xs, dim, &out, r);
}

Tensor atleast_1d(const Tensor& x) { return x.dim() == 0 ? x.view({1}) : x; }
Tensor atleast_2d(const Tensor& x) {
  if (x.dim() == 0) return x.view({1, 1});
  return x.dim() == 1 ? x.unsqueeze(0) : x;
}
Tensor atleast_3d(const Tensor& x) {
  if (x.dim() == 0) return x.view({1, 1, 1});
  if (x.dim() == 1) return x.unsqueeze(0).unsqueeze(2);
  return x.dim() == 2 ? x.unsqueeze(2) : x;
}

Tensor hstack(std::span<const Tensor> xs) {
  KILN_CHECK(!xs.empty(), ValueError, "[hstack] expects a non-empty list of tensors");
  const std::vector<Tensor> v = map(xs, atleast_1d);
  return cat(v, v[0].dim() == 1 ? 0 : 1);
}
Tensor vstack(std::span<const Tensor> xs) {
  KILN_CHECK(!xs.empty(), ValueError, "[vstack] expects a non-empty list of tensors");
  return cat(map(xs, atleast_2d), 0);
}
Tensor dstack(std::span<const Tensor> xs) {
  KILN_CHECK(!xs.empty(), ValueError, "[dstack] expects a non-empty list of tensors");
  return cat(map(xs, atleast_3d), 2);
}
Tensor column_stack(std::span<const Tensor> xs) {
  KILN_CHECK(!xs.empty(), ValueError, "[column_stack] expects a non-empty list of tensors");
  std::vector<Tensor> v;
  v.reserve(xs.size());
  for (const Tensor& t : xs) v.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return cat(v, 1);
}

}  // namespace kiln
