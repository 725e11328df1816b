// SIMD kernels for the hot contiguous reductions (single-threaded; the
// reduction engine splits long runs across threads and combines the parts).
// Accuracy: values are summed in float32 vector lanes over short blocks and the
// block sums are combined in float64, so error does not grow with n.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// Sum of n contiguous float32 values.
double sum_f32(const float* x, int64_t n);
// Sum of the non-NaN values among n contiguous float32 values (float32 lanes
// over short blocks, as sum_bf16); count, when not null, gets how many there are.
double nansum_f32(const float* x, int64_t n, int64_t* count);
// Sum of n contiguous bfloat16 values (raw bits), widened to float32.
double sum_bf16(const uint16_t* x, int64_t n);
// Mean and sum of squared deviations (M2) of n > 0 contiguous float32 values:
// a two-pass over cache-resident blocks, blocks merged with Chan's formula.
void var_mean_f32(const float* x, int64_t n, double* mean, double* m2);
// The largest / smallest of n >= 1 contiguous float32 values; NaN when any is NaN.
float max_f32(const float* x, int64_t n);
float min_f32(const float* x, int64_t n);

// Chan et al.'s merge of (na, mean_a, m2_a) with (nb, mean_b, m2_b), into a.
inline void chan_merge(double& na, double& mean_a, double& m2_a, double nb, double mean_b, double m2_b) {
  if (nb == 0) return;
  if (na == 0) {
    na = nb;
    mean_a = mean_b;
    m2_a = m2_b;
    return;
  }
  const double n = na + nb;
  const double delta = mean_b - mean_a;
  mean_a += delta * (nb / n);
  m2_a += m2_b + delta * delta * (na * nb / n);
  na = n;
}

}  // namespace kiln::cpu
