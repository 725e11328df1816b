// sum, mean, nansum, nanmean, prod, all, any, count_nonzero front-ends: dtype checks, the
// `dtype` cast, dims -> mask, output allocation, then the op
// (ops/registry/reduce.h).
#include <string>

#include "kiln/binary.h"
#include "kiln/complex.h"
#include "kiln/unary.h"
#include "ops/reduce_dims.h"
#include "ops/reduce_grad.h"
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
  autograd::Record rec(op, {&x_in});
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), natural_sum_dtype(x.dtype()), x.device());
  (mean ? ops::mean : ops::sum)(common_device(op, {&x, &out}), x, mask, out);
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  if (rec) {
    // Linear, so right for complex inputs too: g back in x's shape (/ N for mean).
    const Shape shape = x.sizes();
    const double scale = mean ? 1.0 / double(rgrad::group_size(shape, mask)) : 1.0;
    rec.finish(mean ? "MeanBackward1" : "SumBackward1", {&out}, {},
               [mask, keepdim, shape, mean, scale](autograd::FnNode&, autograd::Grads& g) {
                 const Tensor e = rgrad::expand_reduced(g[0], mask, keepdim, shape);  // x's shape
                 return autograd::Grads{mean ? mul(e, Scalar(scale)) : e};
               });
  }
  return out;
}

// d prod / dx_i is the product of the other elements of x_i's group: out / x_i
// when the group has no zero; with exactly one zero, that product at the zero
// and 0 elsewhere; with several zeros, 0 everywhere (as torch).
Tensor prod_backward(const Tensor& g, const Tensor& x, const Tensor& out, const std::vector<bool>& mask,
                     bool keepdim) {
  const DimList dims = rgrad::dims_of(mask);
  const Tensor o = rgrad::unreduce(out, mask, keepdim);          // reduced dims as 1
  const Tensor is_zero = eq(x, Scalar(0.0));                     // x's shape
  const Tensor zeros_in = sum(is_zero, dims, /*keepdim=*/true);  // int64, reduced dims as 1
  const Tensor others =
      prod(where(is_zero, Scalar(1.0), x), dims, /*keepdim=*/true);  // product of the non-zeros
  const Tensor no_zero = div(o, where(is_zero, Scalar(1.0), x));     // x's shape
  const Tensor one_zero = where(logical_and(is_zero, eq(zeros_in, Scalar(int64_t(1)))), others, Scalar(0.0));
  // Holomorphic in each element: conjugated for complex x (torch's convention).
  const Tensor d = where(eq(zeros_in, Scalar(int64_t(0))), no_zero, one_zero);
  return mul(rgrad::unreduce(g, mask, keepdim), is_complex(d.dtype()) ? conj(d) : d);
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
  autograd::Record rec("prod", {&x_in});
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "prod");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), natural_sum_dtype(x.dtype()), x.device());
  ops::prod(common_device("prod", {&x, &out}), x, mask, out);
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  if (rec)
    rec.finish("ProdBackward1", {&out}, {x, out}, [mask, keepdim](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{prod_backward(g[0], n.saved(0), n.saved(1), mask, keepdim)};
    });
  return out;
}

namespace {
// nansum / nanmean: sum / mean of the non-NaN entries. Integer inputs hold no
// NaN: nansum is their sum (nanmean refuses them, as mean does).
Tensor nansum_mean(const char* op, const Tensor& x_in, const DimList& dim, bool keepdim,
                   std::optional<DType> dtype, bool mean) {
  reject_fp8(x_in, op);
  if (is_complex(x_in.dtype()) || (dtype && is_complex(*dtype)))
    throw TypeError(std::string("[") + op + "] does not support complex inputs");
  const DType d = dtype.value_or(x_in.dtype());
  if (!is_floating(d)) {
    if (mean)
      throw TypeError(std::string("[nanmean] expected a floating point input or dtype, got ") + name(d));
    return sum_mean(op, x_in, dim, keepdim, dtype, false);
  }
  autograd::Record rec(op, {&x_in});
  const Tensor x = x_in.to(d);
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), op);
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), d, x.device());
  (mean ? ops::nanmean : ops::nansum)(common_device(op, {&x, &out}), x, mask, out);
  if (rec) {
    // g to every non-NaN entry (/ their count for nanmean); 0 to the NaNs.
    rec.finish(mean ? "NanmeanBackward0" : "NansumBackward0", {&out}, {x},
               [mask, keepdim, mean](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor& xs = n.saved(0);
                 const Tensor keep = logical_not(isnan(xs));  // x's shape
                 Tensor e = rgrad::expand_reduced(g[0], mask, keepdim, xs.sizes());
                 if (mean) e = div(e, sum(keep, rgrad::dims_of(mask), /*keepdim=*/true).to(e.dtype()));
                 return autograd::Grads{where(keep, e, Scalar(0.0))};
               });
  }
  return out;
}

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

Tensor nansum(const Tensor& x, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  return nansum_mean("nansum", x, dim, keepdim, dtype, false);
}
Tensor nanmean(const Tensor& x, const DimList& dim, bool keepdim, std::optional<DType> dtype) {
  return nansum_mean("nanmean", x, dim, keepdim, dtype, true);
}

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
