// kiln::Scalar: a Python-style number (bool, integer, float or complex) used by
// factories and tensor-scalar ops. It takes part in type promotion with lower
// priority than tensors, as Python numbers do in PyTorch.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "kiln/detail/float_to_int.h"
#include "kiln/dtype.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float, Complex };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v), d_(v) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v)
      : kind_(Kind::Int), i_(int64_t(v)), d_(double(v)), u_(uint64_t(v)),
        above_int64_(std::is_unsigned_v<T> && uint64_t(v) > uint64_t(INT64_MAX)) {}
  Scalar(double v) : kind_(Kind::Float), i_(int64_t(0)), d_(v) {}
  Scalar(float v) : Scalar(double(v)) {}
  Scalar(complex128 v) : kind_(Kind::Complex), i_(0), d_(v.real()), imag_(v.imag()) {}
  Scalar(complex64 v) : Scalar(complex128(v)) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_complex() const { return kind_ == Kind::Complex; }
  // An unsigned integer too large for int64 (it still converts exactly to uint64).
  bool above_int64() const { return above_int64_; }

  double to_double() const { return d_; }  // exact for uint64 values past INT64_MAX too
  int64_t to_int64() const { return kind_ == Kind::Int || kind_ == Kind::Bool ? i_ : int64_t(d_); }
  complex128 to_complex() const { return {to_double(), imag_}; }

  // The value converted to storage type T (C++ conversion semantics; a float
  // type rounds once, to nearest even, from the exact value, all 64 bits of an
  // integer included; an integer type keeps all 64 bits).
  template <typename T> T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return kind_ == Kind::Complex ? (d_ != 0 || imag_ != 0) : (kind_ == Kind::Int ? i_ != 0 : d_ != 0);
    } else if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      return T(real_as<R>(), R(imag_));
    } else if constexpr (std::is_integral_v<T>) {
      if (kind_ == Kind::Int || kind_ == Kind::Bool) return std::is_unsigned_v<T> ? T(u_ ? u_ : uint64_t(i_)) : T(i_);
      return detail::float_to_int<T>(d_);
    } else {
      return real_as<T>();
    }
  }

  // The dtype this value takes part in promotion with (torch's wrapped-number
  // rule): bool, int64, the default float (float32) or complex64.
  DType promotion_dtype() const {
    switch (kind_) {
      case Kind::Bool: return DType::Bool;
      case Kind::Int: return DType::Int64;
      case Kind::Float: return kDefaultFloat;
      default: return kDefaultComplex;
    }
  }
  // Whether the value converts to dtype d without overflow, by torch's rule
  // (c10::checked_convert, which torch applies when a fill value, a factory
  // value or a clamp bound is stored): anything converts to bool; otherwise a
  // finite value must lie within d's range (real and imaginary parts apart for
  // complex d), a complex value with an imaginary part fits no real d, NaN and
  // inf fit only float dtypes that have them. An integer value going into an
  // unsigned dtype may be negative down to -max (it wraps, as in torch:
  // full(-1, dtype=uint8) is 255).
  bool fits(DType d) const;
  // "value V does not fit D" style text: the value as Python writes it (uint64
  // values past int64 included).
  std::string str() const;

 private:
  // The real part as floating type R: an integer converts from the integer
  // itself, since going through the double would round twice past 2^53
  // (2^60 + 2^36 + 1 is 2^60 + 2^37 in float32, but 2^60 via the double).
  template <typename R>
  R real_as() const {
    if (kind_ == Kind::Int) return above_int64_ ? R(u_) : R(i_);
    return R(d_);
  }

  Kind kind_;
  int64_t i_ = 0;
  double d_ = 0;
  uint64_t u_ = 0;
  double imag_ = 0;
  bool above_int64_ = false;
};

}  // namespace kiln
