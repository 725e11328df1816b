// New tensors: empty and the fills built on it (on any device), and tensors
// over memory kiln does not own (from_blob, from_buffer_copy).
#include <cstring>
#include <memory>

#include "core/checked_math.h"
#include "kiln/allocator.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln {

namespace {
// Elements a strided layout spans from its first one: 1 + sum (size - 1) *
// stride, 0 when empty. ValueError on a negative size or stride, or when the
// element count or the span overflows int64.
int64_t strided_extent(std::span<const int64_t> shape, std::span<const int64_t> strides, const char* op) {
  if (shape.size() != strides.size())
    throw ValueError(std::string("[") + op + "] shape " + shape_to_string(shape) + " and strides " +
                     shape_to_string(strides) + " differ in length");
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0 || strides[i] < 0)
      throw ValueError(std::string("[") + op + "] size " + shape_to_string(shape) + " with strides " +
                       shape_to_string(strides) + ": negative sizes and strides are not supported");
  if (shape_numel(shape, op) == 0) return 0;
  int64_t last;
  if (!checked_last_offset(shape, strides, 0, &last) || last == INT64_MAX)
    throw ValueError(std::string("[") + op + "] size " + shape_to_string(shape) + " with strides " +
                     shape_to_string(strides) + " spans more elements than int64 can count");
  return last + 1;
}

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

Tensor empty(const Shape& shape, DType dtype, Device device) {
  const int64_t n = shape_numel(shape, "empty");
  std::shared_ptr<Storage> storage;
  try {
    storage = std::make_shared<Storage>(storage_bytes(n, dtype, "empty"), device);
  } catch (const OutOfMemoryError& e) {  // say which tensor: every op's output comes from here
    throw OutOfMemoryError("[allocate] cannot allocate " + std::to_string(e.bytes()) + " bytes for a " +
                               name(dtype) + " tensor of shape " + shape_to_string(shape) +
                               (device.is_cpu() ? "" : " on " + device.str()) + ": out of memory",
                           e.bytes());
  }
  return Tensor(Tensor::Fresh{}, std::move(storage), dtype, shape);
}

Tensor empty_strided(const Shape& shape, const Shape& strides, DType dtype, Device device) {
  const int64_t extent = strided_extent(shape, strides, "empty_strided");
  auto storage =
      std::make_shared<Storage>(storage_bytes(extent, dtype, "empty_strided"), device, "empty_strided");
  return Tensor(std::move(storage), dtype, shape, strides, 0, "empty_strided");
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, Scalar(int64_t(0)), dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, Scalar(int64_t(1)), dtype, device);
}

Tensor full(const Shape& shape, const Scalar& value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor full(const Shape& shape, const Scalar& value) { return full(shape, value, value.promotion_dtype()); }

// empty_like and zeros_like keep t's layout: core/memory_format.cc.
Tensor scalar_tensor(const Scalar& value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}

Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype,
                 std::function<void()> release, const char* op) {
  const int64_t extent = strided_extent(shape, strides, op);
  // Kernels access elements as T*: a misaligned buffer must be copied first.
  if (reinterpret_cast<uintptr_t>(data) % itemsize(dtype) != 0 && itemsize(dtype) <= 8)
    throw ValueError(std::string("[") + op + "] buffer address is not aligned to its " + name(dtype) +
                     " elements; copy it first");
  auto storage = std::make_shared<Storage>(data, storage_bytes(extent, dtype, op), std::move(release));
  return Tensor(std::move(storage), dtype, shape, strides, 0, op);
}

Tensor from_buffer_copy(const void* data, const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (t.nbytes()) std::memcpy(t.data_ptr(), data, t.nbytes());
  return t;
}

}  // namespace kiln
