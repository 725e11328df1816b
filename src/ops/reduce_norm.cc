// logsumexp and norm front-ends: dtype checks and casts, dims -> mask,
// output allocation, then the op (ops/registry/reduce.h).
#include <cmath>
#include <limits>
#include <string>

#include "kiln/binary.h"
#include "kiln/unary.h"
#include "kiln/unary_extra.h"
#include "ops/reduce_dims.h"
#include "ops/reduce_grad.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// torch's vector-norm derivative: p = 0 has none; p = 1 gives sign(x); p = 2
// x / norm; +-inf splits g evenly among the |x| equal to the norm; other p
// sign(x) |x|^(p-1) / norm^(p-1). Where the norm is 0 the gradient is 0.
// Complex x: sgn(x) = x / |x| in place of sign(x) (torch's convention).
Tensor norm_backward(const Tensor& g, const Tensor& x, const Tensor& out, double p,
                     const std::vector<bool>& mask, bool keepdim) {
  if (p == 0) return zeros_like(x);
  auto sign = [](const Tensor& t) { return is_complex(t.dtype()) ? sgn(t) : kiln::sign(t); };
  const Tensor gu = rgrad::unreduce(g, mask, keepdim);  // reduced dims as 1
  const Tensor o = rgrad::unreduce(out, mask, keepdim);
  if (p == 1) return mul(sign(x), gu);
  if (p == 2) return mul(x, where(eq(o, Scalar(0.0)), Scalar(0.0), div(gu, o)));
  if (std::isinf(p)) {
    const Tensor w = eq(abs(x), o).to(x.dtype());  // x's shape
    const Tensor count = sum(w, rgrad::dims_of(mask), /*keepdim=*/true);
    return mul(sign(x), div(mul(gu, w), count));
  }
  Tensor scaled = mul(sign(x), pow(abs(x), Scalar(p - 1)));  // x's shape
  if (p < 1) scaled = where(eq(x, Scalar(0.0)), Scalar(0.0), scaled);
  return mul(scaled, where(eq(o, Scalar(0.0)), Scalar(0.0), div(gu, pow(o, Scalar(p - 1)))));
}

}  // namespace

Tensor logsumexp(const Tensor& x_in, const DimList& dim, bool keepdim) {
  reject_fp8(x_in, "logsumexp");
  if (is_complex(x_in.dtype()))
    throw TypeError(std::string("[logsumexp] unsupported dtype ") + name(x_in.dtype()));
  autograd::Record rec("logsumexp", {&x_in});
  const Tensor x = x_in.to(to_float_result(x_in.dtype()));
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "logsumexp");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), x.dtype(), x.device());
  ops::logsumexp(common_device("logsumexp", {&x, &out}), x, mask, out);
  // d/dx = exp(x - out), the softmax over the reduced dims.
  if (rec)
    rec.finish("LogsumexpBackward0", {&out}, {x}, [mask, keepdim](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{
          mul(rgrad::unreduce(g[0], mask, keepdim), rgrad::group_softmax(n.saved(0), mask))};
    });
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
  autograd::Record rec("norm", {&x_in});
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const std::vector<bool> mask = reduce_mask(dim, x.dim(), "norm");
  if (p == -std::numeric_limits<double>::infinity()) require_nonempty(x, mask, false, "norm");
  Tensor out = empty(reduced_shape(x.shape(), mask, keepdim), to_real(x.dtype()), x.device());
  ops::norm(common_device("norm", {&x, &out}), x, mask, p, out);
  if (rec)
    rec.finish("LinalgVectorNormBackward0", {&out}, {x, out},
               [p, mask, keepdim](autograd::FnNode& n, autograd::Grads& g) {
                 return autograd::Grads{norm_backward(g[0], n.saved(0), n.saved(1), p, mask, keepdim)};
               });
  return out;
}

}  // namespace kiln
