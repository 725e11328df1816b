#include "kiln/tensor.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/strided_loop.h"
#include "kiln/allocator.h"

namespace kiln {

// ---- Storage ----------------------------------------------------------------

Storage::Storage(size_t nbytes) : data_(allocate(nbytes)), nbytes_(nbytes) {}

Storage::Storage(void* data, size_t nbytes, std::function<void()> release)
    : data_(data), nbytes_(nbytes), release_(std::move(release)) {
  if (!release_) release_ = [] {};
}

Storage::~Storage() {
  if (release_) {
    release_();
  } else {
    deallocate(data_, nbytes_);
  }
}

// ---- helpers ----------------------------------------------------------------

int wrap_dim(int dim, int ndim, const char* op) {
  const int n = std::max(ndim, 1);  // a 0-d tensor accepts dim 0 and -1
  if (dim < -n || dim >= n)
    throw IndexError(std::string("[") + op + "] dimension out of range (expected to be in range of [" +
                     std::to_string(-n) + ", " + std::to_string(n - 1) + "], but got " +
                     std::to_string(dim) + ")");
  return dim < 0 ? dim + n : dim;
}

void assert_no_internal_overlap(const Tensor& t, const char* op) {
  for (int d = 0; d < t.dim(); ++d)
    if (t.strides()[d] == 0 && t.shape()[d] > 1)
      throw ValueError(std::string("[") + op + "] unsupported operation: more than one element of the "
                       "written-to tensor (shape " + t.shape_str() + ", strides " +
                       shape_to_string(t.strides()) + ") refers to a single memory location; "
                       "clone() it first");
}

Shape contiguous_strides(std::span<const int64_t> shape) {
  Shape s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

int64_t shape_numel(std::span<const int64_t> shape, const char* op) {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s < 0)
      throw ValueError(std::string("[") + op + "] negative dimension in shape " + shape_to_string(shape));
    if (s != 0 && n > INT64_MAX / s)
      throw ValueError(std::string("[") + op + "] shape " + shape_to_string(shape) + " is too large");
    n *= s;
  }
  return n;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// ---- Tensor -----------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, std::span<const int64_t> shape,
               std::span<const int64_t> strides, int64_t offset)
    : storage_(std::move(storage)), dtype_(dtype), ndim_(int(shape.size())), offset_(offset) {
  if (shape.size() > size_t(kMaxDims))
    throw ValueError("[tensor] at most " + std::to_string(kMaxDims) + " dims are supported, got " +
                     std::to_string(shape.size()));
  if (shape.size() != strides.size())
    throw ValueError("[tensor] shape " + shape_to_string(shape) + " and strides " +
                     shape_to_string(strides) + " differ in length");
  std::copy(shape.begin(), shape.end(), shape_.begin());
  std::copy(strides.begin(), strides.end(), strides_.begin());
}

int64_t Tensor::size(int d) const { return shape_[wrap_dim(d, ndim_, "size")]; }
int64_t Tensor::stride(int d) const { return strides_[wrap_dim(d, ndim_, "stride")]; }

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (shape_[i] == 0) return true;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (!storage_) throw ValueError("[data_ptr] tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * int64_t(itemsize());
}

void Tensor::throw_data_dtype(DType asked) const {
  throw TypeError(std::string("[data] tensor has dtype ") + name(dtype_) + ", asked for " + name(asked));
}

template <typename T> T Tensor::item() const {
  return item().to<T>();
}
template bool Tensor::item<bool>() const;
template int64_t Tensor::item<int64_t>() const;
template double Tensor::item<double>() const;
template float Tensor::item<float>() const;

Scalar Tensor::item() const {
  if (numel() != 1)
    throw ValueError("[item] a Tensor with " + std::to_string(numel()) +
                     " elements cannot be converted to a scalar");
  return dispatch<kAllSet>(dtype_, "item", [&]<typename T>() -> Scalar {
    const T v = *static_cast<const T*>(data_ptr());
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (is_complex_v<T>) return Scalar(complex128(v));
    else if constexpr (std::is_integral_v<T>) return Scalar(v);
    else return Scalar(double(compute_t<T>(v)));  // f64 keeps its precision
  });
}

// ---- views ------------------------------------------------------------------

