// Scan front-ends (ops/registry/reduce.h): cumsum and cumprod (dtype checks and
// the `dtype` cast, int64 results for bool and integer inputs, as torch),
// logcumsumexp, cummax and cummin: the dim, output allocation, the op and the
// derivative.
#include <algorithm>
#include <string>

#include "kiln/binary.h"
#include "kiln/index.h"
#include "kiln/shape.h"
#include "kiln/unary.h"
#include "ops/reduce_dims.h"
#include "ops/reduce_grad.h"
#include "ops/registry/all.h"

namespace kiln {
namespace {

// d cumprod: sum_{i >= k} g_i prod_{j <= i, j != k} x_j. Before the first zero
// of a row that is reverse_cumsum(g * out) / x; at the first zero it is
// reverse_cumsum(g * cumprod(x with that zero read as 1)); after it, 0.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& out, int d) {
  if (x.dim() == 0) return g;
  const Tensor is_zero = eq(x, Scalar(0.0));       // x's shape
  const Tensor zeros_so_far = cumsum(is_zero, d);  // int64
  const Tensor before = eq(zeros_so_far, Scalar(int64_t(0)));
  const Tensor first_zero = logical_and(is_zero, eq(zeros_so_far, Scalar(int64_t(1))));
  const Tensor at_before = div(rgrad::reverse_cumsum(mul(g, out), d), where(before, x, Scalar(1.0)));
  const Tensor skipped = cumprod(where(first_zero, Scalar(1.0), x), d);
  const Tensor at_zero = rgrad::reverse_cumsum(mul(g, skipped), d);
  return where(before, at_before, where(first_zero, at_zero, Scalar(0.0)));
}

template <bool kProd>
Tensor scan(const char* op, const Tensor& x_in, int dim, std::optional<DType> dtype) {
  reject_fp8(x_in, op);
  if (dtype && is_fp8(*dtype)) throw TypeError(std::string("[") + op + "] unsupported dtype " + name(*dtype));
  autograd::Record rec(op, {&x_in});
  if (rec && kProd) rgrad::reject_complex_grad(dtype.value_or(x_in.dtype()), op);
  const Tensor x = dtype ? x_in.to(*dtype) : x_in;
  const int d = wrap_dim(dim, std::max(x.dim(), 1), op);
  Tensor out = empty(x.sizes(), is_integral(x.dtype(), true) ? DType::Int64 : x.dtype(), x.device());
  (kProd ? ops::cumprod : ops::cumsum)(common_device(op, {&x, &out}), x, d, out);
  if (dtype && out.dtype() != *dtype) out = out.to(*dtype);
  if (rec) {
    if (kProd)
      rec.finish("CumprodBackward0", {&out}, {x, out}, [d](autograd::FnNode& n, autograd::Grads& g) {
        return autograd::Grads{cumprod_backward(g[0], n.saved(0), n.saved(1), d)};
      });
    else  // linear: right for complex too
      rec.finish("CumsumBackward0", {&out}, {}, [d](autograd::FnNode&, autograd::Grads& g) {
        return autograd::Grads{rgrad::reverse_cumsum(g[0], d)};
      });
  }
  return out;
}

// d logcumsumexp: grad_k = sum_{i >= k} g_i exp(x_k - out_i). With g split
// into its positive and negative parts, each sum is exp(x_k + a reversed
// logcumsumexp of log(g_part) - out): no term overflows, and the composite is
// itself differentiable.
Tensor logcumsumexp_backward(const Tensor& g, const Tensor& x, const Tensor& out, int d) {
  if (x.dim() == 0) return g;
  const int dims[] = {d};
  auto part = [&](const Tensor& gp) {  // exp(x_k + log sum_{i >= k} gp_i exp(-out_i))
    const Tensor t = flip(logcumsumexp(flip(sub(log(gp), out), dims), d), dims);
    return exp(add(x, t));
  };
  return sub(part(clamp_min(g, Scalar(0.0))), part(clamp_min(neg(g), Scalar(0.0))));
}

}  // namespace

Tensor logcumsumexp(const Tensor& x, int dim) {
  const char* op = "logcumsumexp";
  if (!is_floating(x.dtype()) || is_fp8(x.dtype()))
    throw TypeError(std::string("[logcumsumexp] expected a floating point input (float16, bfloat16, "
                                "float32 or float64), got ") +
                    name(x.dtype()));
  const int d = wrap_dim(dim, std::max(x.dim(), 1), op);
  autograd::Record rec(op, {&x});
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  ops::logcumsumexp(common_device(op, {&x, &out}), x, d, out);
  if (rec)
    rec.finish("LogcumsumexpBackward0", {&out}, {x, out}, [d](autograd::FnNode& n, autograd::Grads& g) {
      return autograd::Grads{logcumsumexp_backward(g[0], n.saved(0), n.saved(1), d)};
    });
  return out;
}

namespace {
template <bool kMax>
ValuesIndices cum_extreme(const char* op, const Tensor& x, int dim) {
  check_ordered(x, op);
  const int d = wrap_dim(dim, std::max(x.dim(), 1), op);
  autograd::Record rec(op, {&x});
  ValuesIndices r{empty(x.sizes(), x.dtype(), x.device()), empty(x.sizes(), DType::Int64, x.device())};
  (kMax ? ops::cummax : ops::cummin)(common_device(op, {&x, &r.values, &r.indices}), x, d, r.values,
                                     r.indices);
  if (rec)  // each output's gradient goes to the element it copied
    rec.finish(kMax ? "CummaxBackward0" : "CumminBackward0", {&r.values, &r.indices}, {r.indices},
               [d](autograd::FnNode& n, autograd::Grads& g) {
                 const Tensor& idx = n.saved(0);
                 if (idx.dim() == 0) return autograd::Grads{g[0]};
                 return autograd::Grads{scatter_add(zeros_like(g[0]), d, idx, g[0])};
               });
  return r;
}
}  // namespace

ValuesIndices cummax(const Tensor& x, int dim) { return cum_extreme<true>("cummax", x, dim); }
ValuesIndices cummin(const Tensor& x, int dim) { return cum_extreme<false>("cummin", x, dim); }

Tensor cumsum(const Tensor& x, int dim, std::optional<DType> dtype) {
  return scan<false>("cumsum", x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int dim, std::optional<DType> dtype) {
  return scan<true>("cumprod", x, dim, dtype);
}

}  // namespace kiln
