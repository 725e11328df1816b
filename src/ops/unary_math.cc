// Floating-point unary math front-ends (exp, log, sqrt, trig, sigmoid, silu,
// gelu): the result dtype is float32 for bool and integer inputs, else x's
// (complex where torch has a complex form); the kernels are the ops of
// ops/registry/unary.h.
#include "cpu/unary_scalar.h"  // UOp and uop_has_complex: which ops take complex
#include "kiln/unary.h"
#include "ops/registry/all.h"
#include "ops/unary_common.h"

namespace kiln {
namespace {

using unary_detail::check_inplace;
using unary_detail::unsupported;

// The result dtype of a float op on x, or TypeError.
DType float_result(UOp k, const char* op, DType d, bool accepts_integers) {
  if (is_fp8(d)) unsupported(op, d);
  if (is_complex(d) && !uop_has_complex(k)) unsupported(op, d);
  if (is_integral(d, true)) {
    if (!accepts_integers) unsupported(op, d);
    return kDefaultFloat;
  }
  return d;
}

template <UOp K, typename Sig, typename... P>
Tensor unary_op(const Op<Sig>& kernel, const Tensor& x, const char* op, bool accepts_integers, P... p) {
  Tensor out = empty(x.sizes(), float_result(K, op, x.dtype(), accepts_integers));
  kernel(x.device(), x, out, p...);
  return out;
}

template <UOp K, typename Sig, typename... P>
Tensor& unary_op_(const Op<Sig>& kernel, Tensor& x, const char* op, bool accepts_integers, P... p) {
  check_inplace(op, float_result(K, op, x.dtype(), accepts_integers), x);
  kernel(x.device(), x, x, p...);
  return x;
}

UOp gelu_kind(const std::string& approximate, const char* op) {
  if (approximate == "none") return UOp::GeluErf;
  if (approximate == "tanh") return UOp::GeluTanh;
  throw ValueError(std::string("[") + op + "] approximate must be 'none' or 'tanh', got '" + approximate +
                   "'");
}

}  // namespace

#define KILN_FLOAT_UNARY(fn, K)                                                  \
  Tensor fn(const Tensor& x) { return unary_op<UOp::K>(ops::fn, x, #fn, true); } \
  Tensor& fn##_(Tensor& x) { return unary_op_<UOp::K>(ops::fn, x, #fn "_", true); }
KILN_FLOAT_UNARY(exp, Exp)
KILN_FLOAT_UNARY(exp2, Exp2)
KILN_FLOAT_UNARY(expm1, Expm1)
KILN_FLOAT_UNARY(log, Log)
KILN_FLOAT_UNARY(log2, Log2)
KILN_FLOAT_UNARY(log1p, Log1p)
KILN_FLOAT_UNARY(sqrt, Sqrt)
KILN_FLOAT_UNARY(rsqrt, Rsqrt)
KILN_FLOAT_UNARY(reciprocal, Reciprocal)
KILN_FLOAT_UNARY(sin, Sin)
KILN_FLOAT_UNARY(cos, Cos)
KILN_FLOAT_UNARY(tan, Tan)
KILN_FLOAT_UNARY(tanh, Tanh)
KILN_FLOAT_UNARY(sigmoid, Sigmoid)
#undef KILN_FLOAT_UNARY

// silu and gelu are floating-only in torch ("silu" not implemented for 'Long').
Tensor silu(const Tensor& x) { return unary_op<UOp::Silu>(ops::silu, x, "silu", false); }
Tensor& silu_(Tensor& x) { return unary_op_<UOp::Silu>(ops::silu, x, "silu_", false); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  const bool tanh_approx = gelu_kind(approximate, "gelu") == UOp::GeluTanh;
  return unary_op<UOp::GeluErf>(ops::gelu, x, "gelu", false, tanh_approx);
}
Tensor& gelu_(Tensor& x, const std::string& approximate) {
  const bool tanh_approx = gelu_kind(approximate, "gelu_") == UOp::GeluTanh;
  return unary_op_<UOp::GeluErf>(ops::gelu, x, "gelu_", false, tanh_approx);
}

}  // namespace kiln
