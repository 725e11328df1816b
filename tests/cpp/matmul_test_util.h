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

// The AVX512-BF16 GEMM (which rounds float32 activations to bf16) set on or
// off while it lives, restored after: tests of the exact float32 products
// turn it off, tests of the bf16 path on.
class Bf16Gemm {
 public:
  explicit Bf16Gemm(bool on) : saved_(cpu::bf16_gemm()) { cpu::set_bf16_gemm(on); }
  ~Bf16Gemm() { cpu::set_bf16_gemm(saved_); }
  Bf16Gemm(const Bf16Gemm&) = delete;
  Bf16Gemm& operator=(const Bf16Gemm&) = delete;

 private:
  bool saved_;
};

// The bf16 GEMM's unit where the CPU has AMX: the tiles (on) or AVX512-BF16
// (off), restored after.
class AmxTiles {
 public:
  explicit AmxTiles(bool on) : saved_(cpu::amx_tiles()) { cpu::set_amx_tiles(on); }
  ~AmxTiles() { cpu::set_amx_tiles(saved_); }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

 private:
  bool saved_;
};

// The AMX settings a bf16 GEMM test runs under: both where the CPU has the
// tiles, so each unit is checked.
inline std::vector<bool> amx_settings() {
  if (cpu::amx_bf16_usable()) return {false, true};
  return {false};
}

}  // namespace kiln::test
