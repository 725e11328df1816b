// Binary and ternary elementwise ops (include/kiln/binary.h). The front-end has
// promoted, broadcast and allocated: each operand comes in its compute dtype,
// expanded to out's shape, or as one value read once (a Python number or a 0-dim
// tensor, kept in compute precision as torch's cpu-scalar path does); `out` has
// the broadcast shape and the op's result dtype (it may be an input itself).
#pragma once

#include <cstdint>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln::ops {

// One operand: a tensor `t` of `dtype` expanded to out's shape, or (is_value) the
// value `v` read as `dtype`'s compute type. Neither: absent (a missing clamp bound).
struct Operand {
  Tensor t;
  Scalar v;
  DType dtype = DType::Float32;
  bool is_value = false;
};

// a, b: [*] (broadcast to out), out: [*]. The compute dtype is a.dtype (b.dtype
// too, except for comparisons of int64 with uint64, which compare exactly).
using Binary = void(const Operand& a, const Operand& b, const Tensor& out);
// out = a + alpha * b (sub: a - alpha * b); alpha checked against out's dtype.
using BinaryAlpha = void(const Operand& a, const Operand& b, const Scalar& alpha, const Tensor& out);
// As Binary; returns true when some element had bad integer input (a zero
// divisor, a negative exponent): out holds 0 there and the front-end raises.
using BinaryChecked = bool(const Operand& a, const Operand& b, const Tensor& out);

// div's rounding_mode: "" (true division), "trunc", "floor".
enum class DivMode : uint8_t { True, Trunc, Floor };
// As BinaryChecked. True division of integers (a.dtype integral) writes float32.
using Div = bool(const Operand& a, const Operand& b, DivMode mode, const Tensor& out);

// cond: [*] bool or uint8, a, b: [*] in out's dtype, all expanded to out: [*].
using Where = void(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
// x: the clamped operand; lo, hi: the bounds (at least one present), all in
// out's dtype. Either both bounds are values/absent (x a tensor or a value), or
// the present bounds are tensors expanded to out's shape (x a tensor too).
using Clamp = void(const Operand& x, const Operand& lo, const Operand& hi, const Tensor& out);
// start, end: [*] expanded to out: [*], one floating/complex dtype; weight: a
// value, or a tensor of that dtype expanded to out's shape.
using Lerp = void(const Tensor& start, const Tensor& end, const Operand& weight, const Tensor& out);
// out = input + value * t1 * t2; input, t1, t2: [*] in out's dtype, expanded.
using Addcmul = void(const Tensor& input, const Tensor& t1, const Tensor& t2, const Scalar& value,
                     const Tensor& out);

// One op per public function; the in-place op_ and out= forms share it.
#define KILN_OPS_BINARY(X)       \
  X(add, BinaryAlpha)            \
  X(sub, BinaryAlpha)            \
  X(mul, Binary)                 \
  X(div, Div)                    \
  X(true_divide, Binary)         \
  X(floor_divide, BinaryChecked) \
  X(remainder, BinaryChecked)    \
  X(fmod, BinaryChecked)         \
  X(pow, BinaryChecked)          \
  X(maximum, Binary)             \
  X(minimum, Binary)             \
  X(atan2, Binary)               \
  X(copysign, Binary)            \
  X(heaviside, Binary)           \
  X(eq, Binary)                  \
  X(ne, Binary)                  \
  X(lt, Binary)                  \
  X(le, Binary)                  \
  X(gt, Binary)                  \
  X(ge, Binary)                  \
  X(logical_and, Binary)         \
  X(logical_or, Binary)          \
  X(logical_xor, Binary)         \
  X(bitwise_and, Binary)         \
  X(bitwise_or, Binary)          \
  X(bitwise_xor, Binary)         \
  X(bitwise_left_shift, Binary)  \
  X(bitwise_right_shift, Binary) \
  X(where, Where)                \
  X(clamp, Clamp)                \
  X(clamp_min, Clamp)            \
  X(clamp_max, Clamp)            \
  X(lerp, Lerp)                  \
  X(addcmul, Addcmul)

}  // namespace kiln::ops
