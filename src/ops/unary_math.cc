// Floating-point unary math front-ends (exp, log, sqrt, trig, sigmoid, silu,
// gelu): the result dtype is float32 for bool and integer inputs, else x's
// (complex where torch has a complex form); the kernels are the ops of
// ops/registry/unary.h.
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

// The result dtype of a float op on x, or TypeError.
// Which inputs an op takes besides floats: integers and bool (computed in
// float32), and complex (where torch has a complex form).
struct Accepts {
  bool integers;
  bool complex;
};

DType float_result(Accepts a, const char* op, DType d) {
  const bool accepts_integers = a.integers;
  if (is_fp8(d)) unsupported(op, d);
  if (is_complex(d) && !a.complex) unsupported(op, d);
  if (is_integral(d, true)) {
    if (!accepts_integers) unsupported(op, d);
    return kDefaultFloat;
  }
  return d;
}

template <typename Sig, typename... P>
Tensor unary_op(const Op<Sig>& kernel, const UnaryGrad& grad, const Tensor& x, const char* op, Accepts a,
                P... p) {
  return recorded(op, grad, x, [&] {
    Tensor out = empty_following(x.sizes(), float_result(a, op, x.dtype()), x.device(), {&x});
    kernel(x.device(), x, out, p...);
    return out;
  });
}

// fn is the out-of-place form (recorded when x's history must be).
template <typename Sig, typename Fn, typename... P>
Tensor& unary_op_(const Op<Sig>& kernel, const UnaryGrad& grad, Fn fn, Tensor& x, const char* op, Accepts a,
                  P... p) {
  check_inplace(op, float_result(a, op, x.dtype()), x);
  if (inplace_recorded(op, grad, x, [&](const Tensor& in) { return fn(in, p...); })) return x;
  kernel(x.device(), x, x, p...);
  return x;
}

// gelu's approximate= argument: true for "tanh", false for "none".
bool gelu_tanh(const std::string& approximate, const char* op) {
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  throw ValueError(std::string("[") + op + "] approximate must be 'none' or 'tanh', got '" + approximate +
                   "'");
}

}  // namespace

#define KILN_FLOAT_UNARY(fn, complex)                                                        \
  Tensor fn(const Tensor& x) {                                                               \
    return unary_op(ops::fn, unary_detail::fn##_grad, x, #fn, Accepts{true, complex});       \
  }                                                                                          \
  Tensor& fn##_(Tensor& x) {                                                                 \
    return unary_op_(                                                                        \
        ops::fn, unary_detail::fn##_grad, [](const Tensor& t) { return fn(t); }, x, #fn "_", \
        Accepts{true, complex});                                                             \
  }
KILN_FLOAT_UNARY(exp, true)
KILN_FLOAT_UNARY(exp2, false)
KILN_FLOAT_UNARY(expm1, false)
KILN_FLOAT_UNARY(log, true)
KILN_FLOAT_UNARY(log2, false)
KILN_FLOAT_UNARY(log1p, false)
KILN_FLOAT_UNARY(sqrt, true)
KILN_FLOAT_UNARY(rsqrt, true)
KILN_FLOAT_UNARY(reciprocal, true)
KILN_FLOAT_UNARY(sin, true)
KILN_FLOAT_UNARY(cos, true)
KILN_FLOAT_UNARY(tan, true)
KILN_FLOAT_UNARY(tanh, true)
KILN_FLOAT_UNARY(sigmoid, true)
#undef KILN_FLOAT_UNARY

// silu and gelu are floating-only in torch ("silu" not implemented for 'Long').
constexpr Accepts kFloatsOnly{false, false};
Tensor silu(const Tensor& x) { return unary_op(ops::silu, unary_detail::silu_grad, x, "silu", kFloatsOnly); }
Tensor& silu_(Tensor& x) {
  return unary_op_(
      ops::silu, unary_detail::silu_grad, [](const Tensor& t) { return silu(t); }, x, "silu_", kFloatsOnly);
}

namespace {
const UnaryGrad& gelu_grad(bool tanh) {
  return tanh ? unary_detail::gelu_tanh_grad : unary_detail::gelu_grad;
}
}  // namespace

Tensor gelu(const Tensor& x, const std::string& approximate) {
  const bool t = gelu_tanh(approximate, "gelu");
  return unary_op(ops::gelu, gelu_grad(t), x, "gelu", kFloatsOnly, t);
}
Tensor& gelu_(Tensor& x, const std::string& approximate) {
  const bool t = gelu_tanh(approximate, "gelu_");
  return unary_op_(
      ops::gelu, gelu_grad(t), [](const Tensor& in, bool tt) { return gelu(in, tt ? "tanh" : "none"); }, x,
      "gelu_", kFloatsOnly, t);
}

}  // namespace kiln
