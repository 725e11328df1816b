// The SIMD unary kernels (cpu/unary.h): every op that unary_has_kernel admits
// writes every element of its output on every SIMD target, for every length
// (whole vectors and the padded tail), and agrees with its scalar body, which
// the strided loops run.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <vector>

#include "cpu/unary.h"

namespace {

using kiln::UOp;

// The scalar body of op k in double, for the comparison (a runtime switch over
// the compile-time bodies).
template <int K>
double scalar_body(int k, float x) {
  if constexpr (K < kiln::kUOpCount) {
    if (k == K) return double(kiln::uop_scalar<UOp(K), float>(x));
    return scalar_body<K + 1>(k, x);
  } else {
    return std::nan("");
  }
}

TEST(UnaryKernels, EveryAdmittedOpWritesEveryElementOnEveryTarget) {
  const int64_t before = hwy::SupportedTargets();
  const float kSentinel = 1.2345e30f;  // no op yields it for inputs in [-3, 3]
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    SCOPED_TRACE(hwy::TargetName(target));
    for (int k = 0; k < kiln::kUOpCount; ++k) {
      if (!kiln::cpu::unary_has_kernel(UOp(k), kiln::DType::Float32)) continue;
      SCOPED_TRACE("op " + std::to_string(k));
      for (int64_t n : {1, 7, 16, 67, 1000}) {
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), kSentinel);
        for (int64_t i = 0; i < n; ++i) x[size_t(i)] = -3.0f + 6.0f * float(i) / float(n) + 0.01f;
        kiln::cpu::unary_contiguous(UOp(k), kiln::DType::Float32, x.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_NE(y[size_t(i)], kSentinel) << "element " << i << " of " << n << " not written";
          const double want = scalar_body<0>(k, x[size_t(i)]);
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(y[size_t(i)])) << "x = " << x[size_t(i)];
          } else if (std::isinf(want)) {  // a pole (lgamma at -2)
            EXPECT_EQ(double(y[size_t(i)]), want) << "x = " << x[size_t(i)];
          } else {
            // The vector bodies are within a few float32 ulps of the scalar ones.
            EXPECT_NEAR(y[size_t(i)], want, 4e-6 * std::fabs(want) + 1e-6) << "x = " << x[size_t(i)];
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(before);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

}  // namespace
