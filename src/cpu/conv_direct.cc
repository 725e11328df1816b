// SIMD row primitives of the direct convolution kernels (see conv_direct.h).
#include "cpu/conv_direct.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/conv_direct.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kiln::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <typename T>
void Axpy(T w, const T* HWY_RESTRICT x, T* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto wv = hn::Set(d, w);
  int64_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    hn::StoreU(hn::MulAdd(wv, hn::LoadU(d, x + j), hn::LoadU(d, y + j)), d, y + j);
    hn::StoreU(hn::MulAdd(wv, hn::LoadU(d, x + j + N), hn::LoadU(d, y + j + N)), d, y + j + N);
  }
  for (; j + N <= n; j += N) hn::StoreU(hn::MulAdd(wv, hn::LoadU(d, x + j), hn::LoadU(d, y + j)), d, y + j);
  for (; j < n; ++j) y[j] += w * x[j];
}

template <typename T>
T Dot(const T* HWY_RESTRICT x, const T* HWY_RESTRICT y, int64_t n) {
  const hn::ScalableTag<T> d;
  const int64_t N = int64_t(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  int64_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    a0 = hn::MulAdd(hn::LoadU(d, x + j), hn::LoadU(d, y + j), a0);
    a1 = hn::MulAdd(hn::LoadU(d, x + j + N), hn::LoadU(d, y + j + N), a1);
  }
  for (; j + N <= n; j += N) a0 = hn::MulAdd(hn::LoadU(d, x + j), hn::LoadU(d, y + j), a0);
  T s = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; j < n; ++j) s += x[j] * y[j];
  return s;
}

void AxpyF32(float w, const float* x, float* y, int64_t n) { Axpy(w, x, y, n); }
void AxpyF64(double w, const double* x, double* y, int64_t n) { Axpy(w, x, y, n); }
float DotF32(const float* x, const float* y, int64_t n) { return Dot(x, y, n); }
double DotF64(const double* x, const double* y, int64_t n) { return Dot(x, y, n); }

}  // namespace HWY_NAMESPACE
}  // namespace kiln::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kiln::cpu {
HWY_EXPORT(AxpyF32);
HWY_EXPORT(AxpyF64);
HWY_EXPORT(DotF32);
HWY_EXPORT(DotF64);

void conv_axpy(float w, const float* x, float* y, int64_t n) { HWY_DYNAMIC_DISPATCH(AxpyF32)(w, x, y, n); }
void conv_axpy(double w, const double* x, double* y, int64_t n) { HWY_DYNAMIC_DISPATCH(AxpyF64)(w, x, y, n); }
float conv_dot(const float* x, const float* y, int64_t n) { return HWY_DYNAMIC_DISPATCH(DotF32)(x, y, n); }
double conv_dot(const double* x, const double* y, int64_t n) { return HWY_DYNAMIC_DISPATCH(DotF64)(x, y, n); }

}  // namespace kiln::cpu
#endif
