// Matrix-vector kernel for e4m3 weights (see gemv.h, gemv-inl.h): one
// translation unit per weight type keeps each compile small.
#include "cpu/gemv.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemv_e4m3.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/gemv-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
void GemvRowsE4M3(const GemvArgs& a, int64_t n0, int64_t n1) {
#ifdef KILN_GEMV_E4M3_TINY
  gemv::Rows<gemv::WidenE4M3Tiny>(a, n0, n1);
#else
  gemv::Rows<gemv::WidenE4M3>(a, n0, n1);
#endif
}
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(GemvRowsE4M3);
void gemv_rows_e4m3(const GemvArgs& a, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(GemvRowsE4M3)(a, n0, n1);
}
}  // namespace kiln::cpu
#endif
