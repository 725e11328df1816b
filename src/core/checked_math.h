// Overflow-checked int64 arithmetic for sizes, strides and offsets. Shapes and
// strides come from users, files and foreign buffers; a product that wraps can
// turn an out-of-bounds view into a small one that passes a bounds check. Each
// helper returns false, instead of a wrapped value, when the exact result does
// not fit in int64. They run where views are made, never per element.
#pragma once

#include <cstdint>
#include <span>

namespace kiln {

// *out = a * b.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
// *out = a + b.
inline bool checked_add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// *out = a + b * c (an offset advanced by index * stride).
inline bool checked_mul_add(int64_t a, int64_t b, int64_t c, int64_t* out) {
  int64_t p;
  return checked_mul(b, c, &p) && checked_add(a, p, out);
}

// Element count of a shape of non-negative sizes. False when the product of its
// non-zero sizes overflows, even if a zero size makes the count 0: kiln keeps
// that bound for every shape, so that contiguous strides (products of trailing
// sizes) and any partial product of sizes fit in int64 as well.
inline bool checked_numel(std::span<const int64_t> shape, int64_t* out) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t s : shape) {
    if (s == 0)
      zero = true;
    else if (__builtin_mul_overflow(n, s, &n))
      return false;
  }
  *out = zero ? 0 : n;
  return true;
}

// Element offset of the last element of a non-empty view (all sizes >= 1, all
// strides >= 0): offset + sum over dims of (size - 1) * stride.
inline bool checked_last_offset(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                int64_t offset, int64_t* out) {
  int64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i)
    if (!checked_mul_add(last, shape[i] - 1, strides[i], &last)) return false;
  *out = last;
  return true;
}

}  // namespace kiln
