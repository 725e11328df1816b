// Range factories: arange, linspace, logspace, eye. They validate, size and
// allocate the output; the ops of core/factory_ops.h write it.
#include <algorithm>
#include <cmath>

#include "core/empty_on.h"
#include "core/factory_ops.h"
#include "kiln/tensor.h"

namespace kiln {

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  const bool all_int = start.is_integral() && end.is_integral() && step.is_integral();
  return arange(start, end, step, all_int ? DType::Int64 : kDefaultFloat);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype, Device device) {
  if (start.is_complex() || end.is_complex() || step.is_complex())
    throw TypeError("[arange] complex bounds are not supported");
  if (dtype == DType::Bool) throw TypeError("[arange] not implemented for bool");
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0 || std::isnan(st)) throw ValueError("[arange] step must be nonzero and not NaN");
  if (!std::isfinite(s) || !std::isfinite(e)) throw ValueError("[arange] unsupported range: " + start.str() + " -> " + end.str());
  if ((st > 0 && e < s) || (st < 0 && e > s))
    throw ValueError("[arange] upper bound and larger bound inconsistent with step sign");
  if (is_integral(dtype, false) && start.is_integral() && end.is_integral() && step.is_integral()) {
    const int64_t a = start.to_int64(), b = end.to_int64(), c = step.to_int64();
    // 128-bit: the span of two int64 bounds can exceed int64.
    const __int128 span = __int128(b) - a, st128 = c;
    const __int128 count = st128 > 0 ? (span + st128 - 1) / st128 : (-span - st128 - 1) / (-st128);
    if (count > INT64_MAX)  // int64_t(count) would wrap negative
      throw ValueError("[arange] invalid range: start " + start.str() + ", end " + end.str() + ", step " +
                       step.str() + " (the number of elements does not fit in int64)");
    Tensor t = empty_on({int64_t(count)}, dtype, device, "arange");
    ops::arange(t.device(), t, Scalar(a), Scalar(c));  // int64 arithmetic
    return t;
  }
  const double count = std::ceil((e - s) / st);
  if (!(count >= 0 && count < 9.2e18))
    throw ValueError("[arange] invalid range: start " + start.str() + ", end " + end.str() + ", step " +
                     step.str() + " (the number of elements is not a representable size)");
  Tensor t = empty_on({int64_t(count)}, dtype, device, "arange");
  ops::arange(t.device(), t, Scalar(s), Scalar(st));  // double arithmetic
  return t;
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  if (steps < 0) throw ValueError("[linspace] number of steps must be non-negative");
  if (dtype == DType::Bool) throw TypeError("[linspace] not implemented for bool");
  Tensor t = empty_on({steps}, dtype, device, "linspace");
  ops::linspace(t.device(), t, start, end);
  return t;
}

Tensor logspace(double start, double end, int64_t steps, double base, DType dtype, Device device) {
  if (steps < 0) throw ValueError("[logspace] number of steps must be non-negative");
  if (dtype == DType::Bool) throw TypeError("[logspace] not implemented for bool");
  Tensor t = empty_on({steps}, dtype, device, "logspace");
  ops::logspace(t.device(), t, start, end, base);
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  if (m < 0) m = n;
  if (n < 0) throw ValueError("[eye] n must be greater or equal to 0, got " + std::to_string(n));
  Tensor t = empty_on({n, m}, dtype, device, "eye");
  t.fill_(Scalar(int64_t(0)));
  const int64_t k = std::min(n, m);
  if (k > 0) t.as_strided({k}, {m + 1}, 0).fill_(Scalar(int64_t(1)));
  return t;
}

}  // namespace kiln
