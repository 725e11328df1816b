// cumsum and cumprod front-ends: dtype checks and the `dtype` cast, the dim,
// output allocation (int64 for bool and integer inputs, as torch), then the op
// (ops/registry/reduce.h).
#include <algorithm>
#include <string>

#include "ops/reduce_dims.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

template <bool kProd>
Tensor scan(const char* op, const Tensor& x_in, int dim, std::optional<DType> dtype) {
  reject_fp8(x_in, op);
  if (dtype && is_fp8(*dtype)) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(*dtype));
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const int d = wrap_dim(dim, std::max(x.dim(), 1), op);
  Tensor out = empty(x.sizes(), is_integral(x.dtype(), true) ? DType::Int64 : x.dtype(), x.device());
  (kProd ? ops::cumprod : ops::cumsum)(common_device(op, {&x, &out}), x, d, out);
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  return out;
}

}  // namespace

Tensor cumsum(const Tensor& x, int dim, std::optional<DType> dtype) {
  return scan<false>("cumsum", x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int dim, std::optional<DType> dtype) {
  return scan<true>("cumprod", x, dim, dtype);
}

}  // namespace kiln
