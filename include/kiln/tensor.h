// kiln::Tensor: a strided view (up to 8 dims, element offset) into shared
// storage. Views share storage; copies (contiguous, clone, to) allocate.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/scalar.h"

namespace kiln {

inline constexpr int kMaxDims = 8;
using Shape = std::vector<int64_t>;

class Allocator;
namespace autograd {
class Node;
struct Meta;
}  // namespace autograd

// A block of memory that views point into, on one device. Owns it through that
// device's caching allocator, or borrows it from the outside with a deleter
// (host buffer import).
class Storage {
 public:
  // Allocates nbytes (64-byte aligned) from the host caching allocator.
  explicit Storage(size_t nbytes);
  // Allocates nbytes from allocator_for(device); NotImplementedError naming
  // `op` for a device this build lacks.
  Storage(size_t nbytes, Device device, const char* op = "empty");
  // Wraps external memory that lives on `device`; `release` runs when the last
  // view goes away. A device other than the CPU is taken on trust (kiln only
  // reads such memory through that device's kernels).
  Storage(void* data, size_t nbytes, std::function<void()> release, Device device = Device{});
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  // CPU storage reports "cpu" (no index, as torch); CUDA storage its index.
  Device device() const { return device_; }

  // Counts in-place writes to this memory (shared by every view of it, as
  // torch's version counter); autograd compares it with the version a saved
  // tensor had.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> version_{0};
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Allocator* allocator_ = nullptr;  // null: memory is borrowed, release_ frees it
  std::function<void()> release_;
  Device device_;
};

class Tensor {
 public:
  // An undefined tensor (no storage); defined() is false.
  Tensor() = default;
  // A view into `storage` (shape, strides in elements, offset in elements).
  // Every view is checked here, naming `op` in the error: sizes, strides and
  // offset >= 0 (ValueError), the product of the non-zero sizes fits int64
  // (ValueError), and a non-empty view's last element lies inside the storage
  // (IndexError; an empty view may sit anywhere whose byte offset fits int64,
  // as in torch). numel(), data_ptr() and byte strides therefore never wrap.
  Tensor(std::shared_ptr<Storage> storage, DType dtype, std::span<const int64_t> shape,
         std::span<const int64_t> strides, int64_t offset, const char* op = "tensor");

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  // The storage's device; an undefined tensor answers cpu.
  Device device() const { return storage_ ? storage_->device() : Device{}; }
  int dim() const { return ndim_; }
  std::span<const int64_t> shape() const { return {shape_.data(), size_t(ndim_)}; }
  std::span<const int64_t> strides() const { return {strides_.data(), size_t(ndim_)}; }
  Shape sizes() const { return Shape(shape_.begin(), shape_.begin() + ndim_); }
  Shape stride_vec() const { return Shape(strides_.begin(), strides_.begin() + ndim_); }
  int64_t size(int d) const;    // negative d counts from the end
  int64_t stride(int d) const;
  int64_t numel() const;  // fits int64 by construction
  int64_t offset() const { return offset_; }
  size_t itemsize() const { return kiln::itemsize(dtype_); }
  // numel() * itemsize(); ValueError when an expanded view's logical size does
  // not fit int64.
  size_t nbytes() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to element [0, 0, ...] (storage base + offset).
  void* data_ptr() const;
  template <typename T> T* data() const {
    if (dtype_of<T>() != dtype_) throw_data_dtype(dtype_of<T>());
    return static_cast<T*>(data_ptr());
  }
  // The single element of a one-element tensor, converted to T.
  template <typename T> T item() const;
  Scalar item() const;

  // ---- views (share storage) ----
  Tensor view(const Shape& shape) const;     // one dim may be -1; needs compatible strides
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor permute(const std::vector<int>& dims) const;
  Tensor transpose(int d0, int d1) const;
  Tensor t() const;  // transpose of a <= 2-D tensor
  Tensor narrow(int dim, int64_t start, int64_t length) const;
  // Python-style slice [start:end:step] along dim; start/end are clamped.
  Tensor slice(int dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int dim, int64_t index) const;
  Tensor squeeze() const;
  Tensor squeeze(int dim) const;
  Tensor unsqueeze(int dim) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a size
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;
  Tensor flatten(int start_dim = 0, int end_dim = -1) const;

  // ---- copies ----
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;  // *this when dtype matches
  // *this when already on `device` (same_device: "cpu:0" is "cpu"), as torch;
  // else a contiguous copy there (the copy op of the non-CPU end moves the
  // bytes). NotImplementedError when this build lacks either device.
  Tensor to(Device device) const;
  Tensor cpu() const { return to(Device{}); }
  // Copies src into this tensor (broadcasting src, converting dtype). Across
  // devices the copy runs on the non-CPU end (torch's rule), so a device
  // backend's copy kernel moves bytes to and from the host.
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(const Scalar& value);

  std::string repr() const;
  std::string shape_str() const;

