// Floating-point unary math (exp, log, sqrt, trig, sigmoid, silu, gelu): bool and
// integer inputs compute in float32, f16/bf16 in float (narrowed on store), f64
// in double; complex where torch has a complex form. Contiguous f32/bf16/f16
// inputs of the hot ops go to the SIMD kernels in cpu/unary.cc.
#include "kiln/unary.h"

#include "cpu/unary.h"
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

// out = K(x); out has x's shape and the result dtype (out may be x itself).
template <UOp K>
void run(const Tensor& x, const Tensor& out, const char* op) {
  if (x.dtype() == out.dtype() && x.is_contiguous() && out.is_contiguous() &&
      cpu::unary_has_kernel(K, x.dtype())) {
    cpu::unary_contiguous(K, x.dtype(), x.data_ptr(), out.data_ptr(), x.numel());
    return;
  }
  constexpr DTypeSet kIn = kBoolSet | kIntSet | kFloatSet | (uop_has_complex(K) ? kComplexSet : 0);
  dispatch<kIn>(x.dtype(), op, [&]<typename In>() {
    // Integers and bool compute in float32; floats and complex keep their type.
    using Out = std::conditional_t<is_float_v<In> || is_complex_v<In>, In, float>;
    using C = compute_t<Out>;
    unary_loop<Out, In>(out, x, [](In v) { return Out(uop_scalar<K, C>(cast<C>(v))); });
  });
}

template <UOp K>
Tensor unary_op(const Tensor& x, const char* op, bool accepts_integers = true) {
  Tensor out = empty(x.sizes(), float_result(K, op, x.dtype(), accepts_integers));
  run<K>(x, out, op);
  return out;
}

template <UOp K>
Tensor& unary_op_(Tensor& x, const char* op, bool accepts_integers = true) {
  check_inplace(op, float_result(K, op, x.dtype(), accepts_integers), x);
  run<K>(x, x, op);
  return x;
}

UOp gelu_kind(const std::string& approximate, const char* op) {
  if (approximate == "none") return UOp::GeluErf;
  if (approximate == "tanh") return UOp::GeluTanh;
  throw ValueError(std::string("[") + op + "] approximate must be 'none' or 'tanh', got '" + approximate + "'");
}

}  // namespace

#define KILN_FLOAT_UNARY(fn, K)                                      \
  Tensor fn(const Tensor& x) { return unary_op<UOp::K>(x, #fn); }    \
  Tensor& fn##_(Tensor& x) { return unary_op_<UOp::K>(x, #fn "_"); }
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
Tensor silu(const Tensor& x) { return unary_op<UOp::Silu>(x, "silu", false); }
Tensor& silu_(Tensor& x) { return unary_op_<UOp::Silu>(x, "silu_", false); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  return gelu_kind(approximate, "gelu") == UOp::GeluErf ? unary_op<UOp::GeluErf>(x, "gelu", false)
                                                        : unary_op<UOp::GeluTanh>(x, "gelu", false);
}
Tensor& gelu_(Tensor& x, const std::string& approximate) {
  return gelu_kind(approximate, "gelu_") == UOp::GeluErf ? unary_op_<UOp::GeluErf>(x, "gelu_", false)
                                                         : unary_op_<UOp::GeluTanh>(x, "gelu_", false);
}

}  // namespace kiln
