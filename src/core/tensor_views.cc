// Tensor's view operations (view, reshape, permute, transpose, narrow, slice,
// select, squeeze, unsqueeze, expand, as_strided, flatten) and the autograd
// nodes they record: the rest of Tensor is in tensor.cc.
#include <algorithm>
#include <numeric>

#include "core/autograd_record.h"
#include "core/checked_math.h"
#include "kiln/tensor.h"

namespace kiln {

// ---- views ------------------------------------------------------------------

namespace {

// offset + index * stride for a view op; IndexError when it overflows (only an
// empty view with huge strides can get there: others stay inside their storage).
int64_t checked_offset(int64_t offset, int64_t index, int64_t stride, const char* op) {
  int64_t r;
  if (!checked_mul_add(offset, index, stride, &r))
    throw IndexError(std::string("[") + op + "] storage offset " + std::to_string(offset) + " + " +
                     std::to_string(index) + " * stride " + std::to_string(stride) + " overflows int64");
  return r;
}

// Infers a single -1 in `shape` from numel; validates the element count.
Shape infer_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw ValueError(std::string("[") + op + "] only one dimension can be inferred");
      infer = int(i);
    } else if (out[i] < 0) {
      throw ValueError(std::string("[") + op + "] invalid shape dimension " + std::to_string(out[i]));
    } else if (!checked_mul(known, out[i], &known)) {
      throw ValueError(std::string("[") + op + "] shape '" + shape_to_string(shape) +
                       "' is invalid for input of size " + std::to_string(numel) +
                       " (its number of elements overflows int64)");
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      throw ValueError(std::string("[") + op + "] shape '" + shape_to_string(shape) +
                       "' is invalid for input of size " + std::to_string(numel));
    out[infer] = numel / known;
  } else if (known != numel) {
    throw ValueError(std::string("[") + op + "] shape '" + shape_to_string(shape) +
                     "' is invalid for input of size " + std::to_string(numel));
  }
  return out;
}

