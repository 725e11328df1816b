// See stream_read.h. Dispatched to the widest SIMD target at run time.
#include "cpu/stream_read.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/stream_read.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

uint64_t StreamReadXor(const void* p, size_t bytes, size_t prefetch_bytes) {
  const hn::ScalableTag<uint64_t> d;
  const size_t L = hn::Lanes(d);
  const uint64_t* HWY_RESTRICT w = static_cast<const uint64_t*>(p);
  const size_t n = bytes / 8;
  const size_t pf = prefetch_bytes / 8;
  // Eight independent chains: XOR is one cheap uop on any vector port, so the
  // loop is limited by the loads alone.
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  size_t i = 0;
  if (pf > 0) {
    for (; i + 8 * L + pf <= n; i += 8 * L) {
      // One prefetch per 64-byte line of this step.
      for (size_t b = 0; b < 8 * L * 8; b += 64) hwy::Prefetch(reinterpret_cast<const char*>(w + i + pf) + b);
      a0 = hn::Xor(a0, hn::LoadU(d, w + i + 0 * L));
      a1 = hn::Xor(a1, hn::LoadU(d, w + i + 1 * L));
      a2 = hn::Xor(a2, hn::LoadU(d, w + i + 2 * L));
      a3 = hn::Xor(a3, hn::LoadU(d, w + i + 3 * L));
      a4 = hn::Xor(a4, hn::LoadU(d, w + i + 4 * L));
      a5 = hn::Xor(a5, hn::LoadU(d, w + i + 5 * L));
      a6 = hn::Xor(a6, hn::LoadU(d, w + i + 6 * L));
      a7 = hn::Xor(a7, hn::LoadU(d, w + i + 7 * L));
    }
  }
  for (; i + 8 * L <= n; i += 8 * L) {
    a0 = hn::Xor(a0, hn::LoadU(d, w + i + 0 * L));
    a1 = hn::Xor(a1, hn::LoadU(d, w + i + 1 * L));
    a2 = hn::Xor(a2, hn::LoadU(d, w + i + 2 * L));
    a3 = hn::Xor(a3, hn::LoadU(d, w + i + 3 * L));
    a4 = hn::Xor(a4, hn::LoadU(d, w + i + 4 * L));
    a5 = hn::Xor(a5, hn::LoadU(d, w + i + 5 * L));
    a6 = hn::Xor(a6, hn::LoadU(d, w + i + 6 * L));
    a7 = hn::Xor(a7, hn::LoadU(d, w + i + 7 * L));
  }
  for (; i + L <= n; i += L) a0 = hn::Xor(a0, hn::LoadU(d, w + i));
  a0 = hn::Xor(hn::Xor(hn::Xor(a0, a1), hn::Xor(a2, a3)), hn::Xor(hn::Xor(a4, a5), hn::Xor(a6, a7)));
  HWY_ALIGN uint64_t lanes[hn::MaxLanes(d)];
  hn::Store(a0, d, lanes);
  uint64_t r = 0;
  for (size_t j = 0; j < L; ++j) r ^= lanes[j];
  for (; i < n; ++i) r ^= w[i];
  return r;
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(StreamReadXor);
uint64_t stream_read_xor(const void* p, size_t bytes, size_t prefetch_bytes) {
  return HWY_DYNAMIC_DISPATCH(StreamReadXor)(p, bytes, prefetch_bytes);
}
}  // namespace kiln::cpu
#endif
