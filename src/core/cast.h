// cast<To>(From): the element conversion behind to(dtype) and copy_, with
// PyTorch's semantics: bool is "!= 0", complex -> real keeps the real part,
// float -> integer as kiln/detail/float_to_int.h (x86 NumPy/torch results, NaN and
// out-of-range included), narrow floats round once to nearest even from the
// exact source value.
#pragma once

#include <cmath>
#include <type_traits>

#include "kiln/detail/float_to_int.h"
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
    // Narrow values are exact in float32; float, double and integers round once
    // from their exact value (no float32 step for double or int64).
    if constexpr (is_narrow_float_v<From>) {
      return To(float(v));
    } else {
      return To(v);
    }
  } else if constexpr (std::is_integral_v<To> && is_float_v<From>) {
    return detail::float_to_int<To>(double(compute_t<From>(v)));
  } else if constexpr (is_narrow_float_v<From>) {
    return static_cast<To>(float(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace kiln
