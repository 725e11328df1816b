// Binary and ternary elementwise ops with PyTorch's names, broadcasting, type
// promotion (torch.result_type) and semantics.
//
// Conventions shared by every op here:
//   - Overloads (Tensor, Tensor), (Tensor, Scalar) and (Scalar, Tensor). A Scalar
//     (Python number) and a 0-dim tensor take part in promotion with lower
//     priority than a dimensioned tensor, exactly as torch.result_type.
//   - `out`: when defined, must have the broadcast shape (ValueError) and a dtype the
//     result can be cast to (torch.can_cast, TypeError); the returned tensor is out.
//     An undefined `out` (the default, Tensor()) allocates the result.
//   - In-place `op_(self, other)` writes into self: self must already have the
//     broadcast shape, and the result dtype must be castable to self's dtype
//     (an int tensor += a float raises TypeError, as in torch). Returns self.
//   - FP8 operands raise TypeError (no implicit promotion, no arithmetic on FP8;
//     convert with .to() first).
//   - Integer division by zero (div with a rounding mode, floor_divide, remainder,
//     fmod) raises ValueError (torch raises RuntimeError "ZeroDivisionError").
//   - Comparisons of integers are exact even across signedness (uint64 max >
//     int64 -1 is true; a uint8 tensor > -1 is all true), as NumPy 2 does.
#pragma once

#include <optional>
#include <string_view>

#include "kiln/scalar.h"
#include "kiln/tensor.h"

namespace kiln {

// Declares op(T, T), op(T, S), op(S, T) with an optional out=, and op_(self, T),
// op_(self, S) for a plain binary op.
#define KILN_BINARY_OP(op)                                                   \
  Tensor op(const Tensor& a, const Tensor& b, const Tensor& out = Tensor()); \
  Tensor op(const Tensor& a, const Scalar& b, const Tensor& out = Tensor()); \
  Tensor op(const Scalar& a, const Tensor& b, const Tensor& out = Tensor()); \
  const Tensor& op##_(const Tensor& self, const Tensor& other);              \
  const Tensor& op##_(const Tensor& self, const Scalar& other)

// ---- arithmetic ---------------------------------------------------------------

// a + alpha * b. alpha must be integral for integral results, bool for bool.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = Scalar(int64_t(1)),
           const Tensor& out = Tensor());
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = Scalar(int64_t(1)),
           const Tensor& out = Tensor());
Tensor add(const Scalar& a, const Tensor& b, const Scalar& alpha = Scalar(int64_t(1)),
           const Tensor& out = Tensor());
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = Scalar(int64_t(1)));
const Tensor& add_(const Tensor& self, const Scalar& other, const Scalar& alpha = Scalar(int64_t(1)));

// a - alpha * b. Bool operands raise TypeError (use logical_xor), as torch.
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = Scalar(int64_t(1)),
           const Tensor& out = Tensor());
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = Scalar(int64_t(1)),
           const Tensor& out = Tensor());
Tensor sub(const Scalar& a, const Tensor& b, const Scalar& alpha = Scalar(int64_t(1)),
           const Tensor& out = Tensor());
const Tensor& sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = Scalar(int64_t(1)));
const Tensor& sub_(const Tensor& self, const Scalar& other, const Scalar& alpha = Scalar(int64_t(1)));

KILN_BINARY_OP(mul);

// ---- division -------------------------------------------------------------------

// rounding_mode "" (true division: integers give float32), "trunc" or "floor"
// (integer results for integer inputs; division by zero raises ValueError).
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode = {},
           const Tensor& out = Tensor());
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode = {},
           const Tensor& out = Tensor());
Tensor div(const Scalar& a, const Tensor& b, std::string_view rounding_mode = {},
           const Tensor& out = Tensor());
const Tensor& div_(const Tensor& self, const Tensor& other, std::string_view rounding_mode = {});
const Tensor& div_(const Tensor& self, const Scalar& other, std::string_view rounding_mode = {});

KILN_BINARY_OP(true_divide);   // div with rounding_mode ""
KILN_BINARY_OP(floor_divide);  // Python's //: -7 // 2 == -4
KILN_BINARY_OP(remainder);     // Python's %: sign of the divisor, remainder(-7, 2) == 1
KILN_BINARY_OP(fmod);          // C's fmod: sign of the dividend, fmod(-7, 2) == -1

