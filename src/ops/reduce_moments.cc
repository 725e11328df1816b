// var, std, var_mean, std_mean front-ends: dtype checks, dims -> mask,
// output allocation, then the op (ops/registry/reduce.h).
#include <string>

#include "kiln/binary.h"
#include "ops/reduce_dims.h"
#include "ops/reduce_grad.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// d var / dx = 2 (x - mean) / (N - correction); d std / dx = that / (2 std),
// 0 where std is 0 (as torch); the mean output adds g / N. Right for complex x
// too: var = sum |x - mean|^2 / (N - correction), and the gradient of |w|^2 in
// torch's convention is 2 w (g is real).
Tensor moments_backward(const autograd::Grads& g, const Tensor& x, const Tensor& result,
                        const std::vector<bool>& mask, bool keepdim, double correction, bool take_sqrt,
                        bool want_mean, double n) {
  const Tensor centered = sub(x, mean(x, rgrad::dims_of(mask), /*keepdim=*/true));  // x's shape
  const Tensor gv = rgrad::unreduce(g[0], mask, keepdim);                           // reduced dims as 1
  Tensor grad;
  if (take_sqrt) {
    const Tensor s = rgrad::unreduce(result, mask, keepdim);
    const Tensor scaled = div(gv, mul(s, Scalar(n - correction)));
    grad = mul(centered, where(eq(s, Scalar(0.0)), Scalar(0.0), scaled));
  } else {
    grad = mul(centered, mul(gv, Scalar(2.0 / (n - correction))));
  }
  if (want_mean) grad = add(grad, mul(rgrad::unreduce(g[1], mask, keepdim), Scalar(1.0 / n)));
  return grad;
}

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
  autograd::Record rec(op, {&x});
  kernel(common_device(op, {&x, &v, &m}), x, mask, correction, v, m);
  if (rec) {
    const char* node = want_mean ? (take_sqrt ? "StdMeanBackward0" : "VarMeanBackward0")
                                 : (take_sqrt ? "StdBackward0" : "VarBackward0");
    const double n = double(rgrad::group_size(x.sizes(), mask));
    auto formula = [mask, keepdim, correction, take_sqrt, want_mean, n](autograd::FnNode& nd,
                                                                        autograd::Grads& g) {
      return autograd::Grads{
          moments_backward(g, nd.saved(0), nd.saved(1), mask, keepdim, correction, take_sqrt, want_mean, n)};
    };
    std::vector<Tensor> saved{x, take_sqrt ? v : Tensor()};
    if (want_mean)
      rec.finish(node, {&v, &m}, std::move(saved), formula);
    else
      rec.finish(node, {&v}, std::move(saved), formula);
  }
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
