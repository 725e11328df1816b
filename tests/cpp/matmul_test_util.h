// Double-precision references for the matmul-family tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/amx.h"
#include "cpu/gemm.h"
#include "kiln/kiln.h"

namespace kiln::test {

inline std::vector<double> dvals(const Tensor& x) {
  const Tensor d = x.to(DType::Float64).contiguous();
  const double* p = d.data<double>();
  return std::vector<double>(p, p + d.numel());
}

// Standard-normal data of `shape` in dtype d (drawn in float32, then rounded).
inline Tensor randn_as(const Shape& shape, DType d, uint64_t seed) {
  manual_seed(seed);
  return randn(shape, DType::Float32).to(d);
}

// Expects |got - want| <= atol + rtol * |want| + mag_tol * mag elementwise;
// mag is the sum of |terms| of each output (f32 sums in another order differ
// from the double result by a fraction of it, whatever the cancellation).
inline void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol,
                         const std::vector<double>* mag = nullptr, double mag_tol = 0) {
  const std::vector<double> g = dvals(got);
  ASSERT_EQ(g.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]) + (mag ? mag_tol * (*mag)[i] : 0.0);
    if (!(std::fabs(g[i] - want[i]) <= tol)) {
      if (++bad <= 5)
        ADD_FAILURE() << "element " << i << ": got " << g[i] << " want " << want[i] << " tol " << tol;
    }
  }
  EXPECT_EQ(bad, 0);
}

// A kernel switch (Get/Set) set on or off while the guard lives, restored
// after.
template <bool (*Get)(), void (*Set)(bool)>
class ScopedSwitch {
 public:
  explicit ScopedSwitch(bool on) : saved_(Get()) { Set(on); }
  ~ScopedSwitch() { Set(saved_); }
  ScopedSwitch(const ScopedSwitch&) = delete;
  ScopedSwitch& operator=(const ScopedSwitch&) = delete;

 private:
  bool saved_;
};

// The bf16 GEMM (which rounds float32 activations to bf16): tests of the
// exact float32 products turn it off, tests of the bf16 path on.
using Bf16Gemm = ScopedSwitch<cpu::bf16_gemm, cpu::set_bf16_gemm>;
// The bf16 GEMM's unit where the CPU has AMX: the tiles (on) or AVX512-BF16
// (off).
using AmxTiles = ScopedSwitch<cpu::amx_tiles, cpu::set_amx_tiles>;

// The AMX settings a bf16 GEMM test runs under: both where the CPU has the
// tiles, so each unit is checked.
inline std::vector<bool> amx_settings() {
  if (cpu::amx_bf16_usable()) return {false, true};
  return {false};
}

}  // namespace kiln::test
