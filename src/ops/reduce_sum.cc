// sum, mean, prod, all, any, count_nonzero front-ends: dtype checks, the
// `dtype` cast, dims -> mask, output allocation, then the op
// (ops/registry/reduce.h).
#include <string>

#include "ops/reduce_dims.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

DType natural_sum_dtype(DType d) { return is_integral(d, true) ? DType::Int64 : d; }

// sum (mean = false) or mean over x's natural accumulation; dtype casts first.
Tensor sum_mean(const char* op, const Tensor& x_in, const DimList& dim, bool keepdim,
                std::optional<DType> dtype, bool mean) {
  reject_fp8(x_in, op);
  if (dtype) {
    if (is_fp8(*dtype)) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(*dtype));
    if (mean && !(is_floating(*dtype) || is_complex(*dtype)))
      throw TypeError(std::string("[") + op + "] could not infer output dtype: dtype must be floating point or complex, got " +
                      name(*dtype));
  } else if (mean && !(is_floating(x_in.dtype()) || is_complex(x_in.dtype()))) {
    throw TypeError(std::string("[") + op + "] could not infer output dtype: input dtype must be floating point or complex, got " +
                    name(x_in.dtype()) + "; pass dtype=");
  }
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), natural_sum_dtype(x.dtype()), x.device());
  (mean ? ops::mean : ops::sum)(common_device(op, {&x, &out}), x, mask, out);
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  return sum_mean("sum", x, dim, keepdim, dtype, false);
}

Tensor mean(const Tensor& x, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  return sum_mean("mean", x, dim, keepdim, dtype, true);
}

Tensor prod(const Tensor& x_in, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  reject_fp8(x_in, "prod");
  if (dtype && is_fp8(*dtype)) throw TypeError(std::string("[prod] unsupported dtype ") + name(*dtype));
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "prod");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), natural_sum_dtype(x.dtype()), x.device());
  ops::prod(common_device("prod", {&x, &out}), x, mask, out);
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  return out;
}

namespace {
template <bool kAll>
Tensor logical(const char* op, const Tensor& x, const DimList& dim, bool keepdim) {
  reject_fp8(x, op);
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  // torch keeps uint8 for uint8 inputs (a legacy of uint8 masks).
  const DType od = x.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), od, x.device());
  (kAll ? ops::all : ops::any)(common_device(op, {&x, &out}), x, mask, out);
  return out;
}
}  // namespace

Tensor all(const Tensor& x, const DimList& dim, bool keepdim) { return logical<true>("all", x, dim, keepdim); }
Tensor any(const Tensor& x, const DimList& dim, bool keepdim) { return logical<false>("any", x, dim, keepdim); }

Tensor count_nonzero(const Tensor& x, const DimList& dim) {
  reject_fp8(x, "count_nonzero");
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "count_nonzero");
  Tensor out = empty(reduced_shape(x.shape(), mask, false), DType::Int64, x.device());
  ops::count_nonzero(common_device("count_nonzero", {&x, &out}), x, mask, out);
  return out;
}

}  // namespace kiln
