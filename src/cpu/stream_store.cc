// Highway kernels of cpu/stream_store.h, compiled per SIMD target and picked at run time.
#include "cpu/stream_store.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/stream_store.cc"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Streams whole aligned vectors; the unaligned head and the tail take plain
// stores. src == nullptr fills with zeros.
void StreamBytes(uint8_t* dst, const uint8_t* src, size_t n) {
  const hn::ScalableTag<uint8_t> d;
  const size_t N = hn::Lanes(d);
  size_t head = (N - reinterpret_cast<uintptr_t>(dst) % N) % N;
  if (head > n) head = n;
  if (src)
    std::memcpy(dst, src, head);
  else
    std::memset(dst, 0, head);
  size_t i = head;
  if (src) {
    for (; i + 2 * N <= n; i += 2 * N) {
      const auto a = hn::LoadU(d, src + i), b = hn::LoadU(d, src + i + N);
      hn::Stream(a, d, dst + i);
      hn::Stream(b, d, dst + i + N);
    }
  } else {
    const auto z = hn::Zero(d);
    for (; i + N <= n; i += N) hn::Stream(z, d, dst + i);
  }
  if (src)
    std::memcpy(dst + i, src + i, n - i);
  else
    std::memset(dst + i, 0, n - i);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(StreamBytes);

void stream_copy(void* dst, const void* src, size_t n) {
  HWY_DYNAMIC_DISPATCH(StreamBytes)(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
}
void stream_zero(void* dst, size_t n) {
  HWY_DYNAMIC_DISPATCH(StreamBytes)(static_cast<uint8_t*>(dst), nullptr, n);
}
void stream_fence() { hwy::FlushStream(); }
}  // namespace kiln::cpu
#endif
