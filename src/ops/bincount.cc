// bincount front-end: shape, dtype and value checks, the bin count, output
// allocation, then the op (ops/registry/sort.h).
#include <algorithm>
#include <string>

#include "kiln/reduce.h"
#include "kiln/sort.h"
#include "ops/registry/all.h"

namespace kiln {

Tensor bincount(const Tensor& x_in, const Tensor& weights_in, int64_t minlength) {
  if (x_in.dim() != 1 || !is_integral(x_in.dtype(), false)) {
    if (x_in.dim() != 1)
      throw ValueError("[bincount] only supports 1-d non-negative integral inputs, got shape " +
                       x_in.shape_str());
    throw TypeError(std::string("[bincount] only supports 1-d non-negative integral inputs, got dtype ") +
                    name(x_in.dtype()));
  }
  if (minlength < 0)
    throw ValueError("[bincount] minlength should be >= 0, got " + std::to_string(minlength));
  const bool weighted = weights_in.defined();
  if (weighted) {
    if (weights_in.dim() != 1 || weights_in.size(0) != x_in.size(0))
      throw ValueError("[bincount] weights of shape " + weights_in.shape_str() +
                       " should be 1-d and have the same length as input " + x_in.shape_str());
    if (is_complex(weights_in.dtype()))
      throw TypeError(std::string("[bincount] complex weights (") + name(weights_in.dtype()) +
                      ") are not supported");
  }
  // torch: float32 weights give float32 bins, any other weights float64.
  const DType out_dtype = !weighted                              ? DType::Int64
                          : weights_in.dtype() == DType::Float32 ? DType::Float32
                                                                 : DType::Float64;
  const Tensor x = x_in.to(DType::Int64).contiguous();
  const int64_t n = x.numel();
  // The value range, from the whole-tensor min/max ops (as torch): bins are
  // counted only once every value is known to be a valid bin.
  int64_t minv = 0, maxv = -1;
  if (n > 0) {
    minv = std::min<int64_t>(0, kiln::min(x).item<int64_t>());
    maxv = std::max<int64_t>(-1, kiln::max(x).item<int64_t>());
  }
  if (minv < 0 || (x_in.dtype() == DType::UInt64 && n > 0 && maxv < 0))
    throw ValueError("[bincount] only supports 1-d non-negative integral inputs, found " +
                     std::to_string(minv < 0 ? minv : maxv));
  if (maxv >= (int64_t(1) << 40))
    throw ValueError("[bincount] largest value " + std::to_string(maxv) + " would need too many bins");
  const int64_t nbins = std::max(maxv + 1, minlength);
  Tensor out = zeros({nbins}, out_dtype, x.device());
  if (n == 0 || nbins == 0) return out;
  const Tensor w = weighted ? weights_in.to(DType::Float64).contiguous() : Tensor();
  ops::bincount(common_device("bincount", {&x, &w, &out}), x, w, out);
  return out;
}

}  // namespace kiln
