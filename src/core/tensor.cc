#include "kiln/tensor.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/checked_math.h"
#include "kiln/allocator.h"
#include "kiln/memory_format.h"

namespace kiln {

// ---- Storage ----------------------------------------------------------------

namespace {
// The device a storage reports: the host has no index (torch's device(type='cpu')),
// an accelerator always has one ("cuda" means the current device, cuda:0).
Device storage_device(Device d) {
  if (d.kind == DeviceKind::CPU) return Device{};
  return Device{d.kind, d.has_index() ? d.index : 0};
}
}  // namespace

Storage::Storage(size_t nbytes) : Storage(nbytes, Device{}) {}

Storage::Storage(size_t nbytes, Device device, const char* op)
    : allocator_(&allocator_for(device, op)), device_(storage_device(device)) {
  data_ = allocator_->allocate(nbytes);
  nbytes_ = nbytes;
}

Storage::Storage(void* data, size_t nbytes, std::function<void()> release, Device device)
    : data_(data), nbytes_(nbytes), release_(std::move(release)), device_(storage_device(device)) {}

Storage::~Storage() {
  if (allocator_) {
    allocator_->deallocate(data_, nbytes_);
  } else if (release_) {
    release_();
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
    if (i > 0 && !checked_mul(acc, std::max<int64_t>(shape[i], 1), &acc))
      throw ValueError("[contiguous_strides] the strides of shape " + shape_to_string(shape) +
                       " overflow int64");
  }
  return s;
}

int64_t shape_numel(std::span<const int64_t> shape, const char* op) {
  for (int64_t s : shape)
    if (s < 0)
      throw ValueError(std::string("[") + op + "] negative dimension in shape " + shape_to_string(shape));
  int64_t n;
  if (!checked_numel(shape, &n))
    throw ValueError(std::string("[") + op + "] shape " + shape_to_string(shape) +
                     " is too large (its number of elements overflows int64)");
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
               std::span<const int64_t> strides, int64_t offset, const char* op)
    : storage_(std::move(storage)), dtype_(dtype), ndim_(int(shape.size())), offset_(offset) {
  if (shape.size() > size_t(kMaxDims))
    throw ValueError(std::string("[") + op + "] at most " + std::to_string(kMaxDims) +
                     " dims are supported, got " + std::to_string(shape.size()));
  if (shape.size() != strides.size())
    throw ValueError(std::string("[") + op + "] shape " + shape_to_string(shape) + " and strides " +
                     shape_to_string(strides) + " differ in length");
  std::copy(shape.begin(), shape.end(), shape_.begin());
  std::copy(strides.begin(), strides.end(), strides_.begin());
  check_view(op);
}

Tensor::Tensor(Fresh, std::shared_ptr<Storage> storage, DType dtype, std::span<const int64_t> shape)
    : storage_(std::move(storage)), dtype_(dtype), ndim_(int(shape.size())) {
  if (shape.size() > size_t(kMaxDims))
    throw ValueError("[empty] at most " + std::to_string(kMaxDims) + " dims are supported, got " +
                     std::to_string(shape.size()));
  // The element count fit int64 and the storage holds it, so no stride (a
  // partial product of sizes >= 1) can overflow.
  int64_t acc = 1;
  for (int i = ndim_; i-- > 0;) {
    shape_[i] = shape[i];
    strides_[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
}

void Tensor::check_view(const char* op) const {
  const auto sh = shape(), st = strides();
  auto layout = [&] {
    return "size " + shape_to_string(sh) + ", stride " + shape_to_string(st) + " and storage offset " +
           std::to_string(offset_);
  };
  for (int i = 0; i < ndim_; ++i)
    if (sh[i] < 0 || st[i] < 0)
      throw ValueError(std::string("[") + op + "] " + layout() +
                       ": negative sizes and strides are not supported");
  if (offset_ < 0) throw ValueError(std::string("[") + op + "] " + layout() + ": negative storage offset");
  int64_t n;
  if (!checked_numel(sh, &n))
    throw ValueError(std::string("[") + op + "] shape " + shape_to_string(sh) +
                     " is too large (its number of elements overflows int64)");
  const int64_t isz = int64_t(itemsize());
  int64_t end;  // bytes up to the end of the last element
  if (n == 0) {
    // Nothing is read; only the data pointer (offset * itemsize) must be computable.
    if (!checked_mul(offset_, isz, &end))
      throw IndexError(std::string("[") + op + "] " + layout() + ": the byte offset overflows int64");
    return;
  }
  const uint64_t have = storage_ ? uint64_t(storage_->nbytes()) : 0;
  int64_t last;
  const bool fits = checked_last_offset(sh, st, offset_, &last) && checked_add(last, 1, &end) &&
                    checked_mul(end, isz, &end);
  if (!fits || uint64_t(end) > have)
    throw IndexError(std::string("[") + op + "] " + layout() + " reach outside the storage of " +
                     std::to_string(have) + " bytes (they need " +
                     (fits ? std::to_string(end) : std::string("more than 2^63")) + " bytes of " +
                     name(dtype_) + ")");
}

int64_t Tensor::size(int d) const { return shape_[wrap_dim(d, ndim_, "size")]; }
int64_t Tensor::stride(int d) const { return strides_[wrap_dim(d, ndim_, "stride")]; }

int64_t Tensor::numel() const {
  int64_t n = 1;  // cannot overflow: the constructor checked the product
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

size_t Tensor::nbytes() const {
  int64_t b;
  if (!checked_mul(numel(), int64_t(itemsize()), &b))
    throw ValueError("[nbytes] " + std::to_string(numel()) + " elements of " + name(dtype_) + " (shape " +
                     shape_str() + ") overflow an int64 byte count");
  return size_t(b);
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
  if (!device().is_cpu()) return cpu().item();  // read on the host
  return dispatch<kAllSet>(dtype_, "item", [&]<typename T>() -> Scalar {
    const T v = *static_cast<const T*>(data_ptr());
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (is_complex_v<T>) return Scalar(complex128(v));
    else if constexpr (std::is_integral_v<T>) return Scalar(v);
    else return Scalar(double(compute_t<T>(v)));  // f64 keeps its precision
  });
}

// ---- copies -----------------------------------------------------------------

// clone, to(dtype) and the memory-format forms are in core/memory_format.cc.
Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return kiln::clone(*this, MemoryFormat::Contiguous);
}

Tensor Tensor::to(Device device) const {
  const Device here = this->device();
  if (same_device(here, device)) return *this;
  // Both ends must be compiled in; this names the one that is not.
  allocator_for(here, "to");
  Tensor out;
  try {
    out = empty(sizes(), dtype_, device);
  } catch (const NotImplementedError&) {
    allocator_for(device, "to");  // say "[to] ..." rather than "[empty] ..."
    throw;
  }
  out.copy_(*this);
  return out;
}

std::string Tensor::shape_str() const { return shape_to_string(shape()); }

}  // namespace kiln
