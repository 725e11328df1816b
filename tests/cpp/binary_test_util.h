// Helpers for the binary op tests: tensors from double lists and back, and the
// double-precision reference cast to a dtype the way kiln stores it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/cast.h"
#include "kiln/binary.h"
#include "kiln/kiln.h"

namespace kiln::test {

inline Tensor make(const std::vector<double>& v, DType d, Shape shape = {}) {
  if (shape.empty()) shape = {int64_t(v.size())};
  Tensor t = from_buffer_copy(v.data(), {int64_t(v.size())}, DType::Float64).to(d);
  return t.reshape(shape);
}

inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

// The double x stored in dtype d and read back (integers wrap modulo 2^bits).
inline double stored(double x, DType d) {
  return dispatch<kBoolSet | kIntSet | kFloatSet>(d, "stored", [&]<typename T>() -> double {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (std::isnan(x)) return 0;
      // Wrap through int64/uint64 arithmetic as the kernels do.
      const int64_t i = int64_t(x);
      return double(T(uint64_t(i)));
    } else {
      return double(compute_t<T>(cast<T>(x)));
    }
  });
}

inline void expect_same(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i << ": got " << got[i];
    } else if (rtol == 0) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
    }
  }
}

}  // namespace kiln::test
