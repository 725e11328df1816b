// group_norm's statistics and normalisation loops, compiled per Highway target
// so the compiler vectorises them at that target's width. 32 independent
// float64 accumulators (never reassociated: no fast-math, no contraction)
// keep the bits the same on every target.
#include "cpu/group_norm_loops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/group_norm_loops.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {

// Independent accumulators: enough vectors in flight to hide the add
// latency at every width (4 x 8 doubles on AVX-512, 8 x 4 on AVX2).
constexpr int kLanes = 32;

template <typename T>
void Moments(const T* HWY_RESTRICT x, int64_t len, double* sum, double* m2) {
  constexpr int L = kLanes;
  double acc[L] = {};
  int64_t j = 0;
  for (; j + L <= len; j += L)
    for (int l = 0; l < L; ++l) acc[l] += double(x[j + l]);
  double s = 0;
  for (; j < len; ++j) s += double(x[j]);
  for (int l = 0; l < L; ++l) s += acc[l];
  const double m = s / double(len);
  double q[L] = {};
  j = 0;
  for (; j + L <= len; j += L)
    for (int l = 0; l < L; ++l) {
      const double d = double(x[j + l]) - m;
      q[l] += d * d;
    }
  double r = 0;
  for (; j < len; ++j) r += (double(x[j]) - m) * (double(x[j]) - m);
  for (int l = 0; l < L; ++l) r += q[l];
  *sum = s;
  *m2 = r;
}

void MomentsF32(const float* x, int64_t len, double* sum, double* m2) { Moments(x, len, sum, m2); }
void MomentsF64(const double* x, int64_t len, double* sum, double* m2) { Moments(x, len, sum, m2); }

template <typename T>
void ScaleShift(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t n, double a, double b) {
  for (int64_t i = 0; i < n; ++i) y[i] = T(double(x[i]) * a + b);
}

void ScaleShiftF32(const float* x, float* y, int64_t n, double a, double b) { ScaleShift(x, y, n, a, b); }
void ScaleShiftF64(const double* x, double* y, int64_t n, double a, double b) { ScaleShift(x, y, n, a, b); }

template <typename T>
void GradSums(const T* HWY_RESTRICT g, const T* HWY_RESTRICT x, int64_t n, double* gx, double* gs) {
  constexpr int L = kLanes;
  double a[L] = {}, b[L] = {};
  int64_t j = 0;
  for (; j + L <= n; j += L)
    for (int l = 0; l < L; ++l) {
      a[l] += double(g[j + l]) * double(x[j + l]);
      b[l] += double(g[j + l]);
    }
  double s = 0, t = 0;
  for (; j < n; ++j) {
    s += double(g[j]) * double(x[j]);
    t += double(g[j]);
  }
  for (int l = 0; l < L; ++l) {
    s += a[l];
    t += b[l];
  }
  *gx = s;
  *gs = t;
}

void GradSumsF32(const float* g, const float* x, int64_t n, double* gx, double* gs) {
  GradSums(g, x, n, gx, gs);
}
void GradSumsF64(const double* g, const double* x, int64_t n, double* gx, double* gs) {
  GradSums(g, x, n, gx, gs);
}

template <typename T>
void GradInput(const T* HWY_RESTRICT g, const T* HWY_RESTRICT x, T* HWY_RESTRICT dx, int64_t n, double c1,
               double c2, double c3) {
  for (int64_t i = 0; i < n; ++i) dx[i] = T(c1 * double(g[i]) + c2 * double(x[i]) + c3);
}

void GradInputF32(const float* g, const float* x, float* dx, int64_t n, double c1, double c2, double c3) {
  GradInput(g, x, dx, n, c1, c2, c3);
}
void GradInputF64(const double* g, const double* x, double* dx, int64_t n, double c1, double c2, double c3) {
  GradInput(g, x, dx, n, c1, c2, c3);
}

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(MomentsF32);
HWY_EXPORT(MomentsF64);
HWY_EXPORT(ScaleShiftF32);
HWY_EXPORT(ScaleShiftF64);
HWY_EXPORT(GradSumsF32);
HWY_EXPORT(GradSumsF64);
HWY_EXPORT(GradInputF32);
HWY_EXPORT(GradInputF64);

void chunk_moments(const float* x, int64_t len, double* sum, double* m2) {
  HWY_DYNAMIC_DISPATCH(MomentsF32)(x, len, sum, m2);
}
void chunk_moments(const double* x, int64_t len, double* sum, double* m2) {
  HWY_DYNAMIC_DISPATCH(MomentsF64)(x, len, sum, m2);
}
void scale_shift(const float* x, float* y, int64_t n, double a, double b) {
  HWY_DYNAMIC_DISPATCH(ScaleShiftF32)(x, y, n, a, b);
}
void scale_shift(const double* x, double* y, int64_t n, double a, double b) {
  HWY_DYNAMIC_DISPATCH(ScaleShiftF64)(x, y, n, a, b);
}

void grad_sums(const float* g, const float* x, int64_t n, double* gx, double* gs) {
  HWY_DYNAMIC_DISPATCH(GradSumsF32)(g, x, n, gx, gs);
}
void grad_sums(const double* g, const double* x, int64_t n, double* gx, double* gs) {
  HWY_DYNAMIC_DISPATCH(GradSumsF64)(g, x, n, gx, gs);
}
void grad_input(const float* g, const float* x, float* dx, int64_t n, double c1, double c2, double c3) {
  HWY_DYNAMIC_DISPATCH(GradInputF32)(g, x, dx, n, c1, c2, c3);
}
void grad_input(const double* g, const double* x, double* dx, int64_t n, double c1, double c2, double c3) {
  HWY_DYNAMIC_DISPATCH(GradInputF64)(g, x, dx, n, c1, c2, c3);
}

}  // namespace kiln::cpu
#endif