namespace {

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
    } else {
      known *= out[i];
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
  int64_t numel = 1;
  for (auto s : old_shape) numel *= s;
  if (numel == 0) {
    *out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = int64_t(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        (*out)[view_d] = view_numel * chunk_base_stride;
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

Tensor Tensor::view(const Shape& shape) const {
  const Shape new_shape = infer_shape(shape, numel(), "view");
  Shape new_strides;
  if (!view_strides(this->shape(), strides(), new_shape, &new_strides))
    throw ValueError("[view] view size " + shape_to_string(new_shape) +
                     " is not compatible with input tensor's size " + shape_str() +
                     " and stride " + shape_to_string(strides()) +
                     " (at least one dimension spans across two contiguous subspaces); use reshape");
  return Tensor(storage_, dtype_, new_shape, new_strides, offset_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  const Shape new_shape = infer_shape(shape, numel(), "reshape");
  Shape new_strides;
  if (view_strides(this->shape(), strides(), new_shape, &new_strides))
    return Tensor(storage_, dtype_, new_shape, new_strides, offset_);
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
  return Tensor(storage_, dtype_, sh, st, offset_);
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
  return r;
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
  if (start < 0 || start > n || length < 0 || start + length > n)
    throw IndexError("[narrow] start (" + std::to_string(start) + ") + length (" +
                     std::to_string(length) + ") exceeds dimension size (" + std::to_string(n) + ")");
  Tensor r = *this;
  r.shape_[dim] = length;
  r.offset_ += start * strides_[dim];
  return r;
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
  r.shape_[dim] = (end - start + step - 1) / step;
  r.strides_[dim] = strides_[dim] * step;
  r.offset_ += start * strides_[dim];
  return r;
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
  return Tensor(storage_, dtype_, sh, st, offset_ + index * strides_[dim]);
}

Tensor Tensor::squeeze() const {
  Shape sh, st;
  for (int i = 0; i < ndim_; ++i) {
    if (shape_[i] == 1) continue;
    sh.push_back(shape_[i]);
    st.push_back(strides_[i]);
  }
  return Tensor(storage_, dtype_, sh, st, offset_);
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
  return Tensor(storage_, dtype_, sh, st, offset_);
}

Tensor Tensor::unsqueeze(int dim) const {
  dim = wrap_dim(dim, ndim_ + 1, "unsqueeze");
  Shape sh = sizes(), st = stride_vec();
  const int64_t s = dim < ndim_ ? shape_[dim] * strides_[dim] : 1;
  sh.insert(sh.begin() + dim, 1);
  st.insert(st.begin() + dim, s);
  return Tensor(storage_, dtype_, sh, st, offset_);
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
  return Tensor(storage_, dtype_, sh, st, offset_);
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  if (shape.size() != strides.size())
    throw ValueError("[as_strided] mismatch in length of strides and shape");
  if (offset < 0) throw ValueError("[as_strided] negative storage offset");
  // The furthest element reached must lie inside the storage.
  int64_t max_off = offset;
  bool empty_view = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw ValueError("[as_strided] negative size in shape " + shape_to_string(shape));
    if (strides[i] < 0) throw ValueError("[as_strided] negative strides are not supported");
    if (shape[i] == 0) empty_view = true;
    else max_off += (shape[i] - 1) * strides[i];
  }
  if (!empty_view && (max_off + 1) * int64_t(itemsize()) > int64_t(storage_->nbytes()))
    throw IndexError("[as_strided] size " + shape_to_string(shape) + ", stride " + shape_to_string(strides) +
                     " and offset " + std::to_string(offset) + " reach outside the storage of " +
                     std::to_string(storage_->nbytes()) + " bytes");
  return Tensor(storage_, dtype_, shape, strides, offset);
}

Tensor Tensor::flatten(int start_dim, int end_dim) const {
  if (ndim_ == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, ndim_, "flatten");
  end_dim = wrap_dim(end_dim, ndim_, "flatten");
  if (start_dim > end_dim) throw ValueError("[flatten] start_dim cannot come after end_dim");
  Shape sh;
  for (int i = 0; i < start_dim; ++i) sh.push_back(shape_[i]);
  int64_t m = 1;
  for (int i = start_dim; i <= end_dim; ++i) m *= shape_[i];
  sh.push_back(m);
  for (int i = end_dim + 1; i < ndim_; ++i) sh.push_back(shape_[i]);
  return reshape(sh);
}

// ---- copies -----------------------------------------------------------------

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), dtype_);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out = empty(sizes(), dtype);
  out.copy_(*this);
  return out;
}

std::string Tensor::shape_str() const { return shape_to_string(shape()); }

// ---- factories --------------------------------------------------------------

namespace {
// Bytes for n elements of dtype; ValueError when that does not fit in memory's
// address range (a size_t multiply would wrap to a tiny buffer).
size_t storage_bytes(int64_t n, DType dtype, const char* op) {
  constexpr uint64_t kMaxBytes = uint64_t(1) << 62;
  if (n < 0 || uint64_t(n) > kMaxBytes / itemsize(dtype))
    throw ValueError(std::string("[") + op + "] " + std::to_string(n) + " elements of " + name(dtype) +
                     " exceed the largest possible allocation");
  return size_t(n) * itemsize(dtype);
}
}  // namespace

