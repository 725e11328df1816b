// The README's C++ example, with its result checked against a plain loop over
// the dequantized FP8 weights.
#include <cmath>
#include <cstdio>

#include "kiln/kiln.h"

int main() {
  kiln::Tensor x = kiln::arange(0, 12).reshape({3, 4}).to(kiln::DType::BFloat16);
  // A weight kept for many calls: scan its e4m3 codes once for NaN, and the GEMV skips its own test.
  auto [w, s] = kiln::quantize_fp8(kiln::randn({4096, 4096}), kiln::QuantGranularity::Row);
  auto codes = kiln::fp8_has_nan_code(w) ? kiln::Fp8Codes::Unchecked : kiln::Fp8Codes::NoNan;
  kiln::Tensor y = kiln::empty({1, 4096});
  kiln::Tensor in = kiln::randn({1, 4096});
  kiln::linear_out(in, w, kiln::Tensor(), s, y, codes);

  std::printf("kiln %s\n", kiln::kVersion);
  std::printf("x %s %s sum %g\n", x.shape_str().c_str(), kiln::name(x.dtype()),
              kiln::sum(x.to(kiln::DType::Float32)).item<float>());
  // y[n] = sum_k in[k] * w[n, k] * s[n], in double.
  const kiln::Tensor wf = w.to(kiln::DType::Float32).contiguous(), sf = s.contiguous(), inf = in.contiguous();
  const float *pw = wf.data<float>(), *ps = sf.data<float>(), *pi = inf.data<float>(), *py = y.data<float>();
  double worst = 0;
  for (int n = 0; n < 4096; ++n) {
    double ref = 0, mag = 0;
    for (int k = 0; k < 4096; ++k) {
      ref += double(pi[k]) * pw[size_t(n) * 4096 + k];
      mag += std::fabs(double(pi[k]) * pw[size_t(n) * 4096 + k]);
    }
    worst = std::fmax(worst, std::fabs(py[n] - ref * ps[n]) / (mag * ps[n] + 1e-30));
  }
  std::printf("y %s %s, linear_out %s the reference\n", y.shape_str().c_str(), kiln::name(y.dtype()),
              worst < 1e-4 ? "matches" : "differs from");
  return worst < 1e-4 ? 0 : 1;
}
