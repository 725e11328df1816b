// Helpers of the matmul family's op table entries (op_table/matmul_*.cc):
// float64 rounding to the narrow formats a weight is stored in, written from
// the formats' definitions (never through kiln), and a float64 naive product.
#pragma once

#include <cmath>
#include <vector>

#include "op_table/table.h"

namespace op_table {

// v rounded to nearest-even with p significant bits and normal exponents
// down to emin (below: the subnormal grid 2^(emin - p + 1)); no overflow
// (entries draw values inside the format's range).
inline double round_format(double v, int p, int emin) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const int lead = std::max(e - 1, emin);
  const double q = std::ldexp(1.0, lead - (p - 1));
  return std::nearbyint(v / q) * q;
}
inline double as_e4m3(double v) { return round_format(v, 4, -6); }
inline double as_e5m2(double v) { return round_format(v, 3, -14); }
inline double as_bf16(double v) { return round_format(v, 8, -126); }
// A value as stored in `d` (the float formats a weight may take).
inline double stored(double v, DType d) {
  switch (d) {
    case DType::Float8_e4m3fn:
      return as_e4m3(v);
    case DType::Float8_e5m2:
      return as_e5m2(v);
    case DType::BFloat16:
      return as_bf16(v);
    case DType::Float16:
      return round_format(v, 11, -14);
    case DType::Float32:
      return round_format(v, 24, -126);
    default:
      return v;
  }
}

// y [M, N] = x [M, K] @ w^T, w [N, K] (row-major vectors), in float64.
inline std::vector<double> ref_linear(const std::vector<double>& x, const std::vector<double>& w, int64_t M,
                                      int64_t N, int64_t K) {
  std::vector<double> y(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += x[size_t(m * K + k)] * w[size_t(n * K + k)];
      y[size_t(m * N + n)] = s;
    }
  return y;
}

// The tensors' elements one after another, as one 1-D tensor of `d` on the
// first one's device (an entry's call returns one tensor; ops with several
// results join them).
inline Tensor join(const std::vector<Tensor>& ts, DType d) {
  std::vector<double> all;
  for (const Tensor& t : ts) {
    const Tensor c = t.cpu().to(DType::Float64).contiguous();
    all.insert(all.end(), c.data<double>(), c.data<double>() + c.numel());
  }
  return kiln::from_buffer_copy(all.data(), {int64_t(all.size())}, DType::Float64).to(d).to(ts[0].device());
}

}  // namespace op_table