  // ---- autograd (kiln/autograd.h) ----
  // The autograd state (requires_grad, grad, grad_fn) belongs to this tensor
  // and to the copies of it made afterwards (they share it, as references to
  // one torch tensor do); views and op results get their own.
  bool requires_grad() const { return autograd_ != nullptr && meta_requires_grad(); }
  // Sets requires_grad on a leaf; ValueError on a non-leaf turning it off, and
  // TypeError for a dtype that cannot carry gradients (integer, bool, FP8).
  Tensor& requires_grad_(bool requires_grad = true);
  // The accumulated gradient (undefined until a backward reaches this leaf).
  Tensor grad() const;
  void set_grad(const Tensor& grad);
  // The node that made this tensor (null for leaves).
  std::shared_ptr<autograd::Node> grad_fn() const;
  uint32_t output_nr() const;
  bool is_leaf() const;
  // The same data, cut from the graph (shares storage and version counter).
  Tensor detach() const;
  Tensor& detach_();
  // Keeps .grad on a non-leaf after backward.
  void retain_grad();
  bool retains_grad() const;
  // torch's Tensor.backward: autograd::backward({*this}, {gradient}, ...).
  void backward() const;
  void backward(const Tensor& gradient, bool retain_graph = false, bool create_graph = false) const;
  // The storage's version counter (0 for an undefined tensor).
  uint64_t version() const { return storage_ ? storage_->version() : 0; }
  // A hook on this tensor's gradient, run when it is computed; it may return a
  // replacement. Returns a handle for remove_hook.
  int register_hook(std::function<Tensor(const Tensor&)> hook);
  void remove_hook(int handle);
  const std::shared_ptr<autograd::Meta>& autograd_meta() const { return autograd_; }
  void set_autograd_meta(std::shared_ptr<autograd::Meta> meta) const { autograd_ = std::move(meta); }

 private:
  bool meta_requires_grad() const;
  Tensor& copy_data(const Tensor& src);  // copy_ without autograd
  [[noreturn]] void throw_data_dtype(DType asked) const;
  friend Tensor empty(const Shape&, DType, Device);
  // A contiguous tensor over all of a fresh storage that holds exactly its
  // elements: valid by construction, so the view checks are skipped (every op
  // output is made here).
  struct Fresh {};
  Tensor(Fresh, std::shared_ptr<Storage> storage, DType dtype, std::span<const int64_t> shape);
  // The constructor's view checks, for views made by editing a copy in place.
  void check_view(const char* op) const;

  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::Float32;
  int ndim_ = 0;
  int64_t offset_ = 0;
  std::array<int64_t, kMaxDims> shape_{};
  std::array<int64_t, kMaxDims> strides_{};
  mutable std::shared_ptr<autograd::Meta> autograd_;  // autograd state is not the view's value
};

// Wraps a dimension index (negative counts from the end) into [0, ndim); throws
// IndexError naming `op` when out of range.
int wrap_dim(int dim, int ndim, const char* op);
// Throws ValueError (naming `op`) when t maps two indices to one memory
// location (a dim of size > 1 with stride 0, as after expand): an op writing
// into such a tensor would give order-dependent results, so torch refuses too.
void assert_no_internal_overlap(const Tensor& t, const char* op);
// Row-major (C-contiguous) strides for shape; ValueError when they overflow int64.
Shape contiguous_strides(std::span<const int64_t> shape);
// Product of sizes; throws ValueError on a negative size or when the product of
// the non-zero sizes overflows int64 (the bound every Tensor keeps).
int64_t shape_numel(std::span<const int64_t> shape, const char* op);
std::string shape_to_string(std::span<const int64_t> shape);

// ---- factories ----
// New tensors on `device` (the CPU unless given); NotImplementedError for a
// device this build lacks. The *_like forms keep t's device.
Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device{});
Tensor empty_strided(const Shape& shape, const Shape& strides, DType dtype = DType::Float32,
                     Device device = Device{});
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = Device{});
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = Device{});
Tensor full(const Shape& shape, const Scalar& value, DType dtype, Device device = Device{});
Tensor full(const Shape& shape, const Scalar& value);  // dtype from the value, as torch.full
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor scalar_tensor(const Scalar& value, DType dtype, Device device = Device{});
// arange(start, end, step): dtype int64 when all three are integers, else float32.
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = Scalar(int64_t(1)));
// The range factories with a dtype allocate on `device` and compute there.
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype,
              Device device = Device{});
Tensor linspace(double start, double end, int64_t steps, DType dtype = DType::Float32,
                Device device = Device{});
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, DType dtype = DType::Float32,
                Device device = Device{});
Tensor eye(int64_t n, int64_t m = -1, DType dtype = DType::Float32, Device device = Device{});

// Wraps an external host buffer without copying. strides in elements; `release`
// runs once the last view is gone (empty: the caller keeps the buffer alive).
// ValueError, naming `op`, when the element count or the extent the strides span
// overflows int64 or exceeds the largest possible allocation.
Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype,
                 std::function<void()> release = {}, const char* op = "from_blob");
// Copies a host buffer of numel(shape) contiguous elements into a new tensor.
Tensor from_buffer_copy(const void* data, const Shape& shape, DType dtype);

}  // namespace kiln
