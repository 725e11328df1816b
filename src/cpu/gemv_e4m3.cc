// Matrix-vector kernel for e4m3 weights (see gemv.h, gemv-inl.h): one
// translation unit per weight type keeps each compile small.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cpu/gemv.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/gemv_e4m3.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "cpu/gemv-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
template <class W>
void RowsFor(const GemvArgs& a, int64_t n0, int64_t n1) {
  if (a.w_no_nan) return gemv::Rows<gemv::NanChecked<W> >(a, n0, n1);
  gemv::Rows<W>(a, n0, n1);
}
void GemvRowsE4M3(const GemvArgs& a, int64_t n0, int64_t n1, bool test_subnormals) {
#if defined(KILN_GEMV_E4M3_TINY)
  // Listed subnormal codes replace the per-step test (and, on AVX2, the f16
  // route); not into float32 y (accumulate), which DAZ would read wrong.
  if (test_subnormals && a.sub_row_start && !a.accumulate)
    return RowsFor<gemv::WidenE4M3TinyListed>(a, n0, n1);
#endif
#if defined(KILN_GEMV_E4M3_TINY_TEST)
  if (test_subnormals) return RowsFor<gemv::WidenE4M3Tiny>(a, n0, n1);
  RowsFor<gemv::WidenE4M3TinyFma>(a, n0, n1);
#elif defined(KILN_GEMV_E4M3_TINY)
  if (test_subnormals) return RowsFor<gemv::WidenE4M3>(a, n0, n1);
  RowsFor<gemv::WidenE4M3TinyFma>(a, n0, n1);
#else
  (void)test_subnormals;
  RowsFor<gemv::WidenE4M3>(a, n0, n1);
#endif
}
}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(GemvRowsE4M3);

namespace {
E4M3Subnormals default_subnormals() {
  // Read on first use, which may be on a pool thread: a bad value is reported
  // and ignored rather than thrown there.
  if (const char* e = std::getenv("KILN_E4M3_SUBNORMALS")) {
    const std::string v = e;
    if (v == "test") return E4M3Subnormals::Test;
    if (v == "fma") return E4M3Subnormals::Fma;
    std::fprintf(stderr, "kiln: warning: KILN_E4M3_SUBNORMALS must be test or fma, not '%s'; ignored\n",
                 v.c_str());
  }
  return gemv_tuning().denormal_fma_fast ? E4M3Subnormals::Fma : E4M3Subnormals::Test;
}
std::atomic<int> g_subnormals{-1};  // -1: not chosen yet
}  // namespace

E4M3Subnormals e4m3_subnormals() {
  int v = g_subnormals.load(std::memory_order_relaxed);
  if (v < 0) {
    v = int(default_subnormals());
    g_subnormals.store(v, std::memory_order_relaxed);
  }
  return E4M3Subnormals(v);
}

void set_e4m3_subnormals(E4M3Subnormals mode) { g_subnormals.store(int(mode), std::memory_order_relaxed); }

void gemv_rows_e4m3_exact(const GemvArgs& a, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(GemvRowsE4M3)(a, n0, n1, e4m3_subnormals() == E4M3Subnormals::Test);
}
void gemv_rows_e4m3(const GemvArgs& a, int64_t n0, int64_t n1) {
  if (gemv_rows_dot(DType::Float8_e4m3fn, a, n0, n1, gemv_rows_e4m3_exact)) return;
  gemv_rows_e4m3_exact(a, n0, n1);
}
}  // namespace kiln::cpu
#endif
