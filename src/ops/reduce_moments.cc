// var, std, var_mean, std_mean front-ends: dtype checks, dims -> mask,
// output allocation, then the op (ops/registry/reduce.h).
#include <string>

#include "ops/reduce_dims.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// Computes the variance (or std) and optionally the mean.
std::pair<Tensor, Tensor> moments(const char* op, const Tensor& x, const DimList& dim, double correction,
                                  bool keepdim, bool take_sqrt, bool want_mean) {
  reject_fp8(x, op);
  if (!(is_floating(x.dtype()) || is_complex(x.dtype())))
    throw TypeError(std::string("[") + op + "] only supports floating point and complex dtypes, got " +
                    name(x.dtype()));
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  const Shape shape = reduced_shape(x.shape(), mask, keepdim);
  Tensor v = empty(shape, to_real(x.dtype()), x.device());
  Tensor m = want_mean ? empty(shape, x.dtype(), x.device()) : Tensor();
  const Op<ops::Moments>& kernel =
      want_mean ? (take_sqrt ? ops::std_mean : ops::var_mean) : (take_sqrt ? ops::std : ops::var);
  kernel(common_device(op, {&x, &v, &m}), x, mask, correction, v, m);
  return {v, m};
}

}  // namespace

Tensor var(const Tensor& x, const DimList& dim, double correction, bool keepdim) {
  return moments("var", x, dim, correction, keepdim, false, false).first;
}
Tensor std(const Tensor& x, const DimList& dim, double correction, bool keepdim) {
  return moments("std", x, dim, correction, keepdim, true, false).first;
}
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const DimList& dim, double correction, bool keepdim) {
  return moments("var_mean", x, dim, correction, keepdim, false, true);
}
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const DimList& dim, double correction, bool keepdim) {
  return moments("std_mean", x, dim, correction, keepdim, true, true);
}

}  // namespace kiln
