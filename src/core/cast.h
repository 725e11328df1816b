// cast<To>(From): the element conversion behind to(dtype) and copy_, with
// PyTorch's semantics: bool is "!= 0", complex -> real keeps the real part,
// float -> integer truncates through int64 (so -1.0 -> uint8 gives 255, as
// torch and NumPy do), narrow floats round to nearest even.
#pragma once

#include <cmath>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln {

template <typename To, typename From>
inline To cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_complex_v<From>) return v.real() != 0 || v.imag() != 0;
    else if constexpr (is_narrow_float_v<From>) return float(v) != 0.0f;
    else return v != From(0);
  } else if constexpr (is_complex_v<To>) {
    using R = typename To::value_type;
    if constexpr (is_complex_v<From>) return To(R(v.real()), R(v.imag()));
    else if constexpr (is_narrow_float_v<From>) return To(R(float(v)), R(0));
    else return To(R(v), R(0));
  } else if constexpr (is_complex_v<From>) {
    return cast<To>(v.real());
  } else if constexpr (std::is_same_v<From, bool>) {
    if constexpr (is_narrow_float_v<To>) return To(v ? 1.0f : 0.0f);
    else return To(v ? 1 : 0);
  } else if constexpr (is_narrow_float_v<To>) {
    if constexpr (is_narrow_float_v<From>) return To(float(v));
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && is_float_v<From>) {
    const double d = double(compute_t<From>(v));
    if (std::isnan(d)) return To(0);
    if constexpr (std::is_same_v<To, uint64_t>) {
      if (d >= 9223372036854775808.0) return d >= 18446744073709551616.0 ? To(0) : To(d);
    }
    if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) return To(INT64_MIN);
    return To(int64_t(d));
  } else if constexpr (is_narrow_float_v<From>) {
    return static_cast<To>(float(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace kiln
