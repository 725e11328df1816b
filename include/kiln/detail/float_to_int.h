// Floating point -> integer conversion with the results NumPy and PyTorch give
// on x86 for every input, including those C++ leaves undefined: truncation
// toward zero; NaN and out-of-range values become the "integer indefinite"
// (INT32_MIN for targets of 4 bytes or fewer, INT64_MIN for 8-byte targets),
// then truncated to the target's width; uint32 and uint64 go through int64
// (uint64 through uint64 above 2^63), so -1.0 -> uint8 gives 255.
// Not API: installed because Scalar::to<T> (kiln/scalar.h), an inline
// template, calls it; kiln's casts (src/core/cast.h) share it.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace kiln::detail {

template <typename To>
inline To float_to_int(double d) {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool>);
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return To(d);
  }
  if constexpr (sizeof(To) <= 4 && !std::is_same_v<To, uint32_t>) {
    if (!(d > -2147483649.0 && d < 2147483648.0)) return To(uint32_t(0x80000000u));
    return To(int32_t(d));
  } else {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return To(uint64_t(1) << 63);
    return To(int64_t(d));
  }
}

}  // namespace kiln::detail
