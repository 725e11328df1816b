// Matrix-vector kernel for bf16 weights (see gemv.h, gemv-inl.h): one
// translation unit per weight type keeps each compile small.
#include "cpu/gemv.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemv_bf16.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/gemv-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
void GemvRowsBF16(const GemvArgs& a, int64_t n0, int64_t n1) { gemv::Rows<gemv::WidenBF16>(a, n0, n1); }
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(GemvRowsBF16);
void gemv_rows_bf16_exact(const GemvArgs& a, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(GemvRowsBF16)(a, n0, n1);
}
void gemv_rows_bf16(const GemvArgs& a, int64_t n0, int64_t n1) {
  if (gemv_rows_dot(DType::BFloat16, a, n0, n1, gemv_rows_bf16_exact)) return;
  gemv_rows_bf16_exact(a, n0, n1);
}
}  // namespace kiln::cpu
#endif
