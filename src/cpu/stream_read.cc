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
  // Eight streams, one per eighth of the range, read in lockstep into eight
  // accumulators: as many concurrent streams as an 8-row GEMV tile keeps (one
  // sequential stream per core leaves the hardware prefetcher short of work),
  // and XOR is one cheap uop on any vector port, so the loads alone limit it.
  const size_t part = n / 8 / L * L;
  const uint64_t* HWY_RESTRICT s[8];
  for (int j = 0; j < 8; ++j) s[j] = w + size_t(j) * part;
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  size_t i = 0;
  if (pf > 0) {
    for (; i + L + pf <= part; i += L) {
      if (i % 8 == 0)  // once per 64-byte line of each stream
        for (int j = 0; j < 8; ++j) hwy::Prefetch(s[j] + i + pf);
      a0 = hn::Xor(a0, hn::LoadU(d, s[0] + i));
      a1 = hn::Xor(a1, hn::LoadU(d, s[1] + i));
      a2 = hn::Xor(a2, hn::LoadU(d, s[2] + i));
      a3 = hn::Xor(a3, hn::LoadU(d, s[3] + i));
      a4 = hn::Xor(a4, hn::LoadU(d, s[4] + i));
      a5 = hn::Xor(a5, hn::LoadU(d, s[5] + i));
      a6 = hn::Xor(a6, hn::LoadU(d, s[6] + i));
      a7 = hn::Xor(a7, hn::LoadU(d, s[7] + i));
    }
  }
  for (; i < part; i += L) {
    a0 = hn::Xor(a0, hn::LoadU(d, s[0] + i));
    a1 = hn::Xor(a1, hn::LoadU(d, s[1] + i));
    a2 = hn::Xor(a2, hn::LoadU(d, s[2] + i));
    a3 = hn::Xor(a3, hn::LoadU(d, s[3] + i));
    a4 = hn::Xor(a4, hn::LoadU(d, s[4] + i));
    a5 = hn::Xor(a5, hn::LoadU(d, s[5] + i));
    a6 = hn::Xor(a6, hn::LoadU(d, s[6] + i));
    a7 = hn::Xor(a7, hn::LoadU(d, s[7] + i));
  }
  a0 = hn::Xor(hn::Xor(hn::Xor(a0, a1), hn::Xor(a2, a3)), hn::Xor(hn::Xor(a4, a5), hn::Xor(a6, a7)));
  HWY_ALIGN uint64_t lanes[hn::MaxLanes(d)];
  hn::Store(a0, d, lanes);
  uint64_t r = 0;
  for (size_t j = 0; j < L; ++j) r ^= lanes[j];
  for (size_t k = 8 * part; k < n; ++k) r ^= w[k];  // what the eight equal parts left
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
