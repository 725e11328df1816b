// isnan, isinf, isfinite and logical_not (bool results for every dtype) and
// bitwise_not (integers and bool only). The kernels are the ops of
// ops/registry/unary.h.
#include "core/dense_layout.h"
#include "kiln/unary.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

using unary_detail::check_dtype;
using unary_detail::check_inplace;

Tensor predicate(const Op<ops::Unary>& kernel, const Tensor& x, const char* op, bool integral_value) {
  // Integers and bool are never NaN or inf.
  if (is_integral(x.dtype(), true)) return full(x.sizes(), Scalar(integral_value), DType::Bool, x.device());
  Tensor out = empty_following(x.sizes(), DType::Bool, x.device(), {&x});
  kernel(common_device(op, {&x, &out}), x, out);
  return out;
}

}  // namespace

Tensor isnan(const Tensor& x) { return predicate(ops::isnan, x, "isnan", false); }
Tensor isinf(const Tensor& x) { return predicate(ops::isinf, x, "isinf", false); }
Tensor isfinite(const Tensor& x) { return predicate(ops::isfinite, x, "isfinite", true); }

Tensor logical_not(const Tensor& x) {
  Tensor out = empty_following(x.sizes(), DType::Bool, x.device(), {&x});
  ops::logical_not(common_device("logical_not", {&x, &out}), x, out);
  return out;
}

Tensor& logical_not_(Tensor& x) {
  // torch keeps x's dtype: the bool result is written back as 1/0.
  check_inplace("logical_not_", x.dtype(), x);
  if (x.dtype() == DType::Bool) {
    ops::logical_not(common_device("logical_not_", {&x}), x, x);
  } else {
    x.copy_(logical_not(x));
  }
  return x;
}

Tensor bitwise_not(const Tensor& x) {
  check_dtype("bitwise_not", x.dtype(), kBoolSet | kIntSet);
  Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
  ops::bitwise_not(common_device("bitwise_not", {&x, &out}), x, out);
  return out;
}

Tensor& bitwise_not_(Tensor& x) {
  check_inplace("bitwise_not_", x.dtype(), x);
  check_dtype("bitwise_not_", x.dtype(), kBoolSet | kIntSet);
  ops::bitwise_not(common_device("bitwise_not_", {&x}), x, x);
  return x;
}

}  // namespace kiln
