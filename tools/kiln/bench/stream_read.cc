// See stream_read.h. Dispatched to the widest SIMD target at run time.
#include "bench/stream_read.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/stream_read.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::sys {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kStreams streams, one per equal part of the range, read in lockstep into as
// many accumulators: XOR is one cheap uop on any vector port, so the loads
// alone limit it.
template <int kStreams>
uint64_t StreamsXor(const uint64_t* HWY_RESTRICT w, size_t n, size_t pf) {
  const hn::ScalableTag<uint64_t> d;
  using V = hn::Vec<decltype(d)>;
  const size_t L = hn::Lanes(d);
  const size_t part = n / kStreams / L * L;
  const uint64_t* HWY_RESTRICT s[kStreams];
  V a[kStreams];
  for (int j = 0; j < kStreams; ++j) {
    s[j] = w + size_t(j) * part;
    a[j] = hn::Zero(d);
  }
  size_t i = 0;
  if (pf > 0) {
    for (; i + L + pf <= part; i += L) {
      if (i % 8 == 0)  // once per 64-byte line of each stream
        for (int j = 0; j < kStreams; ++j) hwy::Prefetch(s[j] + i + pf);
      for (int j = 0; j < kStreams; ++j) a[j] = hn::Xor(a[j], hn::LoadU(d, s[j] + i));
    }
  }
  for (; i < part; i += L)
    for (int j = 0; j < kStreams; ++j) a[j] = hn::Xor(a[j], hn::LoadU(d, s[j] + i));
  for (int j = 1; j < kStreams; ++j) a[0] = hn::Xor(a[0], a[j]);
  HWY_ALIGN uint64_t lanes[hn::MaxLanes(d)];
  hn::Store(a[0], d, lanes);
  uint64_t r = 0;
  for (size_t j = 0; j < L; ++j) r ^= lanes[j];
  for (size_t k = kStreams * part; k < n; ++k) r ^= w[k];  // what the equal parts left
  return r;
}

uint64_t StreamReadXor(const void* p, size_t bytes, size_t prefetch_bytes, int streams) {
  const uint64_t* w = static_cast<const uint64_t*>(p);
  if (streams >= 12) return StreamsXor<12>(w, bytes / 8, prefetch_bytes / 8);
  return StreamsXor<8>(w, bytes / 8, prefetch_bytes / 8);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::sys
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::sys {
HWY_EXPORT(StreamReadXor);
uint64_t stream_read_xor(const void* p, size_t bytes, size_t prefetch_bytes, int streams) {
  return HWY_DYNAMIC_DISPATCH(StreamReadXor)(p, bytes, prefetch_bytes, streams);
}
}  // namespace kiln::sys
#endif