Tensor empty(const Shape& shape, DType dtype) {
  const int64_t n = shape_numel(shape, "empty");
  auto storage = std::make_shared<Storage>(storage_bytes(n, dtype, "empty"));
  return Tensor(std::move(storage), dtype, shape, contiguous_strides(shape), 0);
}

Tensor empty_strided(const Shape& shape, const Shape& strides, DType dtype) {
  if (shape.size() != strides.size())
    throw ValueError("[empty_strided] shape and strides differ in length");
  int64_t extent = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0)
      throw ValueError("[empty_strided] negative size or stride");
    if (shape[i] == 0) extent = 0;
  }
  if (extent) {
    shape_numel(shape, "empty_strided");
    for (size_t i = 0; i < shape.size(); ++i) {
      if (strides[i] != 0 && shape[i] - 1 > (INT64_MAX / 4 - extent) / strides[i])
        throw ValueError("[empty_strided] size " + shape_to_string(shape) + " with strides " +
                         shape_to_string(strides) + " exceeds the largest possible allocation");
      extent += (shape[i] - 1) * strides[i];
    }
  }
  auto storage = std::make_shared<Storage>(storage_bytes(extent, dtype, "empty_strided"));
  return Tensor(std::move(storage), dtype, shape, strides, 0);
}

Tensor zeros(const Shape& shape, DType dtype) { return full(shape, Scalar(int64_t(0)), dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, Scalar(int64_t(1)), dtype); }

Tensor full(const Shape& shape, const Scalar& value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill_(value);
  return t;
}

Tensor full(const Shape& shape, const Scalar& value) {
  return full(shape, value, value.promotion_dtype());
}

Tensor empty_like(const Tensor& t) { return empty(t.sizes(), t.dtype()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.sizes(), t.dtype()); }
Tensor scalar_tensor(const Scalar& value, DType dtype) { return full({}, value, dtype); }

Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype,
                 std::function<void()> release) {
  if (shape.size() != strides.size()) throw ValueError("[from_blob] shape and strides differ in length");
  int64_t extent = 1;
  bool empty_view = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw ValueError("[from_blob] negative size");
    if (shape[i] == 0) empty_view = true;
    else extent += (shape[i] - 1) * std::max<int64_t>(strides[i], 0);
  }
  if (empty_view) extent = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] < 0) throw ValueError("[from_blob] negative strides are not supported; copy the array first");
  // Kernels access elements as T*: a misaligned buffer must be copied first.
  if (reinterpret_cast<uintptr_t>(data) % itemsize(dtype) != 0 && itemsize(dtype) <= 8)
    throw ValueError(std::string("[from_blob] buffer address is not aligned to its ") + name(dtype) +
                     " elements; copy it first");
  auto storage = std::make_shared<Storage>(data, storage_bytes(extent, dtype, "from_blob"), std::move(release));
  return Tensor(std::move(storage), dtype, shape, strides, 0);
}

Tensor from_buffer_copy(const void* data, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (t.nbytes()) std::memcpy(t.data_ptr(), data, t.nbytes());
  return t;
}

// ---- StridedLoop -----------------------------------------------------------

StridedLoop StridedLoop::make(std::span<const int64_t> shape, std::span<const Tensor* const> operands) {
  StridedLoop loop;
  loop.nops = int(operands.size());
  loop.numel = 1;
  for (auto s : shape) loop.numel *= s;
  for (int k = 0; k < loop.nops; ++k) loop.data[k] = static_cast<char*>(operands[k]->data_ptr());
  // Drop size-1 dims, then merge dim d into d-1 when every operand steps
  // through both as one run.
  int nd = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    loop.shape[nd] = shape[d];
    for (int k = 0; k < loop.nops; ++k)
      loop.strides[k][nd] = operands[k]->strides()[d] * int64_t(operands[k]->itemsize());
    ++nd;
  }
  if (nd == 0) {
    loop.shape[0] = 1;
    for (int k = 0; k < loop.nops; ++k) loop.strides[k][0] = int64_t(operands[k]->itemsize());
    nd = 1;
  }
  int out = 0;
  for (int d = 1; d < nd; ++d) {
    bool mergeable = true;
    for (int k = 0; k < loop.nops; ++k)
      if (loop.strides[k][out] != loop.strides[k][d] * loop.shape[d]) mergeable = false;
    if (mergeable) {
      loop.shape[out] *= loop.shape[d];
      for (int k = 0; k < loop.nops; ++k) loop.strides[k][out] = loop.strides[k][d];
    } else {
      ++out;
      loop.shape[out] = loop.shape[d];
      for (int k = 0; k < loop.nops; ++k) loop.strides[k][out] = loop.strides[k][d];
    }
  }
  loop.ndim = out + 1;
  return loop;
}

}  // namespace kiln
