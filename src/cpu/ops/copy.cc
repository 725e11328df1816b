// CPU kernels of copy and fill (core/copy_ops.h): contiguous same-dtype
// copies are a threaded memcpy, contiguous conversions the vector converters
// of core/convert.h, everything else a strided cast loop.
#include <cstring>

#include "core/cast.h"
#include "core/convert.h"
#include "core/copy_ops.h"
#include "core/dense_layout.h"
#include "core/strided_loop.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

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

// dst = src (same shape, no overlap), converting dtypes.
void copy(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  // Contiguous, or one dense layout on both sides (a channels-last clone): the
  // elements are the same flat run of memory.
  const bool flat = (dst.is_contiguous() && src.is_contiguous()) ||
                    (std::ranges::equal(dst.strides(), src.strides()) && is_non_overlapping_and_dense(dst));
  if (flat) {
    if (src.dtype() == dst.dtype()) {
      char* d = static_cast<char*>(dst.data_ptr());
      const char* s = static_cast<const char*>(src.data_ptr());
      const int64_t bytes = n * int64_t(dst.itemsize());
      parallel_for(0, bytes, int64_t(1) << 20,
                   [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, size_t(e - b)); });
      return;
    }
    if (convert_contiguous(src.data_ptr(), src.dtype(), dst.data_ptr(), dst.dtype(), n)) return;
  }
  const Tensor* ops[2] = {&dst, &src};
  const StridedLoop loop = StridedLoop::make(dst.shape(), ops);
  dispatch<kAllSet>(dst.dtype(), "copy_", [&]<typename To>() {
    dispatch<kAllSet>(src.dtype(), "copy_", [&]<typename From>() { cast_loop<To, From>(loop); });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  const Tensor* ops[1] = {&dst};
  const StridedLoop loop = StridedLoop::make(dst.shape(), ops);
  dispatch<kAllSet>(dst.dtype(), "fill_", [&]<typename T>() {
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
}

}  // namespace

void register_copy_kernels() {
  ops::copy.set_kernel(DeviceKind::CPU, copy);
  ops::fill.set_kernel(DeviceKind::CPU, fill);
}

}  // namespace kiln::cpu
