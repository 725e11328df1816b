// Reductions and scans (include/kiln/reduce.h). The front-end validates the
// dims and dtypes, casts x where a `dtype` argument asks for it, turns the dim
// list into `mask` and allocates the outputs; the kernel reduces.
#pragma once

#include <vector>

#include "kiln/tensor.h"

namespace kiln::ops {

// x: [*]; mask: x.dim() entries, true for a reduced dim (empty for a 0-d x);
// out: contiguous, x's shape without (or, keepdim, with size 1 at) the reduced
// dims. Result dtypes as include/kiln/reduce.h: sum/prod/mean natural sum dtype
// (int64 for bool and integers), all/any bool (uint8 for uint8 x),
// count_nonzero int64, amax/amin and logsumexp x's dtype.
// An empty reduction writes the identity (sum 0, prod 1, mean NaN, ...).
// nansum / nanmean: x floating; NaN entries are left out (nanmean divides by
// the count of the others, NaN when there are none).
using Reduce = void(const Tensor& x, const std::vector<bool>& mask, const Tensor& out);
// max, min, amax, amin, argmax, argmin: values (x's dtype) and/or indices
// (int64, the first max/min or first NaN, as a row-major index into the
// reduced dims); either may be undefined. No reduced dim has size zero.
using Extremum = void(const Tensor& x, const std::vector<bool>& mask, const Tensor& values,
                      const Tensor& indices);
// var, std, var_mean, std_mean: x floating or complex; var: real dtype of x
// (std for std/std_mean); mean: x's dtype, undefined for var/std.
using Moments = void(const Tensor& x, const std::vector<bool>& mask, double correction, const Tensor& var,
                     const Tensor& mean);
// x floating or complex; out: x's real dtype; p not NaN (0, 1, 2, +-inf or any).
using Norm = void(const Tensor& x, const std::vector<bool>& mask, double p, const Tensor& out);
// Inclusive scan along dim (wrapped; 0 for a 0-d x). out: x's shape, int64 for
// bool and integer x, else x's dtype.
using Scan = void(const Tensor& x, int dim, const Tensor& out);
// cummax / cummin along dim (wrapped; 0 for a 0-d x), x real (not complex):
// values (x's dtype) and indices (int64), contiguous, x's shape. Ties take the
// later index and a NaN sticks, its index moving to each later NaN (torch).
using ScanIndexed = void(const Tensor& x, int dim, const Tensor& values, const Tensor& indices);

#define KILN_OPS_REDUCE(X) \
  X(sum, Reduce)           \
  X(mean, Reduce)          \
  X(prod, Reduce)          \
  X(all, Reduce)           \
  X(any, Reduce)           \
  X(count_nonzero, Reduce) \
  X(max, Extremum)         \
  X(min, Extremum)         \
  X(amax, Extremum)        \
  X(amin, Extremum)        \
  X(argmax, Extremum)      \
  X(argmin, Extremum)      \
  X(var, Moments)          \
  X(std, Moments)          \
  X(var_mean, Moments)     \
  X(std_mean, Moments)     \
  X(logsumexp, Reduce)     \
  X(norm, Norm)            \
  X(nansum, Reduce)        \
  X(nanmean, Reduce)       \
  X(cumsum, Scan)          \
  X(cumprod, Scan)         \
  X(logcumsumexp, Scan)    \
  X(cummax, ScanIndexed)   \
  X(cummin, ScanIndexed)

}  // namespace kiln::ops
