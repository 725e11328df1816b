// copy_ (broadcasting, dtype-converting) and fill_: the front-ends of the
// copy and fill ops (core/copy_ops.h), whose kernels are a backend's.
#include "core/autograd_record.h"
#include "core/copy_ops.h"
#include "core/device_check.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

// True when the byte ranges the two views can touch intersect. Non-empty views
// lie inside their storage (the Tensor invariant), so the sums cannot overflow.
bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  auto range = [](const Tensor& t, int64_t* lo, int64_t* hi) {
    int64_t first = t.offset() * int64_t(t.itemsize()), last = first;
    for (int d = 0; d < t.dim(); ++d) last += (t.shape()[d] - 1) * t.strides()[d] * int64_t(t.itemsize());
    *lo = first;
    *hi = last + int64_t(t.itemsize());
  };
  int64_t alo, ahi, blo, bhi;
  range(a, &alo, &ahi);
  range(b, &blo, &bhi);
  return alo < bhi && blo < ahi;
}

// The device whose copy kernel moves the bytes: the one both live on, else the
// non-CPU end (its backend knows how to reach host memory), else dst's.
Device copy_device(Device dst, Device src) {
  if (same_device(dst, src) || src.is_cpu()) return dst;
  if (dst.is_cpu()) return src;
  return dst;
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src_in) {
  if (!defined() || !src_in.defined()) throw ValueError("[copy_] undefined tensor");
  assert_no_internal_overlap(*this, "copy_");
  if (autograd::inplace_needs_grad("copy_", *this, {&src_in})) {
    // self's old values get no gradient (they are overwritten); src's is the
    // incoming one, summed to src's shape and cast to its dtype by the engine.
    autograd::Record rec("copy_", {this, &src_in});
    copy_data(src_in);
    Tensor result = detach();
    rec.finish("CopyBackwards", {&result}, {}, [](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{n.needs(0) ? zeros_like(g[0]) : Tensor(), g[0]};
    });
    autograd::adopt_history(*this, result);
    return *this;
  }
  if (!autograd::detail::differentiable_dtype(dtype_) && src_in.requires_grad()) {
    autograd::NoGradGuard no_grad;  // an integer copy carries no gradient
    return copy_data(src_in);
  }
  return copy_data(src_in);
}

Tensor& Tensor::copy_data(const Tensor& src_in) {
  Tensor src = src_in;
  if (may_overlap(*this, src) && !(src.offset() == offset_ && src.stride_vec() == stride_vec() &&
                                   src.dtype() == dtype_ && src.sizes() == sizes()))
    src = src.clone();
  else if (src.data_ptr() == data_ptr() && src.dtype() == dtype_ && src.sizes() == sizes() &&
           src.stride_vec() == stride_vec())
    return *this;  // copying a view onto itself
  try {
    src = src.expand(sizes());
  } catch (const ValueError&) {
    throw ValueError("[copy_] source of shape " + src_in.shape_str() +
                     " cannot be broadcast to destination shape " + shape_str());
  }
  if (numel() == 0) return *this;
  ops::copy(copy_device(device(), src.device()), *this, src);
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) {
  if (autograd::inplace_needs_grad("fill_", *this, {})) {
    autograd::Record rec("fill_", {this});
    Tensor result = detach();
    result.fill_(value);
    rec.finish("FillBackward0", {&result}, {},
               [](autograd::FnNode&, autograd::Grads& g) { return autograd::Grads{zeros_like(g[0])}; });
    autograd::adopt_history(*this, result);
    return *this;
  }
  if (numel() == 0) return *this;
  assert_no_internal_overlap(*this, "fill_");
  ops::fill(device(), *this, value);
  return *this;
}

}  // namespace kiln
