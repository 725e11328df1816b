// floor, ceil, round (half to even, optional decimals), trunc. Integer inputs
// are returned as copies, as torch; bool, complex and FP8 are TypeErrors. The
// kernels (floating inputs) are the ops of ops/registry/unary.h.
#include "core/dense_layout.h"
#include "kiln/unary.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"
#include "ops/unary_grad.h"

namespace kiln {
namespace {

using unary_detail::check_inplace;
using unary_detail::inplace_recorded;
using unary_detail::recorded;
using unary_detail::UnaryGrad;
using unary_detail::unsupported;

using Rounding = Op<ops::Unary>;

void check_dtype(const char* op, DType d) {
  if (d == DType::Bool || is_complex(d) || is_fp8(d)) unsupported(op, d);
}

Tensor rounding(const Rounding& kernel, const UnaryGrad& grad, const Tensor& x, const char* op) {
  check_dtype(op, x.dtype());
  if (is_integral(x.dtype(), false)) return x.clone();
  return recorded(op, grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    kernel(common_device(op, {&x, &out}), x, out);
    return out;
  });
}

// fn is the out-of-place form (recorded when x's history must be).
Tensor& rounding_(const Rounding& kernel, const UnaryGrad& grad, Tensor (*fn)(const Tensor&), Tensor& x,
                  const char* op) {
  check_dtype(op, x.dtype());
  check_inplace(op, x.dtype(), x);
  if (inplace_recorded(op, grad, x, fn)) return x;
  if (!is_integral(x.dtype(), false)) kernel(common_device(op, {&x}), x, x);
  return x;
}

void check_decimals(const Tensor& x, const char* op) {
  if (is_integral(x.dtype(), false))
    throw TypeError(std::string("[") + op + "] decimals != 0 is not supported for integer dtype " + name(x.dtype()));
}

}  // namespace

Tensor floor(const Tensor& x) { return rounding(ops::floor, unary_detail::floor_grad, x, "floor"); }
Tensor ceil(const Tensor& x) { return rounding(ops::ceil, unary_detail::ceil_grad, x, "ceil"); }
Tensor trunc(const Tensor& x) { return rounding(ops::trunc, unary_detail::trunc_grad, x, "trunc"); }
Tensor& floor_(Tensor& x) { return rounding_(ops::floor, unary_detail::floor_grad, floor, x, "floor_"); }
Tensor& ceil_(Tensor& x) { return rounding_(ops::ceil, unary_detail::ceil_grad, ceil, x, "ceil_"); }
Tensor& trunc_(Tensor& x) { return rounding_(ops::trunc, unary_detail::trunc_grad, trunc, x, "trunc_"); }

Tensor round(const Tensor& x, int decimals) {
  check_dtype("round", x.dtype());
  if (decimals == 0 && is_integral(x.dtype(), false)) return x.clone();
  if (decimals != 0) check_decimals(x, "round");
  return recorded("round", unary_detail::round_grad, x, [&] {
    Tensor out = empty_following(x.sizes(), x.dtype(), x.device(), {&x});
    ops::round(common_device("round", {&x, &out}), x, out, decimals);
    return out;
  });
}

Tensor& round_(Tensor& x, int decimals) {
  check_dtype("round_", x.dtype());
  check_inplace("round_", x.dtype(), x);
  if (is_integral(x.dtype(), false)) {
    if (decimals != 0) check_decimals(x, "round_");
    return x;
  }
  if (inplace_recorded("round_", unary_detail::round_grad, x,
                       [&](const Tensor& t) { return round(t, decimals); }))
    return x;
  ops::round(common_device("round_", {&x}), x, x, decimals);
  return x;
}

}  // namespace kiln
