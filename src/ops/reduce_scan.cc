// cumsum and cumprod front-ends: dtype checks and the `dtype` cast, the dim,
// output allocation (int64 for bool and integer inputs, as torch), then the op
// (ops/registry/reduce.h).
#include <algorithm>
#include <string>

#include "kiln/binary.h"
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

}  // namespace

Tensor cumsum(const Tensor& x, int dim, std::optional<DType> dtype) {
  return scan<false>("cumsum", x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int dim, std::optional<DType> dtype) {
  return scan<true>("cumprod", x, dim, dtype);
}

}  // namespace kiln
