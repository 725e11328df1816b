// Matrix-vector kernel for e5m2 weights (see gemv.h, gemv-inl.h): one
// translation unit per weight type keeps each compile small.
#include "cpu/gemv.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemv_e5m2.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/gemv-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
void GemvRowsE5M2(const GemvArgs& a, int64_t n0, int64_t n1) { gemv::Rows<gemv::WidenE5M2>(a, n0, n1); }
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(GemvRowsE5M2);
void gemv_rows_e5m2_exact(const GemvArgs& a, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(GemvRowsE5M2)(a, n0, n1);
}
void gemv_rows_e5m2(const GemvArgs& a, int64_t n0, int64_t n1) {
  if (gemv_rows_dot(DType::Float8_e5m2, a, n0, n1, gemv_rows_e5m2_exact)) return;
  gemv_rows_e5m2_exact(a, n0, n1);
}
}  // namespace kiln::cpu
#endif
