// Contiguous float32 <-> narrow-float conversions, dispatched to the best SIMD
// target at run time.
#include "cpu/convert.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/convert.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kiln/float_types.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Placeholder bodies: scalar loops compiled per target.
void F32ToBF16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kiln/thread_pool.h"
namespace kiln::cpu {
HWY_EXPORT(F32ToBF16);

bool convert_contiguous(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == DType::Float32 && to == DType::BFloat16) {
    parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) {
      HWY_DYNAMIC_DISPATCH(F32ToBF16)(static_cast<const float*>(src) + b, static_cast<uint16_t*>(dst) + b, e - b);
    });
    return true;
  }
  return false;
}

const char* simd_target_name() {
  // The best target that is both compiled in and supported by this CPU.
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(targets & -targets);
}
}  // namespace kiln::cpu
#endif
