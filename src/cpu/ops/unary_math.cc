// CPU kernels of the floating-point unary math ops (ops/registry/unary.h):
// contiguous float32/bfloat16/float16 inputs of the hot ops run the Highway
// kernels of cpu/unary.cc; everything else runs the scalar bodies of
// cpu/unary_scalar.h over the strided loop. Bool and integer inputs compute
// in float32, f16/bf16 in float (narrowed on store), f64 in double, complex
// where the op has a complex form.
#include "core/dense_layout.h"
#include "cpu/ops/loops.h"
#include "cpu/ops/register.h"
#include "cpu/unary.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

// out = K(x); out has x's shape and the dtype the front-end chose (may be x).
template <UOp K>
void run(const Tensor& x, const Tensor& out) {
  if (x.dtype() == out.dtype() && same_dense_layout(x, out) && unary_has_kernel(K, x.dtype())) {
    unary_contiguous(K, x.dtype(), x.data_ptr(), out.data_ptr(), x.numel());
    return;
  }
  constexpr DTypeSet kIn = kBoolSet | kIntSet | kFloatSet | (uop_has_complex(K) ? kComplexSet : 0);
  dispatch<kIn>(x.dtype(), "unary", [&]<typename In>() {
    // Integers and bool compute in float32; floats and complex keep their type.
    using Out = std::conditional_t<is_float_v<In> || is_complex_v<In>, In, float>;
    using C = compute_t<Out>;
    unary_loop<Out, In>(out, x, [](In v) { return Out(uop_scalar<K, C>(cast<C>(v))); });
  });
}

void gelu(const Tensor& x, const Tensor& out, bool tanh_approx) {
  tanh_approx ? run<UOp::GeluTanh>(x, out) : run<UOp::GeluErf>(x, out);
}

}  // namespace

void register_unary_math_kernels() {
  constexpr DeviceKind kCpu = DeviceKind::CPU;
  ops::exp.set_kernel(kCpu, run<UOp::Exp>);
  ops::exp2.set_kernel(kCpu, run<UOp::Exp2>);
  ops::expm1.set_kernel(kCpu, run<UOp::Expm1>);
  ops::log.set_kernel(kCpu, run<UOp::Log>);
  ops::log2.set_kernel(kCpu, run<UOp::Log2>);
  ops::log1p.set_kernel(kCpu, run<UOp::Log1p>);
  ops::sqrt.set_kernel(kCpu, run<UOp::Sqrt>);
  ops::rsqrt.set_kernel(kCpu, run<UOp::Rsqrt>);
  ops::reciprocal.set_kernel(kCpu, run<UOp::Reciprocal>);
  ops::sin.set_kernel(kCpu, run<UOp::Sin>);
  ops::cos.set_kernel(kCpu, run<UOp::Cos>);
  ops::tan.set_kernel(kCpu, run<UOp::Tan>);
  ops::tanh.set_kernel(kCpu, run<UOp::Tanh>);
  ops::sigmoid.set_kernel(kCpu, run<UOp::Sigmoid>);
  ops::silu.set_kernel(kCpu, run<UOp::Silu>);
  ops::gelu.set_kernel(kCpu, gelu);
}

}  // namespace kiln::cpu
