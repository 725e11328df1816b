// Accumulator types shared by sums, products and scans.
#pragma once

#include <complex>
#include <type_traits>

#include "core/cast.h"
#include "kiln/dtype.h"

namespace kiln::cpu {

inline constexpr DTypeSet kNoFp8 = kBoolSet | kIntSet | kFloatSet | kComplexSet;

// Accumulator of sums/products: wrapping uint64 for bool and integers (torch
// returns int64), float64 for real floats, complex128 for complex.
template <typename T>
using acc_t = std::conditional_t<is_complex_v<T>, complex128,
                                 std::conditional_t<is_float_v<T>, double, uint64_t>>;
// The natural result type: int64 for bool and integers, else T.
template <typename T>
using sum_out_t = std::conditional_t<is_float_v<T> || is_complex_v<T>, T, int64_t>;

template <typename T>
inline acc_t<T> to_acc(T v) {
  if constexpr (is_complex_v<T>) return complex128(v);
  else if constexpr (is_float_v<T>) return double(compute_t<T>(v));
  else if constexpr (std::is_signed_v<T>) return uint64_t(int64_t(v));
  else return uint64_t(v);
}

template <typename Out, typename A>
inline Out from_acc(A a) {
  if constexpr (std::is_same_v<A, uint64_t>) return cast<Out>(int64_t(a));
  else return cast<Out>(a);
}

}  // namespace kiln::cpu