// Strides for viewing a tensor of (old_shape, old_strides) as new_shape without
// copying, or false when the memory layout does not allow it (torch's
// computeStride).
bool view_strides(std::span<const int64_t> old_shape, std::span<const int64_t> old_strides,
                  const Shape& new_shape, Shape* out) {
  out->assign(new_shape.size(), 0);
  if (old_shape.empty()) {
    for (size_t i = 0; i < new_shape.size(); ++i) (*out)[i] = 1;
    return true;
  }
  // Sizes and their partial products fit int64 (the Tensor invariant and
  // infer_shape); a size product times a stride may not, and a product that
  // does not fit equals no stride.
  int64_t numel = 1;
  for (auto s : old_shape) numel *= s;
  if (numel == 0) {
    *out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = int64_t(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1, span;
  for (int64_t d = int64_t(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 &&
                   (!checked_mul(tensor_numel, chunk_base_stride, &span) || old_strides[d - 1] != span))) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        if (!checked_mul(view_numel, chunk_base_stride, &(*out)[view_d])) return false;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

}  // namespace


// ---- autograd for views ---------------------------------------------------------

namespace {

using autograd::FnNode;
using autograd::Grads;

bool records(const Tensor& t) { return autograd::grad_recording() && t.requires_grad(); }

// Gives view r of base a node whose formula maps r's gradient to base's.
Tensor record_view(const Tensor& base, Tensor r, const char* name, FnNode::Formula f) {
  autograd::Record rec(name, {&base});
  rec.finish(name, {&r}, {}, std::move(f));
  r.autograd_meta()->is_view = true;
  return r;
}

// The gradient of a view that picks part of a tensor of shape `shape`: zeros
// with the picked part set to g (differentiable itself: its gradient is the
// same view of the incoming one).
using ViewFn = std::function<Tensor(const Tensor&)>;
Tensor embed(const Tensor& g, const Shape& shape, ViewFn pick) {
  autograd::Record rec("view_backward", {&g});
  Tensor z = zeros(shape, g.dtype(), g.device());
  pick(z).copy_(g);
  if (rec)
    rec.finish("ViewEmbedBackward0", {&z}, {}, [pick](FnNode&, Grads& gg) { return Grads{pick(gg[0])}; });
  return z;
}

Tensor reshape_record(const Tensor& base, Tensor r, const char* name) {
  return record_view(base, std::move(r), name,
                     [sh = base.sizes()](FnNode&, Grads& g) { return Grads{g[0].reshape(sh)}; });
}

Tensor pick_record(const Tensor& base, Tensor r, const char* name, ViewFn pick) {
  return record_view(base, std::move(r), name, [sh = base.sizes(), pick](FnNode&, Grads& g) {
    return Grads{embed(g[0], sh, pick)};
  });
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  const Shape new_shape = infer_shape(shape, numel(), "view");
  Shape new_strides;
  if (!view_strides(this->shape(), strides(), new_shape, &new_strides))
    throw ValueError("[view] view size " + shape_to_string(new_shape) +
                     " is not compatible with input tensor's size " + shape_str() +
                     " and stride " + shape_to_string(strides()) +
                     " (at least one dimension spans across two contiguous subspaces); use reshape");
  Tensor r(storage_, dtype_, new_shape, new_strides, offset_, "view");
  return records(*this) ? reshape_record(*this, std::move(r), "ViewBackward0") : r;
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape new_shape = infer_shape(shape, numel(), "reshape");
  Shape new_strides;
  if (view_strides(this->shape(), strides(), new_shape, &new_strides)) {
    Tensor r(storage_, dtype_, new_shape, new_strides, offset_, "reshape");
    return records(*this) ? reshape_record(*this, std::move(r), "ViewBackward0") : r;
  }
  return contiguous().view(new_shape);
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  if (int(dims.size()) != ndim_)
    throw ValueError("[permute] number of dims in permutation (" + std::to_string(dims.size()) +
                     ") does not match the tensor's " + std::to_string(ndim_));
  Shape sh(ndim_), st(ndim_);
  std::vector<bool> seen(ndim_, false);
  for (int i = 0; i < ndim_; ++i) {
    const int d = wrap_dim(dims[i], ndim_, "permute");
    if (seen[d]) throw ValueError("[permute] repeated dim " + std::to_string(d) + " in permutation");
    seen[d] = true;
    sh[i] = shape_[d];
    st[i] = strides_[d];
  }
  Tensor r(storage_, dtype_, sh, st, offset_, "permute");
  if (!records(*this)) return r;
  std::vector<int> inverse(ndim_);
  for (int i = 0; i < ndim_; ++i) inverse[wrap_dim(dims[i], ndim_, "permute")] = i;
  return record_view(*this, std::move(r), "PermuteBackward0",
                     [inverse](FnNode&, Grads& g) { return Grads{g[0].permute(inverse)}; });
}

Tensor Tensor::transpose(int d0, int d1) const {
  if (ndim_ == 0) {
    wrap_dim(d0, 0, "transpose");
    wrap_dim(d1, 0, "transpose");
    return *this;
  }
  d0 = wrap_dim(d0, ndim_, "transpose");
  d1 = wrap_dim(d1, ndim_, "transpose");
  Tensor r = *this;
  std::swap(r.shape_[d0], r.shape_[d1]);
  std::swap(r.strides_[d0], r.strides_[d1]);
  r.autograd_.reset();
  if (!records(*this)) return r;
  return record_view(*this, std::move(r), "TransposeBackward0",
                     [d0, d1](FnNode&, Grads& g) { return Grads{g[0].transpose(d0, d1)}; });
}

Tensor Tensor::t() const {
  if (ndim_ > 2)
    throw ValueError("[t] expects a tensor with <= 2 dimensions, but self is " + std::to_string(ndim_) + "D");
  return ndim_ < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::narrow(int dim, int64_t start, int64_t length) const {
  if (ndim_ == 0) throw ValueError("[narrow] cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, ndim_, "narrow");
  const int64_t n = shape_[dim];
  if (start < 0) start += n;
  if (start < 0 || start > n || length < 0 || length > n - start)
    throw IndexError("[narrow] start (" + std::to_string(start) + ") + length (" +
                     std::to_string(length) + ") exceeds dimension size (" + std::to_string(n) + ")");
  Tensor r = *this;
  r.shape_[dim] = length;
  r.offset_ = checked_offset(offset_, start, strides_[dim], "narrow");
  r.check_view("narrow");
  r.autograd_.reset();
  if (!records(*this)) return r;
  return pick_record(*this, std::move(r), "NarrowBackward0",
                     [dim, start, length](const Tensor& t) { return t.narrow(dim, start, length); });
}

Tensor Tensor::slice(int dim, int64_t start, int64_t end, int64_t step) const {
  if (ndim_ == 0) throw IndexError("[slice] cannot slice a 0-dim tensor");
  dim = wrap_dim(dim, ndim_, "slice");
  if (step <= 0) throw ValueError("[slice] step must be greater than zero");
  const int64_t n = shape_[dim];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Tensor r = *this;
  r.shape_[dim] = end == start ? 0 : (end - start - 1) / step + 1;  // ceil without end - start + step
  // A dim that never steps keeps its stride when stride * step does not fit.
  if (!checked_mul(strides_[dim], step, &r.strides_[dim])) {
    if (r.shape_[dim] > 1)
      throw ValueError("[slice] stride " + std::to_string(strides_[dim]) + " times step " +
                       std::to_string(step) + " overflows int64 (shape " + shape_str() + ")");
    r.strides_[dim] = strides_[dim];
  }
  r.offset_ = checked_offset(offset_, start, strides_[dim], "slice");
  r.check_view("slice");
  r.autograd_.reset();
  if (!records(*this)) return r;
  return pick_record(*this, std::move(r), "SliceBackward0",
                     [dim, start, end, step](const Tensor& t) { return t.slice(dim, start, end, step); });
}

Tensor Tensor::select(int dim, int64_t index) const {
  if (ndim_ == 0) throw IndexError("[select] cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, ndim_, "select");
  const int64_t n = shape_[dim];
  if (index < -n || index >= n)
    throw IndexError("[select] index " + std::to_string(index) + " is out of bounds for dimension " +
                     std::to_string(dim) + " with size " + std::to_string(n));
  if (index < 0) index += n;
  Shape sh, st;
  for (int i = 0; i < ndim_; ++i) {
    if (i == dim) continue;
    sh.push_back(shape_[i]);
    st.push_back(strides_[i]);
  }
  Tensor r(storage_, dtype_, sh, st, checked_offset(offset_, index, strides_[dim], "select"), "select");
  if (!records(*this)) return r;
  return pick_record(*this, std::move(r), "SelectBackward0",
                     [dim, index](const Tensor& t) { return t.select(dim, index); });
}

Tensor Tensor::squeeze() const {
  Shape sh, st;
  for (int i = 0; i < ndim_; ++i) {
    if (shape_[i] == 1) continue;
    sh.push_back(shape_[i]);
    st.push_back(strides_[i]);
  }
  Tensor r(storage_, dtype_, sh, st, offset_, "squeeze");
  return records(*this) ? reshape_record(*this, std::move(r), "SqueezeBackward0") : r;
}

Tensor Tensor::squeeze(int dim) const {
  if (ndim_ == 0) {
    wrap_dim(dim, 0, "squeeze");
    return *this;
  }
  dim = wrap_dim(dim, ndim_, "squeeze");
  if (shape_[dim] != 1) return *this;
  Shape sh, st;
  for (int i = 0; i < ndim_; ++i) {
    if (i == dim) continue;
    sh.push_back(shape_[i]);
    st.push_back(strides_[i]);
  }
  Tensor r(storage_, dtype_, sh, st, offset_, "squeeze");
  return records(*this) ? reshape_record(*this, std::move(r), "SqueezeBackward0") : r;
}

Tensor Tensor::unsqueeze(int dim) const {
  dim = wrap_dim(dim, ndim_ + 1, "unsqueeze");
  Shape sh = sizes(), st = stride_vec();
  // size * stride keeps the result contiguous where the input is; a size-1 dim
  // is never stepped, so 1 serves when the product does not fit (empty views).
  int64_t s = 1;
  if (dim < ndim_ && !checked_mul(shape_[dim], strides_[dim], &s)) s = 1;
  sh.insert(sh.begin() + dim, 1);
  st.insert(st.begin() + dim, s);
  Tensor r(storage_, dtype_, sh, st, offset_, "unsqueeze");
  return records(*this) ? reshape_record(*this, std::move(r), "UnsqueezeBackward0") : r;
}

Tensor Tensor::expand(const Shape& shape) const {
  if (int(shape.size()) < ndim_)
    throw ValueError("[expand] the number of sizes provided (" + std::to_string(shape.size()) +
                     ") must be greater or equal to the number of dimensions in the tensor (" +
                     std::to_string(ndim_) + ")");
  const int n = int(shape.size());
  Shape sh(n), st(n);
  for (int i = n - 1; i >= 0; --i) {
    const int j = i - (n - ndim_);
    if (j >= 0) {
      const int64_t want = shape[i] == -1 ? shape_[j] : shape[i];
      if (shape_[j] == want) {
        sh[i] = want;
        st[i] = strides_[j];
      } else if (shape_[j] == 1 && want >= 0) {
        sh[i] = want;
        st[i] = 0;
      } else {
        throw ValueError("[expand] the expanded size of the tensor (" + std::to_string(want) +
                         ") must match the existing size (" + std::to_string(shape_[j]) +
                         ") at non-singleton dimension " + std::to_string(i) + ". Target sizes: " +
                         shape_to_string(shape) + ". Tensor sizes: " + shape_str());
      }
    } else {
      if (shape[i] < 0)
        throw ValueError("[expand] the expanded size -1 is not allowed in a leading, non-existing dimension");
      sh[i] = shape[i];
      st[i] = 0;
    }
  }
  Tensor r(storage_, dtype_, sh, st, offset_, "expand");  // checks that numel fits int64
  if (!records(*this)) return r;
  // The engine sums the gradient back to this tensor's shape.
  return record_view(*this, std::move(r), "ExpandBackward0", [](FnNode&, Grads& g) { return Grads{g[0]}; });
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  if (shape.size() != strides.size())
    throw ValueError("[as_strided] mismatch in length of strides and shape");
  // The constructor checks, overflow-safe, that the furthest element lies inside the storage.
  if (records(*this))
    throw NotImplementedError("[as_strided] has no derivative in kiln yet, and the input requires grad");
  return Tensor(storage_, dtype_, shape, strides, offset, "as_strided");
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
  if (ndim_ == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, ndim_, "flatten");
  end_dim = wrap_dim(end_dim, ndim_, "flatten");
  if (start_dim > end_dim) throw ValueError("[flatten] start_dim cannot come after end_dim");
  Shape sh;
  for (int i = 0; i < start_dim; ++i) sh.push_back(shape_[i]);
  sh.push_back(shape_numel(shape().subspan(size_t(start_dim), size_t(end_dim - start_dim + 1)), "flatten"));
  for (int i = end_dim + 1; i < ndim_; ++i) sh.push_back(shape_[i]);
  return reshape(sh);
}

}  // namespace kiln
