// copy_ (broadcasting, dtype-converting) and fill_.
#include <cstring>

#include "core/cast.h"
#include "core/convert.h"
#include "core/strided_loop.h"
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

template <typename To, typename From>
void cast_loop(const StridedLoop& loop) {
  for_each(loop, kElementwiseGrain, [](char** p, const int64_t* s, int64_t n) {
    char* out = p[0];
    const char* in = p[1];
    if (s[0] == int64_t(sizeof(To)) && s[1] == int64_t(sizeof(From))) {
      To* o = reinterpret_cast<To*>(out);
      const From* x = reinterpret_cast<const From*>(in);
      for (int64_t i = 0; i < n; ++i) o[i] = cast<To>(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        From v;
        std::memcpy(&v, in + i * s[1], sizeof(From));
        const To r = cast<To>(v);
        std::memcpy(out + i * s[0], &r, sizeof(To));
      }
    }
  });
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src_in) {
  if (!defined() || !src_in.defined()) throw ValueError("[copy_] undefined tensor");
  assert_no_internal_overlap(*this, "copy_");
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
  const int64_t n = numel();
  if (n == 0) return *this;
  if (is_contiguous() && src.is_contiguous()) {
    if (src.dtype() == dtype_) {
      char* d = static_cast<char*>(data_ptr());
      const char* s = static_cast<const char*>(src.data_ptr());
      const int64_t bytes = n * int64_t(itemsize());
      parallel_for(0, bytes, int64_t(1) << 20, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
      return *this;
    }
    if (convert_contiguous(src.data_ptr(), src.dtype(), data_ptr(), dtype_, n)) return *this;
  }
  const Tensor* ops[2] = {this, &src};
  const StridedLoop loop = StridedLoop::make(shape(), ops);
  dispatch<kAllSet>(dtype_, "copy_", [&]<typename To>() {
    dispatch<kAllSet>(src.dtype(), "copy_", [&]<typename From>() { cast_loop<To, From>(loop); });
  });
  return *this;
}

Tensor& Tensor::fill_(const Scalar& value) {
  if (numel() == 0) return *this;
  assert_no_internal_overlap(*this, "fill_");
  const Tensor* ops[1] = {this};
  const StridedLoop loop = StridedLoop::make(shape(), ops);
  dispatch<kAllSet>(dtype_, "fill_", [&]<typename T>() {
    const T v = value.to<T>();
    for_each(loop, kElementwiseGrain, [v](char** p, const int64_t* s, int64_t n) {
      if (s[0] == int64_t(sizeof(T))) {
        T* o = reinterpret_cast<T*>(p[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * s[0], &v, sizeof(T));
      }
    });
  });
  return *this;
}

}  // namespace kiln
