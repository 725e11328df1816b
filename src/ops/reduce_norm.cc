// logsumexp and norm front-ends: dtype checks and casts, dims -> mask,
// output allocation, then the op (ops/registry/reduce.h).
#include <cmath>
#include <limits>
#include <string>

#include "ops/reduce_dims.h"
#include "ops/registry/all.h"

namespace kiln {

Tensor logsumexp(const Tensor& x_in, const DimList& dim, bool keepdim) {
  reject_fp8(x_in, "logsumexp");
  if (is_complex(x_in.dtype()))
    throw TypeError(std::string("[logsumexp] unsupported dtype ") + name(x_in.dtype()));
  const Tensor x = x_in.to(to_float_result(x_in.dtype()));
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "logsumexp");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), x.dtype(), x.device());
  ops::logsumexp(common_device("logsumexp", {&x, &out}), x, mask, out);
  return out;
}

Tensor norm(const Tensor& x_in, double p, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  reject_fp8(x_in, "norm");
  if (dtype && !(is_floating(*dtype) || is_complex(*dtype)) )
    throw TypeError(std::string("[norm] dtype must be floating point or complex, got ") + name(*dtype));
  if (dtype && is_fp8(*dtype)) throw TypeError(std::string("[norm] unsupported dtype ") + name(*dtype));
  if (!(is_floating(x_in.dtype()) || is_complex(x_in.dtype())))
    throw TypeError(std::string("[norm] input dtype should be either floating point or complex, got ") +
                    name(x_in.dtype()));
  if (std::isnan(p)) throw ValueError("[norm] p must not be NaN");
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "norm");
  if (p == -std::numeric_limits<double>::infinity()) require_nonempty(x, mask, false, "norm");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), to_real(x.dtype()), x.device());
  ops::norm(common_device("norm", {&x, &out}), x, mask, p, out);
  return out;
}

}  // namespace kiln
