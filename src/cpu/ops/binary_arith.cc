// CPU kernels of add, sub, mul (ops/registry/binary.h): wrapping integer
// arithmetic, bool as or/and, and the Highway kernels of cpu/binary.cc for
// contiguous float32 / bfloat16 / float16 operands when alpha is 1.
#include "cpu/ops/binary_loop.h"
#include "cpu/ops/register.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

constexpr DTypeSet kArith = kBoolSet | kIntSet | kFloatSet | kComplexSet;

bool is_one(const Scalar& s) { return s.to_complex() == complex128(1.0, 0.0); }

enum class Kind { Add, Sub, Mul };

// out = a + alpha * b, a - alpha * b or a * b in out's dtype.
template <Kind K>
void arith(const Operand& a, const Operand& b, const Scalar& alpha, const Tensor& out) {
  const bool plain = K == Kind::Mul || is_one(alpha);
  dispatch<kArith>(out.dtype(),
                   K == Kind::Add   ? "add"
                   : K == Kind::Sub ? "sub"
                                    : "mul",
                   [&]<typename T>() {
                     using C = compute_t<T>;
                     if constexpr (std::is_same_v<T, bool>) {
                       const bool al = alpha.to<bool>();
                       if (K == Kind::Mul)
                         run<T, T, T>(out, a, b, [](bool x, bool y) { return x && y; });
                       else
                         run<T, T, T>(out, a, b, [al](bool x, bool y) { return x || (al && y); });
                     } else if (K == Kind::Mul) {
                       run<T, T, T>(
                           out, a, b, [](C x, C y) { return wmul(x, y); }, simd_arith<T>(ArithOp::Mul));
                     } else if (plain && K == Kind::Add) {
                       run<T, T, T>(
                           out, a, b, [](C x, C y) { return wadd(x, y); }, simd_arith<T>(ArithOp::Add));
                     } else if (plain) {
                       run<T, T, T>(
                           out, a, b, [](C x, C y) { return wsub(x, y); }, simd_arith<T>(ArithOp::Sub));
                     } else {
                       // a + alpha * b in compute precision (sub negates alpha; exact for floats,
                       // modular for integers).
                       C al = alpha.to<C>();
                       if (K == Kind::Sub) al = wsub(C{}, al);
                       run<T, T, T>(out, a, b, [al](C x, C y) { return wadd(x, wmul(al, y)); });
                     }
                   });
}

void mul(const Operand& a, const Operand& b, const Tensor& out) {
  arith<Kind::Mul>(a, b, Scalar(int64_t(1)), out);
}

}  // namespace

void register_binary_arith_kernels() {
  ops::add.set_kernel(DeviceKind::CPU, arith<Kind::Add>);
  ops::sub.set_kernel(DeviceKind::CPU, arith<Kind::Sub>);
  ops::mul.set_kernel(DeviceKind::CPU, mul);
}

void register_binary_kernels() {
  register_binary_arith_kernels();
  register_binary_div_kernels();
  register_binary_compare_kernels();
  register_binary_logical_kernels();
  register_binary_math_kernels();
  register_binary_ternary_kernels();
}

}  // namespace kiln::cpu
