// Range factories: arange, linspace, logspace, eye.
#include <cmath>

#include "core/cast.h"
#include "kiln/tensor.h"
#include "kiln/thread_pool.h"

namespace kiln {
namespace {

// Fills a contiguous 1-D tensor with value(i), computed in double (int64 for
// integer dtypes so large integer ranges stay exact).
template <typename Fn>
void fill_indexed(Tensor& t, Fn value, const char* op) {
  dispatch<kIntSet | kFloatSet | kFp8Set | kComplexSet>(t.dtype(), op, [&]<typename T>() {
    T* p = static_cast<T*>(t.data_ptr());
    parallel_for(0, t.numel(), 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = cast<T>(value(i));
    });
  });
}

}  // namespace

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  const bool all_int = start.is_integral() && end.is_integral() && step.is_integral();
  return arange(start, end, step, all_int ? DType::Int64 : kDefaultFloat);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype) {
  if (start.is_complex() || end.is_complex() || step.is_complex())
    throw TypeError("[arange] complex bounds are not supported");
  if (dtype == DType::Bool) throw TypeError("[arange] not implemented for bool");
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0 || std::isnan(st)) throw ValueError("[arange] step must be nonzero and not NaN");
  if (!std::isfinite(s) || !std::isfinite(e)) throw ValueError("[arange] unsupported range: " + start.str() + " -> " + end.str());
  if ((st > 0 && e < s) || (st < 0 && e > s))
    throw ValueError("[arange] upper bound and larger bound inconsistent with step sign");
  int64_t n;
  if (is_integral(dtype, false) && start.is_integral() && end.is_integral() && step.is_integral()) {
    const int64_t a = start.to_int64(), b = end.to_int64(), c = step.to_int64();
    // 128-bit: the span of two int64 bounds can exceed int64.
    const __int128 span = __int128(b) - a, st128 = c;
    const __int128 count = st128 > 0 ? (span + st128 - 1) / st128 : (-span - st128 - 1) / (-st128);
    if (count > INT64_MAX)  // int64_t(count) would wrap negative
      throw ValueError("[arange] invalid range: start " + start.str() + ", end " + end.str() + ", step " +
                       step.str() + " (the number of elements does not fit in int64)");
    n = int64_t(count);
    Tensor t = empty({n}, dtype);
    fill_indexed(t, [&](int64_t i) { return int64_t(uint64_t(a) + uint64_t(i) * uint64_t(c)); }, "arange");
    return t;
  }
  const double count = std::ceil((e - s) / st);
  if (!(count >= 0 && count < 9.2e18))
    throw ValueError("[arange] invalid range: start " + start.str() + ", end " + end.str() + ", step " +
                     step.str() + " (the number of elements is not a representable size)");
  n = int64_t(count);
  Tensor t = empty({n}, dtype);
  fill_indexed(t, [&](int64_t i) { return s + double(i) * st; }, "arange");
  return t;
}

Tensor linspace(double start, double end, int64_t steps, DType dtype) {
  if (steps < 0) throw ValueError("[linspace] number of steps must be non-negative");
  if (dtype == DType::Bool) throw TypeError("[linspace] not implemented for bool");
  Tensor t = empty({steps}, dtype);
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  // Symmetric evaluation (as torch): the last element is exactly `end`.
  fill_indexed(t, [&](int64_t i) {
    if (steps == 1) return start;
    return i < half ? start + step * double(i) : end - step * double(steps - 1 - i);
  }, "linspace");
  return t;
}

Tensor logspace(double start, double end, int64_t steps, double base, DType dtype) {
  if (steps < 0) throw ValueError("[logspace] number of steps must be non-negative");
  if (dtype == DType::Bool) throw TypeError("[logspace] not implemented for bool");
  Tensor t = empty({steps}, dtype);
  const double step = steps > 1 ? (end - start) / double(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  fill_indexed(t, [&](int64_t i) {
    const double x = steps == 1 ? start : (i < half ? start + step * double(i) : end - step * double(steps - 1 - i));
    return std::pow(base, x);
  }, "logspace");
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dtype) {
  if (m < 0) m = n;
  if (n < 0) throw ValueError("[eye] n must be greater or equal to 0, got " + std::to_string(n));
  Tensor t = zeros({n, m}, dtype);
  const int64_t k = std::min(n, m);
  if (k > 0) t.as_strided({k}, {m + 1}, 0).fill_(Scalar(int64_t(1)));
  return t;
}

}  // namespace kiln