// ---- other math -----------------------------------------------------------------

KILN_BINARY_OP(pow);       // integer base with a negative integer exponent raises ValueError
KILN_BINARY_OP(maximum);   // NaN propagates
KILN_BINARY_OP(minimum);   // NaN propagates
KILN_BINARY_OP(atan2);     // integers compute in float32
KILN_BINARY_OP(copysign);  // always floating (integers give float32)
KILN_BINARY_OP(heaviside); // heaviside(x, values): 0 for x < 0, values for x == 0, 1 for x > 0

// ---- comparisons (bool results; in-place variants write 0/1 in self's dtype) --------

KILN_BINARY_OP(eq);
KILN_BINARY_OP(ne);
KILN_BINARY_OP(lt);
KILN_BINARY_OP(le);
KILN_BINARY_OP(gt);
KILN_BINARY_OP(ge);

// ---- logical (bool results, any dtype) and bitwise (integers and bool) --------------

KILN_BINARY_OP(logical_and);
KILN_BINARY_OP(logical_or);
KILN_BINARY_OP(logical_xor);
KILN_BINARY_OP(bitwise_and);
KILN_BINARY_OP(bitwise_or);
KILN_BINARY_OP(bitwise_xor);
// Shifts: a shift count < 0 or >= the bit width gives 0 for <<, and 0 or -1
// (sign fill) for >>, as torch.
KILN_BINARY_OP(bitwise_left_shift);
KILN_BINARY_OP(bitwise_right_shift);

#undef KILN_BINARY_OP

// ---- ternary ------------------------------------------------------------------------

// where(cond, a, b): a where cond else b. cond is bool or uint8; a and b promote
// as torch.where (tensors over scalars; two scalars give their promotion dtype).
// Being a pure selection, where also accepts FP8 a and b of one dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out = Tensor());
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b, const Tensor& out = Tensor());
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b, const Tensor& out = Tensor());
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b, const Tensor& out = Tensor());

// clamp(x, min, max): at least one bound (ValueError otherwise; an absent tensor
// bound is an undefined Tensor()); NaN in x or in a
// bound propagates; min > max gives max, as torch. The result dtype is
// result_type(x, min, max) (clamp of an int tensor with a float bound is float32).
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
             const Tensor& out = Tensor());
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, const Tensor& out = Tensor());
const Tensor& clamp_(const Tensor& self, const std::optional<Scalar>& min,
                     const std::optional<Scalar>& max);
const Tensor& clamp_(const Tensor& self, const Tensor& min, const Tensor& max);
Tensor clamp_min(const Tensor& x, const Scalar& min, const Tensor& out = Tensor());
Tensor clamp_min(const Tensor& x, const Tensor& min, const Tensor& out = Tensor());
Tensor clamp_max(const Tensor& x, const Scalar& max, const Tensor& out = Tensor());
Tensor clamp_max(const Tensor& x, const Tensor& max, const Tensor& out = Tensor());

// lerp(start, end, weight) = start + weight * (end - start). start and end must
// share one floating or complex dtype (TypeError otherwise), as must a tensor
// weight; the result has that dtype.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight, const Tensor& out = Tensor());
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& out = Tensor());
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Scalar& weight);
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight);

// addcmul(input, t1, t2, value) = input + value * t1 * t2, promoted over all three.
Tensor addcmul(const Tensor& input, const Tensor& t1, const Tensor& t2,
               const Scalar& value = Scalar(int64_t(1)), const Tensor& out = Tensor());
const Tensor& addcmul_(const Tensor& self, const Tensor& t1, const Tensor& t2,
                       const Scalar& value = Scalar(int64_t(1)));

// torch.result_type for two operands (tensors of dim() > 0 over 0-dim tensors
// over Python numbers), and torch.can_cast(from, to).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
DType result_type(const Scalar& a, const Tensor& b);
DType result_type(const Scalar& a, const Scalar& b);
bool can_cast(DType from, DType to);

}  // namespace kiln
