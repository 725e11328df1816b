// linear / linear_out and the matrix-vector kernels against a double-precision
// reference: every weight dtype and scale layout, 1..16 rows (both kernels), prefill rows,
// odd shapes, narrow activations, bias, non-contiguous inputs and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/gemv.h"
#include "kiln/kiln.h"
#include "kiln/sysinfo.h"
#include "kiln/thread_pool.h"
#include "matmul_test_util.h"

namespace kiln {
namespace {

using test::dvals;
using test::randn_as;

const DType kWeightTypes[] = {DType::Float32, DType::BFloat16, DType::Float16, DType::Float8_e4m3fn,
                              DType::Float8_e5m2};

// Runs body once in each way the x86 (AVX2, AVX-512) e4m3 kernel can meet
// subnormal codes (the other targets and dtypes ignore the setting), then
// restores it.
template <class F>
void in_each_subnormal_mode(F&& body) {
  const cpu::E4M3Subnormals saved = cpu::e4m3_subnormals();
  for (cpu::E4M3Subnormals mode : {cpu::E4M3Subnormals::Test, cpu::E4M3Subnormals::Fma}) {
    cpu::set_e4m3_subnormals(mode);
    SCOPED_TRACE(mode == cpu::E4M3Subnormals::Test ? "subnormal mode Test" : "subnormal mode Fma");
    body();
  }
  cpu::set_e4m3_subnormals(saved);
}

// The AVX512-BF16 dot kernel off while it lives (the tests that follow one
// activation row through the widening kernels), restored after.
class DotKernelOff {
 public:
  DotKernelOff() : saved_(cpu::bf16_dot()) { cpu::set_bf16_dot(false); }
  ~DotKernelOff() { cpu::set_bf16_dot(saved_); }
  DotKernelOff(const DotKernelOff&) = delete;
  DotKernelOff& operator=(const DotKernelOff&) = delete;

 private:
  bool saved_;
};

// y = x @ (w * scale)^T + bias in double, plus sum |terms| for tolerances.
void reference(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& scale,
               std::vector<double>& y, std::vector<double>& mag) {
  const int64_t K = w.size(1), N = w.size(0);
  const int64_t M = K == 0 ? 1 : x.numel() / K;
  const auto xv = dvals(x), wv = dvals(w);
  const std::vector<double> bv = bias.defined() ? dvals(bias) : std::vector<double>();
  const std::vector<double> sv = scale.defined() ? dvals(scale) : std::vector<double>();
  const int64_t kb = (K + 127) / 128;
  const bool row = int64_t(sv.size()) == N && scale.defined() && scale.size(0) == N && sv.size() != 1;
  y.assign(size_t(M * N), 0);
  mag.assign(size_t(M * N), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0, a = 0;
      for (int64_t k = 0; k < K; ++k) {
        double sc = 1;
        if (sv.size() == 1)
          sc = sv[0];
        else if (row)
          sc = sv[size_t(n)];
        else if (!sv.empty())
          sc = sv[size_t((n / 128) * kb + k / 128)];
        const double t = wv[size_t(n * K + k)] * sc * xv[size_t(m * K + k)];
        s += t;
        a += std::fabs(t);
      }
      if (!bv.empty()) {
        s += bv[size_t(n)];
        a += std::fabs(bv[size_t(n)]);
      }
      y[size_t(m * N + n)] = s;
      mag[size_t(m * N + n)] = a;
    }
}

// The scale tensor of a layout for W [N, K]: 0 none, 1 tensor, 2 row, 3 block.
Tensor make_scale(int kind, int64_t N, int64_t K) {
  manual_seed(77);
  switch (kind) {
    case 1:
      return full({}, Scalar(0.37), DType::Float32);
    case 2:
      return add(rand({N, 1}, DType::Float32), Scalar(0.5));
    case 3:
      return add(rand({(N + 127) / 128, (K + 127) / 128}, DType::Float32), Scalar(0.5));
    default:
      return Tensor();
  }
}

double out_rtol(DType d) { return d == DType::Float32 ? 0 : d == DType::BFloat16 ? 1.0 / 128 : 1.0 / 1024; }

void check_linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& scale) {
  std::vector<double> want, mag;
  reference(x, w, bias, scale, want, mag);
  const Tensor y = linear(x, w, bias, scale);
  Shape s = x.sizes();
  s.back() = w.size(0);
  ASSERT_EQ(y.sizes(), s);
  ASSERT_EQ(y.dtype(), x.dtype());
  test::expect_close(y, want, out_rtol(x.dtype()), 1e-30, &mag, 1e-5);
}

std::string trace(DType wd, int sk, int64_t M, int64_t N, int64_t K) {
  return std::string(name(wd)) + " scale " + std::to_string(sk) + " M " + std::to_string(M) + " N " +
         std::to_string(N) + " K " + std::to_string(K);
}

TEST(Linear, FewRowsEveryWeightTypeAndScaleLayout) {
  const test::Bf16Gemm exact(false);
  for (DType wd : kWeightTypes)
    for (int sk = 0; sk < 4; ++sk)
      for (int64_t M : {1, 2, 3, 4, 5, 16})
        for (auto [N, K] : {std::pair<int64_t, int64_t>{37, 300}, {259, 130}, {8, 16}, {1, 1}}) {
          SCOPED_TRACE(trace(wd, sk, M, N, K));
          check_linear(randn_as({M, K}, DType::Float32, 1), randn_as({N, K}, wd, 2),
                       randn_as({N}, DType::Float32, 3), make_scale(sk, N, K));
        }
}

// One activation row reads weight rows up to a CPU-dependent length whole,
// two or four far-apart runs at a time, and longer ones several side by side
// (cpu::gemv_tuning()). Under each kind of CPU's tuning, on whatever CPU runs the
// test: rows at and just past each length and well past the longest; row
// counts that leave each number of rows outside the runs (0-3) in a thread's
// range, and fewer rows than runs; each scale layout. The dot kernel is off,
// so bf16 and FP8 take these paths on CPUs that have it too.
TEST(Linear, OneRowAcrossTheRowRunsLengths) {
  const cpu::GemvTuning saved = cpu::gemv_tuning();
  const DotKernelOff dot_off;
  for (cpu::CpuKind v :
       {cpu::CpuKind::Intel, cpu::CpuKind::IntelBf16, cpu::CpuKind::Amd, cpu::CpuKind::Other}) {
    const cpu::GemvTuning t = cpu::gemv_tuning_for(v);
    cpu::set_gemv_tuning(t);
    for (DType wd : kWeightTypes) {
      const int64_t isz = int64_t(itemsize(wd));
      const int64_t max_k = t.row_runs_max_bytes_for(isz) / isz;
      for (int64_t K : {max_k, max_k + 1, 2 * max_k + 70})
        for (int64_t N : {3, 21, 22, 23, 45})
          for (int sk = 0; sk < 4; ++sk) {
            SCOPED_TRACE(trace(wd, sk, 1, N, K) + " kind " + std::to_string(int(v)));
            check_linear(randn_as({1, K}, DType::Float32, 7), randn_as({N, K}, wd, 8),
                         randn_as({N}, DType::Float32, 9), make_scale(sk, N, K));
          }
    }
  }
  cpu::set_gemv_tuning(saved);
}

TEST(Linear, PrefillRowsEveryWeightTypeAndScaleLayout) {
  const test::Bf16Gemm exact(false);
  for (DType wd : kWeightTypes)
    for (int sk = 0; sk < 4; ++sk)
      for (int64_t M : {17, 40}) {
        const int64_t N = 200, K = 260;
        SCOPED_TRACE(trace(wd, sk, M, N, K));
        check_linear(randn_as({M, K}, DType::Float32, 4), randn_as({N, K}, wd, 5), Tensor(),
                     make_scale(sk, N, K));
        check_linear(randn_as({M, K}, DType::Float32, 4), randn_as({N, K}, wd, 5),
                     randn_as({N}, DType::BFloat16, 6), make_scale(sk, N, K));
      }
}

// The packed GEMM's blocking edges: rows just past the matrix-vector path and
// past one and two vectors of tokens (AVX2 and AVX-512 alike), K below one
// loader chunk, exactly one 256-wide K block and one past it, scale blocks
// split inside a K block, N tails of the 12- and 6-row tiles and of the
// 192-row panel, and enough rows at K = 8192 for several token blocks.
TEST(Linear, PackedGemmBlockBoundaries) {
  const test::Bf16Gemm exact(false);
  struct Case {
    int64_t M, N, K;
  };
  const Case cases[] = {{7, 13, 5},     {9, 12, 256}, {16, 205, 513},
                        {17, 130, 300}, {33, 7, 64},  {300, 7, 8192}};
  for (DType wd : kWeightTypes)
    for (int sk : {0, 2, 3})
      for (const Case& c : cases) {
        SCOPED_TRACE(trace(wd, sk, c.M, c.N, c.K));
        check_linear(randn_as({c.M, c.K}, DType::Float32, 14), randn_as({c.N, c.K}, wd, 15),
                     randn_as({c.N}, DType::Float32, 16), make_scale(sk, c.N, c.K));
      }
}

// The bf16 GEMM (gemm_bf16.cc) on each unit the CPU has (AVX512-BF16, AMX
// tiles): bf16, f16 (as hi + lo bf16 parts) and FP8 weights (no scale,
// tensor, row and 128 x 128 block scales) give the double-precision product
// of bf16(x) and W within float32 accumulation, at
// the packed GEMM's blocking edges (one and two token vectors, odd K, K
// blocks, panel and tile tails, AMX's loop orders for few and many tokens);
// and within the rounding's stated bound, 2^-8 of sum |x w|, of the product
// of x itself.
TEST(Linear, Bf16GemmIsExactToBf16RoundedActivations) {
  const test::Bf16Gemm on(true);
  if (!cpu::bf16_gemm_active()) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    SCOPED_TRACE(amx ? "AMX tiles" : "AVX512-BF16");
    struct Case {
      int64_t M, N, K;
    };
    const Case cases[] = {{7, 13, 5},     {9, 12, 256},   {16, 205, 513}, {17, 130, 300}, {33, 7, 64},
                          {40, 200, 259}, {300, 7, 2049}, {200, 40, 600}, {1030, 40, 640}};
    for (DType wd : {DType::BFloat16, DType::Float16, DType::Float8_e4m3fn, DType::Float8_e5m2})
      for (int sk : {0, 1, 2, 3})
        for (const Case& c : cases) {
          SCOPED_TRACE(trace(wd, sk, c.M, c.N, c.K));
          const Tensor x = randn_as({c.M, c.K}, DType::Float32, 14), w = randn_as({c.N, c.K}, wd, 15);
          const Tensor b = randn_as({c.N}, DType::Float32, 16), sc = make_scale(sk, c.N, c.K);
          const cpu::ScaleKind kinds[] = {cpu::ScaleKind::None, cpu::ScaleKind::Tensor, cpu::ScaleKind::Row,
                                          cpu::ScaleKind::Block};
          ASSERT_TRUE(cpu::bf16_gemm_covers(wd, kinds[sk]));
          const Tensor y = linear(x, w, b, sc);
          std::vector<double> want, mag;
          reference(x.to(DType::BFloat16), w, b, sc, want, mag);
          test::expect_close(y, want, 0, 1e-30, &mag, 1e-5);
          reference(x, w, b, sc, want, mag);
          test::expect_close(y, want, 0, 1e-30, &mag, 0x1p-8 + 1e-5);
        }
  }
}

// bf16 weights in whole 32-row tiles and 32-k steps, which the AMX kernel
// reads where they lie (no copy), from a contiguous W and from a view with
// rows further apart than K; and edges beside them that go through the
// widened panel (N = 200: a 192-row panel and an 8-row one; K = 300: a
// 44-wide last K block), with 7 to 160 tokens (the slice-first and the
// token-block-first loop orders).
TEST(Linear, Bf16GemmBf16WeightsInPlaceAndAtEdges) {
  const test::Bf16Gemm on(true);
  if (!cpu::bf16_gemm_active()) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  const Tensor wbig = randn_as({224, 608}, DType::BFloat16, 27);
  const Tensor views[] = {wbig.slice(0, 0, 192).slice(1, 0, 512).contiguous(), wbig.slice(1, 32, 544),
                          wbig.slice(0, 0, 200).slice(1, 0, 300)};
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    for (const Tensor& w : views)
      for (int64_t M : {7, 40, 160}) {
        SCOPED_TRACE(std::string(amx ? "AMX tiles" : "AVX512-BF16") + " M=" + std::to_string(M) +
                     " N=" + std::to_string(w.size(0)) + " K=" + std::to_string(w.size(1)) +
                     " ldw=" + std::to_string(w.stride(0)));
        const Tensor x = randn_as({M, w.size(1)}, DType::Float32, 28);
        const Tensor b = randn_as({w.size(0)}, DType::Float32, 29);
        std::vector<double> want, mag;
        reference(x.to(DType::BFloat16), w, b, Tensor(), want, mag);
        test::expect_close(linear(x, w, b), want, 0, 1e-30, &mag, 1e-5);
      }
  }
}

// Many tokens on AMX (x as the tiles' A operand, W packed per panel): two
// panels (N = 230 past one 192-row panel at K = 2100, whose last step is 20
// wide), 17 token blocks (the last of 8 tokens), float32 x and y and bf16 x
// and y (rounded once at the end), each weight type with row scales (FP8
// also with block scales, whose last block is 52 wide) and a bias. Exact to
// the double-precision product of bf16(x) and W within float32 accumulation
// (and y's own rounding for bf16 y).
TEST(Linear, Bf16GemmManyTokensOverPanels) {
  const test::Bf16Gemm on(true);
  const test::AmxTiles unit(true);
  if (!cpu::amx_tiles_active()) GTEST_SKIP() << "no AMX-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  const int64_t M = 520, N = 230, K = 2100;
  const Tensor x = randn_as({M, K}, DType::Float32, 41), b = randn_as({N}, DType::Float32, 42);
  for (DType wd : {DType::BFloat16, DType::Float16, DType::Float8_e4m3fn, DType::Float8_e5m2})
    for (int sk : {2, 3}) {
      if (sk == 3 && (wd == DType::BFloat16 || wd == DType::Float16)) continue;
      SCOPED_TRACE(trace(wd, sk, M, N, K));
      const Tensor w = randn_as({N, K}, wd, 43), sc = make_scale(sk, N, K);
      std::vector<double> want, mag;
      reference(x.to(DType::BFloat16), w, b, sc, want, mag);
      test::expect_close(linear(x, w, b, sc), want, 0, 1e-30, &mag, 1e-5);
      test::expect_close(linear(x.to(DType::BFloat16), w, b, sc), want, 0, 1e-30, &mag, 0x1p-8);
    }
}

// Every FP8 code through the bf16 GEMM's conversion: W is diagonal with code
// n at W[n, n], x the identity, so y[n, n] is code n's value: exact for every
// finite code (subnormals and both zeros included), NaN for NaN codes, e5m2's
// infinities infinite with their sign.
TEST(Linear, Bf16GemmDecodesEveryFp8Code) {
  const test::Bf16Gemm on(true);
  if (!cpu::bf16_gemm_active()) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    SCOPED_TRACE(amx ? "AMX tiles" : "AVX512-BF16");
    const int64_t n = 256;
    Tensor x = zeros({n, n});
    for (int64_t i = 0; i < n; ++i) x.data<float>()[i * n + i] = 1.0f;
    for (DType wd : {DType::Float8_e4m3fn, DType::Float8_e5m2}) {
      SCOPED_TRACE(name(wd));
      std::vector<uint8_t> codes(size_t(n * n), 0);
      for (int64_t i = 0; i < n; ++i) codes[size_t(i * n + i)] = uint8_t(i);
      const Tensor w = from_buffer_copy(codes.data(), {n, n}, wd);
      const auto yv = dvals(linear(x, w)), wv = dvals(w);
      for (int64_t i = 0; i < n; ++i) {
        const double got = yv[size_t(i * n + i)], want = wv[size_t(i * n + i)];
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got)) << "code " << i;
        else
          EXPECT_EQ(got, want) << "code " << i;
      }
    }
  }
}

// bf16 and f16 activations through the bf16 GEMM: bf16 x is read as it is
// (rounding nothing), f16 x is rounded to bf16; y is written in x's dtype,
// rounded once from the float32 sums.
TEST(Linear, Bf16GemmNarrowActivationsAndOutputs) {
  const test::Bf16Gemm on(true);
  if (!cpu::bf16_gemm_active()) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    SCOPED_TRACE(amx ? "AMX tiles" : "AVX512-BF16");
    for (DType xd : {DType::BFloat16, DType::Float16})
      for (DType wd : {DType::BFloat16, DType::Float8_e4m3fn}) {
        SCOPED_TRACE(std::string(name(xd)) + " x " + name(wd));
        const Tensor x = randn_as({2, 20, 300}, xd, 24), w = randn_as({150, 300}, wd, 25);
        const Tensor b = randn_as({150}, xd, 26), sc = make_scale(2, 150, 300);
        const Tensor y = linear(x, w, b, sc);
        ASSERT_EQ(y.dtype(), xd);
        std::vector<double> want, mag;
        reference(x.to(DType::BFloat16), w, b, sc, want, mag);
        test::expect_close(y, want, out_rtol(xd) / 2, 1e-30, &mag, 1e-5);
      }
  }
}

// With the bf16 GEMM on, what it does not take stays exact to float32: f32
// weights; and bf16 activations lose nothing to it.
TEST(Linear, Bf16GemmLeavesOtherProductsExact) {
  const test::Bf16Gemm on(true);
  for (DType wd : {DType::Float32}) {
    const int sk = 0;
    SCOPED_TRACE(trace(wd, sk, 40, 150, 300));
    check_linear(randn_as({40, 300}, DType::Float32, 17), randn_as({150, 300}, wd, 18), Tensor(),
                 make_scale(sk, 150, 300));
  }
  for (DType wd : {DType::BFloat16, DType::Float8_e5m2}) {
    SCOPED_TRACE(trace(wd, 2, 40, 150, 300));
    check_linear(randn_as({40, 300}, DType::BFloat16, 19), randn_as({150, 300}, wd, 20),
                 randn_as({150}, DType::BFloat16, 21), make_scale(2, 150, 300));
  }
}

// NaN codes and infinities in the bf16 GEMM: an e4m3fn NaN code (either sign)
// makes its row NaN, an e5m2 or f16 infinity its row infinite (or NaN
// against a zero x), and an infinite activation its token's outputs; the
// other outputs stay exact to bf16(x).
TEST(Linear, Bf16GemmNanCodesAndInfinities) {
  const test::Bf16Gemm on(true);
  if (!cpu::bf16_gemm_active()) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    SCOPED_TRACE(amx ? "AMX tiles" : "AVX512-BF16");
    const int64_t M = 20, N = 30, K = 70;
    Tensor x = randn_as({M, K}, DType::Float32, 22);
    for (DType wd : {DType::Float8_e4m3fn, DType::Float8_e5m2, DType::Float16}) {
      SCOPED_TRACE(name(wd));
      Tensor w = randn_as({N, K}, wd, 23);
      const bool e4m3 = wd == DType::Float8_e4m3fn;
      if (wd == DType::Float16) {  // row 3: +inf (its lo part zero, not NaN); row 11: NaN
        static_cast<uint16_t*>(w.data_ptr())[3 * K + 5] = 0x7C00;
        static_cast<uint16_t*>(w.data_ptr())[11 * K + 69] = 0x7E00;
      } else {
        uint8_t* codes = static_cast<uint8_t*>(w.data_ptr());
        codes[3 * K + 5] = e4m3 ? 0x7F : 0x7C;    // row 3: NaN / +inf
        codes[11 * K + 69] = e4m3 ? 0xFF : 0xFE;  // row 11: NaN / NaN
      }
      const Tensor y = linear(x, w);
      std::vector<double> want, mag;
      reference(x.to(DType::BFloat16), w, Tensor(), Tensor(), want, mag);
      const auto yv = dvals(y);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const double got = yv[size_t(m * N + n)], ref = want[size_t(m * N + n)];
          if (n == 11 || (n == 3 && e4m3)) {
            EXPECT_TRUE(std::isnan(got)) << m << "," << n;
          } else if (n == 3) {
            EXPECT_EQ(got, x.data<float>()[m * K + 5] > 0 ? INFINITY : -INFINITY) << m;
          } else {
            EXPECT_NEAR(got, ref, 1e-5 * mag[size_t(m * N + n)]) << m << "," << n;
          }
        }
    }
    x.data<float>()[4 * K + 9] = INFINITY;
    const Tensor w = add(rand({N, K}, DType::Float32), Scalar(0.5)).to(DType::BFloat16);  // all positive
    const auto yv = dvals(linear(x, w));
    for (int64_t n = 0; n < N; ++n) EXPECT_EQ(yv[size_t(4 * N + n)], INFINITY) << n;
    EXPECT_TRUE(std::isfinite(yv[size_t(5 * N)]));
  }
}

// f16 weights over their whole finite range (every exponent, subnormals,
// +-65504) through the bf16 GEMM's hi + lo parts: exact to the
// double-precision product of bf16(x) and W within float32 accumulation on
// each unit, few tokens and many.
TEST(Linear, Bf16GemmF16WeightsOverTheirRange) {
  const test::Bf16Gemm on(true);
  if (!cpu::bf16_gemm_active()) GTEST_SKIP() << "no AVX512-BF16 on this CPU (or KILN_SIMD_TARGET below AVX3)";
  const int64_t N = 70, K = 1030;
  std::vector<uint16_t> bits(size_t(N * K));
  uint32_t state = 12345u;
  for (uint16_t& b : bits) {
    state = state * 1664525u + 1013904223u;
    b = uint16_t(state >> 16);
    if ((b & 0x7C00) == 0x7C00) b &= 0xFBFF;  // inf / NaN exponent: one below it
  }
  bits[0] = 0x7BFF, bits[1] = 0xFBFF, bits[2] = 0x0001, bits[3] = 0x83FF;  // +-65504, subnormals
  const Tensor w = from_buffer_copy(bits.data(), {N, K}, DType::Float16);
  for (const bool amx : test::amx_settings()) {
    const test::AmxTiles unit(amx);
    for (int64_t M : {9, 40, 600}) {
      SCOPED_TRACE(std::string(amx ? "AMX tiles" : "AVX512-BF16") + " M=" + std::to_string(M));
      const Tensor x = randn_as({M, K}, DType::Float32, 44);
      std::vector<double> want, mag;
      reference(x.to(DType::BFloat16), w, Tensor(), Tensor(), want, mag);
      test::expect_close(linear(x, w), want, 0, 1e-30, &mag, 1e-5);
    }
  }
}

TEST(Linear, NarrowActivationsAndBatchShapes) {
  const test::Bf16Gemm exact(false);
  for (DType xd : {DType::BFloat16, DType::Float16})
    for (DType wd : {DType::BFloat16, DType::Float8_e4m3fn}) {
      SCOPED_TRACE(std::string(name(xd)) + " x " + name(wd));
      check_linear(randn_as({3, 1, 64}, xd, 7), randn_as({33, 64}, wd, 8), randn_as({33}, xd, 9), Tensor());
      check_linear(randn_as({64}, xd, 7), randn_as({33, 64}, wd, 8), Tensor(), make_scale(2, 33, 64));
      check_linear(randn_as({2, 20, 64}, xd, 7), randn_as({33, 64}, wd, 8), Tensor(), make_scale(1, 33, 64));
    }
}

TEST(Linear, NonContiguousInputsAndWeights) {
  const test::Bf16Gemm exact(false);
  const Tensor xt = randn_as({48, 5}, DType::Float32, 10).t();  // [5, 48] strided
  const Tensor wbig = randn_as({20, 96}, DType::BFloat16, 11);
  const Tensor w = wbig.slice(1, 0, 48);  // rows 96 apart
  check_linear(xt, w, Tensor(), Tensor());
  check_linear(xt, randn_as({48, 20}, DType::Float32, 12).t(), Tensor(), Tensor());  // column-major weight
  check_linear(randn_as({30, 48}, DType::Float32, 13).slice(0, 0, 30, 2), w, Tensor(), Tensor());
}

TEST(Linear, EmptyAndDegenerate) {
  // K = 0: the bias (or zeros).
  Tensor y = linear(zeros({3, 0}), zeros({4, 0}), ones({4}));
  test::expect_close(y, std::vector<double>(12, 1.0), 0, 0);
  y = linear(zeros({0, 5}), zeros({4, 5}));
  EXPECT_EQ(y.sizes(), (Shape{0, 4}));
  y = linear(zeros({2, 5}), zeros({0, 5}));
  EXPECT_EQ(y.sizes(), (Shape{2, 0}));
}

TEST(Linear, OutVariantWritesInPlace) {
  const Tensor x = randn_as({1, 70}, DType::Float32, 14);
  const Tensor w = randn_as({50, 70}, DType::Float8_e4m3fn, 15);
  const Tensor sc = make_scale(2, 50, 70), b = randn_as({50}, DType::Float32, 16);
  Tensor out = empty({1, 50});
  linear_out(x, w, b, sc, out);
  std::vector<double> want, mag;
  reference(x, w, b, sc, want, mag);
  test::expect_close(out, want, 0, 1e-30, &mag, 1e-5);
  Tensor bad = empty({1, 49});
  EXPECT_THROW(linear_out(x, w, b, sc, bad), ValueError);
}

TEST(Linear, FP8ExtremesAreExact) {
  in_each_subnormal_mode([] {
    // Subnormal and largest codes of both formats decode exactly in the fast path.
    for (DType wd : {DType::Float8_e4m3fn, DType::Float8_e5m2}) {
      std::vector<uint8_t> codes;
      for (int c = 0; c < 256; ++c) {
        const bool nan = wd == DType::Float8_e4m3fn ? (c & 0x7F) == 0x7F : (c & 0x7F) > 0x7C;
        const bool inf = wd == DType::Float8_e5m2 && (c & 0x7F) == 0x7C;
        if (!nan && !inf) codes.push_back(uint8_t(c));
      }
      const int64_t K = int64_t(codes.size());
      const Tensor w = from_buffer_copy(codes.data(), {1, K}, wd);
      // One-hot activations pick each code out exactly.
      for (int64_t k = 0; k < K; k += 7) {
        Tensor x = zeros({1, K});
        x.data<float>()[k] = 1.0f;
        const double want = dvals(w)[size_t(k)];
        EXPECT_EQ(dvals(linear(x, w))[0], want) << name(wd) << " code " << int(codes[size_t(k)]);
      }
    }
  });
}

TEST(Linear, FP8EdgeCodesWithTinyAndHugeActivations) {
  in_each_subnormal_mode([] {
    // Subnormal, smallest-normal and saturated codes of both formats, through the
    // one-token and few-row kernels (K = 300: vector body plus scalar tail), with
    // activation rows of magnitude ~1e-30, ~1 and ~1e30: the widening and the
    // per-row scale must stay exact relative to each row's own terms.
    for (DType wd : {DType::Float8_e4m3fn, DType::Float8_e5m2}) {
      const bool e4 = wd == DType::Float8_e4m3fn;
      // e4m3: subnormals 0x01..0x07, min normal 0x08, max 0x7E (448);
      // e5m2: subnormals 0x01..0x03, min normal 0x04, max 0x7B (57344).
      const std::vector<uint8_t> edge =
          e4 ? std::vector<uint8_t>{0x01, 0x02, 0x03, 0x07, 0x08, 0x09, 0x7E, 0x7D}
             : std::vector<uint8_t>{0x01, 0x02, 0x03, 0x04, 0x05, 0x7B, 0x7A};
      const int64_t N = 37, K = 300;
      std::vector<uint8_t> codes(size_t(N * K));
      uint64_t st = 12345;
      for (auto& c : codes) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        c = uint8_t(edge[(st >> 33) % edge.size()] | ((st >> 20) & 1 ? 0x80 : 0));
      }
      const Tensor w = from_buffer_copy(codes.data(), {N, K}, wd);
      const Tensor scale = add(rand({N, 1}, DType::Float32), Scalar(0.5));
      for (int64_t M : {1, 3}) {
        Tensor x = randn_as({M, K}, DType::Float32, 9);
        for (int64_t m = 0; m < M; ++m) {
          const float mag = M == 1 ? 1e-30f : m == 0 ? 1e-30f : m == 1 ? 1.0f : 1e30f;
          for (int64_t k = 0; k < K; ++k) x.data<float>()[m * K + k] *= mag;
        }
        SCOPED_TRACE(std::string(name(wd)) + " M " + std::to_string(M));
        std::vector<double> want, mag;
        reference(x, w, Tensor(), scale, want, mag);
        test::expect_close(linear(x, w, Tensor(), scale), want, 0, 0, &mag, 1e-5);
      }
    }
  });
}

// A small deterministic generator (64-bit LCG, high bits) for hand-built FP8 codes.
struct Lcg {
  uint64_t st;
  uint64_t operator()() {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return st >> 33;
  }
};

TEST(Linear, FP8RowsWithScatteredSubnormalsAndMixedActivations) {
  in_each_subnormal_mode([] {
    // Long e4m3 rows (whole SIMD steps plus a tail) where ~2% of codes are
    // subnormal and some are zero, against activation rows that mix magnitudes
    // 1e30 .. 1e-30 and zeros, an all-zero row, a row too small for the x86
    // tiny-float loader's activation scaling, and rows holding inf or NaN.
    const int64_t N = 41, K = 1000;
    std::vector<uint8_t> codes(size_t(N * K));
    Lcg next{99};
    for (auto& c : codes) {
      const uint64_t r = next() % 100;
      // subnormal, zero, or one of the smallest normals (so subnormal terms matter)
      c = r < 2 ? uint8_t(1 + next() % 7) : r < 3 ? 0 : uint8_t(8 + next() % 16);
      if (next() & 1) c |= 0x80;
    }
    const Tensor w = from_buffer_copy(codes.data(), {N, K}, DType::Float8_e4m3fn);
    const Tensor scale = add(rand({N, 1}, DType::Float32), Scalar(0.5));
    const int64_t M = 6;
    Tensor x = randn_as({M, K}, DType::Float32, 21);
    float* xp = x.data<float>();
    for (int64_t k = 0; k < K; ++k) {
      xp[0 * K + k] *= k % 3 == 0 ? 1e30f : k % 3 == 1 ? 1e-30f : 0.0f;  // mixed
      xp[2 * K + k] = 0.0f;                                              // all zero
      xp[3 * K + k] *= 1e-25f;                                           // tiny row
    }
    for (int64_t m0 : {int64_t(0), int64_t(1), int64_t(3)}) {  // M = 1, 2 and 3 row tiles
      for (int64_t rows : {int64_t(1), int64_t(2), int64_t(3)}) {
        if (m0 + rows > 4) continue;
        const Tensor xs = x.narrow(0, m0, rows).contiguous();
        SCOPED_TRACE("rows " + std::to_string(m0) + ".." + std::to_string(m0 + rows));
        std::vector<double> want, mag;
        reference(xs, w, Tensor(), scale, want, mag);
        test::expect_close(linear(xs, w, Tensor(), scale), want, 0, 0, &mag, 1e-5);
      }
    }
    // inf and NaN propagate as in the double reference.
    xp[4 * K + 10] = std::numeric_limits<float>::infinity();
    xp[5 * K + 10] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t m : {int64_t(4), int64_t(5)}) {
      const Tensor xs = x.narrow(0, m, 1).contiguous();
      std::vector<double> want, mag;
      reference(xs, w, Tensor(), scale, want, mag);
      const std::vector<double> got = dvals(linear(xs, w, Tensor(), scale));
      for (size_t n = 0; n < want.size(); ++n) {
        EXPECT_EQ(std::isnan(got[n]), std::isnan(want[n])) << "m " << m << " n " << n;
        if (!std::isnan(want[n])) {
          EXPECT_EQ(got[n], want[n]) << "m " << m << " n " << n;
        }
      }
    }
  });
}

// e4m3 rows where many steps hold zero codes but no subnormal one (the x86
// kernel's cheap per-step test flags both; only subnormals take the scalar
// path), an all-zero row, and two lone subnormals in otherwise normal steps.
TEST(Linear, FP8ZeroCodesBesideLoneSubnormals) {
  in_each_subnormal_mode([] {
    const int64_t N = 13, K = 700;
    std::vector<uint8_t> codes(size_t(N * K));
    Lcg next{7};
    for (auto& c : codes) c = next() % 10 == 0 ? 0 : uint8_t((8 + next() % 100) | (next() & 1 ? 0x80 : 0));
    for (int64_t k = 0; k < K; ++k) codes[size_t(4 * K + k)] = 0;  // all-zero row
    codes[size_t(5 * K + 130)] = 0x03;                             // lone subnormals
    codes[size_t(9 * K + 600)] = 0x85;
    const Tensor w = from_buffer_copy(codes.data(), {N, K}, DType::Float8_e4m3fn);
    const Tensor scale = add(rand({N, 1}, DType::Float32), Scalar(0.5));
    for (int64_t M : {int64_t(1), int64_t(2)}) {
      SCOPED_TRACE("M " + std::to_string(M));
      Tensor x = randn_as({M, K}, DType::Float32, 5);
      // Large x where the subnormals sit, so their terms show in the sums.
      x.data<float>()[130] = 1e6f;
      x.data<float>()[600] = -1e6f;
      std::vector<double> want, mag;
      reference(x, w, Tensor(), scale, want, mag);
      test::expect_close(linear(x, w, Tensor(), scale), want, 0, 0, &mag, 1e-5);
    }
  });
}

// e4m3 weights with every finite code: marked NoNan (scanned by the caller),
// the kernels skip their per-step NaN test and must give the same bits.
TEST(Linear, FP8CheckedCodesGiveTheSameResults) {
  in_each_subnormal_mode([] {
    for (int64_t K : {int64_t(300), int64_t(1000), int64_t(2085)}) {
      const int64_t N = 29;
      std::vector<uint8_t> codes(size_t(N * K));
      uint64_t st = uint64_t(K);
      for (auto& c : codes) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        c = uint8_t(st >> 40);
        if ((c & 0x7F) == 0x7F) c = uint8_t(c - 1);  // 448, not NaN
      }
      const Tensor w = from_buffer_copy(codes.data(), {N, K}, DType::Float8_e4m3fn);
      ASSERT_FALSE(fp8_has_nan_code(w));
      for (int sk = 0; sk < 4; ++sk)
        for (int64_t M : {1, 2, 3, 4, 6}) {
          SCOPED_TRACE(trace(w.dtype(), sk, M, N, K));
          Tensor x = randn_as({M, K}, DType::Float32, 31);
          if (M == 3)  // a row too small for the tiny-float loader: the f16 route
            for (int64_t k = 0; k < K; ++k) x.data<float>()[2 * K + k] *= 1e-25f;
          const Tensor scale = make_scale(sk, N, K), bias = randn_as({N}, DType::Float32, 32);
          Tensor a = empty({M, N}), b = empty({M, N});
          linear_out(x, w, bias, scale, a);
          linear_out(x, w, bias, scale, b, Fp8Codes::NoNan);
          EXPECT_EQ(dvals(a), dvals(b));
          std::vector<double> want, mag;
          reference(x, w, bias, scale, want, mag);
          test::expect_close(b, want, 0, 0, &mag, 1e-5);
        }
    }
  });
}

// e4m3 weights passed with their subnormal codes listed (fp8_find_subnormals):
// where the kernel would test each step for them (Intel, x86 Test mode), it
// reads them as zero under DAZ and adds their terms from the list. Every scale
// layout, 1..6 rows, rows read as far-apart runs and side by side, subnormals in
// the vector part and in the K tail, denormal activations, bias. The dot
// kernel is off: it takes one activation row on CPUs with AVX512-BF16 and
// drops terms below 2^-126 by design (gemv.h, bf16_dot).
TEST(Linear, FP8ListedSubnormalsAreExact) {
  const DotKernelOff dot_off;
  in_each_subnormal_mode([] {
    for (int64_t K : {int64_t(300), int64_t(1000), int64_t(1024), int64_t(4160)}) {
      const int64_t N = 133;  // a 128-row scale block and a partial one; an odd row count
      std::vector<uint8_t> codes(size_t(N * K));
      Lcg next{uint64_t(K)};
      for (auto& c : codes) {
        const uint64_t r = next() % 100;
        c = r < 3 ? uint8_t(1 + next() % 7) : r < 4 ? 0 : uint8_t(8 + next() % 16);
        if (next() & 1) c |= 0x80;
      }
      for (int64_t k = 0; k < K; ++k) codes[size_t(7 * K + k)] = 0;  // no subnormal in row 7
      for (int64_t n = 0; n < N; ++n) codes[size_t(n * K + 5)] = 0;  // see x_den below
      const Tensor w = from_buffer_copy(codes.data(), {N, K}, DType::Float8_e4m3fn);
      const Fp8Subnormals subs = fp8_find_subnormals(w);
      ASSERT_EQ(subs.row_start.size(), size_t(N) + 1);
      EXPECT_EQ(subs.row_start[8], subs.row_start[7]);
      for (int sk = 0; sk < 4; ++sk)
        for (int64_t M : {1, 2, 3, 4, 6}) {
          SCOPED_TRACE(trace(w.dtype(), sk, M, N, K));
          Tensor x = randn_as({M, K}, DType::Float32, 41);
          float* xp = x.data<float>();
          if (M == 3)  // a row too small for the tiny-float loader's scaling: the f16 route
            for (int64_t k = 0; k < K; ++k) xp[2 * K + k] *= 1e-25f;
          const Tensor scale = make_scale(sk, N, K), bias = randn_as({N}, DType::Float32, 42);
          for (Fp8Codes fc : {Fp8Codes::Unchecked, Fp8Codes::NoNan}) {
            Tensor y = empty({M, N});
            linear_out(x, w, bias, scale, y, fc, &subs);
            std::vector<double> want, mag;
            reference(x, w, bias, scale, want, mag);
            test::expect_close(y, want, 0, 0, &mag, 1e-5);
          }
        }
      // Denormal activations beside a 1e-18 (large enough for the tiny
      // loader's scaling, which then makes every product a normal float) that
      // meets only zero codes: every term of the sums is one of a denormal, in
      // the vector part, the K tail and the listed codes alike.
      // Only the x86 tiny loader scales x so: the f16 route (SSE4 and other
      // targets) sums those products as float32 denormals, as before.
      const std::string target = sys::simd_target_name();
      if (target.rfind("AVX", 0) != 0) continue;
      Tensor x_den = empty({1, K});
      for (int64_t k = 0; k < K; ++k) x_den.data<float>()[k] = k == 5 ? 1e-18f : (k % 3 ? 3e-39f : -7e-39f);
      for (int sk = 0; sk < 4; ++sk) {
        SCOPED_TRACE("denormal x, " + trace(w.dtype(), sk, 1, N, K));
        const Tensor scale = make_scale(sk, N, K);
        Tensor y = empty({1, N});
        linear_out(x_den, w, Tensor(), scale, y, Fp8Codes::NoNan, &subs);
        std::vector<double> want, mag;
        reference(x_den, w, Tensor(), scale, want, mag);
        test::expect_close(y, want, 0, 0, &mag, 1e-5);
      }
    }
  });
  // Denormal inputs are read as zero only inside the kernel: not after it,
  // on this thread or the pool's.
  volatile float tiny = 1e-40f;
  EXPECT_NE(tiny * 1.0f, 0.0f);
  std::vector<int> zeroed(size_t(num_threads()), 0);
  parallel_for(0, num_threads(), 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) zeroed[size_t(i)] = tiny * 1.0f == 0.0f;
  });
  for (int z : zeroed) EXPECT_EQ(z, 0);
}

TEST(Linear, FP8SubnormalListsAreCheckedAndComplete) {
  // Every code in every position class: the list holds exactly the codes with
  // a zero exponent field and a nonzero mantissa, by row, columns ascending.
  const int64_t N = 9, K = 200;
  std::vector<uint8_t> codes(size_t(N * K));
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint8_t((i * 97 + i / 7) % 256);
  const Tensor w = from_buffer_copy(codes.data(), {N, K}, DType::Float8_e4m3fn);
  const Fp8Subnormals s = fp8_find_subnormals(w);
  EXPECT_EQ(s.rows, N);
  EXPECT_EQ(s.cols, K);
  std::vector<int64_t> start{0};
  std::vector<int32_t> col, row;
  std::vector<uint8_t> code;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t c = codes[size_t(n * K + k)];
      if ((c & 0x78) == 0 && (c & 0x07) != 0) {
        col.push_back(int32_t(k));
        row.push_back(int32_t(n));
        code.push_back(c);
      }
    }
    start.push_back(int64_t(col.size()));
  }
  EXPECT_EQ(s.row_start, start);
  EXPECT_EQ(s.col, col);
  EXPECT_EQ(s.row, row);
  EXPECT_EQ(s.code, code);
  // A transposed view is listed by its own rows.
  const Fp8Subnormals st = fp8_find_subnormals(w.t());
  EXPECT_EQ(st.rows, K);
  EXPECT_EQ(st.col.size(), col.size());

  EXPECT_THROW(fp8_find_subnormals(zeros({4, 8})), TypeError);
  EXPECT_THROW(fp8_find_subnormals(empty({8}, DType::Float8_e4m3fn)), TypeError);
  EXPECT_THROW(fp8_find_subnormals(Tensor()), TypeError);
  const Tensor x = zeros({1, K});
  Tensor y = empty({1, N});
  EXPECT_THROW(linear_out(x, w.narrow(0, 0, 8), Tensor(), Tensor(), y, Fp8Codes::Unchecked, &s), ValueError);
  EXPECT_THROW(linear_out(x, w.to(DType::BFloat16), Tensor(), Tensor(), y, Fp8Codes::Unchecked, &s),
               TypeError);
  Fp8Subnormals cut = s;
  cut.col.pop_back();
  EXPECT_THROW(linear_out(x, w, Tensor(), Tensor(), y, Fp8Codes::Unchecked, &cut), ValueError);
  cut = s;
  cut.row.pop_back();
  EXPECT_THROW(linear_out(x, w, Tensor(), Tensor(), y, Fp8Codes::Unchecked, &cut), ValueError);
  cut = s;
  cut.code.pop_back();
  EXPECT_THROW(linear_out(x, w, Tensor(), Tensor(), y, Fp8Codes::Unchecked, &cut), ValueError);
}

TEST(Linear, Fp8HasNanCodeFindsEveryOne) {
  for (int64_t n : {1, 63, 64, 65, 65535, 65536, 65537, 200003}) {
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t c = uint8_t((i * 37) % 256);
      codes[size_t(i)] = (c & 0x7F) == 0x7F ? uint8_t(c - 1) : c;  // every code but NaN
    }
    SCOPED_TRACE("n " + std::to_string(n));
    EXPECT_FALSE(fp8_has_nan_code(from_buffer_copy(codes.data(), {n}, DType::Float8_e4m3fn)));
    for (int64_t at : {int64_t(0), n / 2, int64_t(65535), int64_t(65536), n - 1}) {
      if (at >= n) continue;
      for (uint8_t nan : {uint8_t(0x7F), uint8_t(0xFF)}) {
        std::vector<uint8_t> c = codes;
        c[size_t(at)] = nan;
        EXPECT_TRUE(fp8_has_nan_code(from_buffer_copy(c.data(), {n}, DType::Float8_e4m3fn))) << "at " << at;
        // e5m2 NaN codes widen exactly: never reported.
        EXPECT_FALSE(fp8_has_nan_code(from_buffer_copy(c.data(), {n}, DType::Float8_e5m2)));
      }
    }
  }
  // A strided view sees only its own elements.
  std::vector<uint8_t> c(64, 0x38);
  c[1] = 0x7F;  // column 1 of an [8, 8] matrix
  const Tensor w = from_buffer_copy(c.data(), {8, 8}, DType::Float8_e4m3fn);
  EXPECT_TRUE(fp8_has_nan_code(w.t()));
  EXPECT_FALSE(fp8_has_nan_code(w.narrow(1, 2, 6)));
  EXPECT_TRUE(fp8_has_nan_code(w.narrow(1, 1, 6).t()));
  EXPECT_FALSE(fp8_has_nan_code(full({4}, Scalar(std::nan("")), DType::Float32)));
  EXPECT_FALSE(fp8_has_nan_code(Tensor()));
  EXPECT_FALSE(fp8_has_nan_code(empty({0, 8}, DType::Float8_e4m3fn)));
}

TEST(Linear, BadInputsRaise) {
  const Tensor x = zeros({2, 8}), w = zeros({4, 8});
  EXPECT_THROW(linear(x, zeros({4, 7})), ValueError);
  EXPECT_THROW(linear(x, zeros({4, 8, 1})), ValueError);
  EXPECT_THROW(linear(zeros({}), w), ValueError);
  EXPECT_THROW(linear(zeros({2, 8}, DType::Int32), w), TypeError);
  EXPECT_THROW(linear(x, zeros({4, 8}, DType::Float64)), TypeError);
  EXPECT_THROW(linear(x, w, zeros({5})), ValueError);
  EXPECT_THROW(linear(x, w, Tensor(), zeros({3})), ValueError);
  EXPECT_THROW(linear(x, w, Tensor(), zeros({4}, DType::Int32)), TypeError);
}

// ---- matmul ----

std::vector<double> naive_mm(const std::vector<double>& a, const std::vector<double>& b, int64_t M, int64_t K,
                             int64_t N) {
  std::vector<double> c(size_t(M * N), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) c[size_t(m * N + n)] += a[size_t(m * K + k)] * b[size_t(k * N + n)];
  return c;
}

TEST(Matmul, RanksAndBroadcast) {
  const Tensor a = randn_as({2, 1, 3, 5}, DType::Float32, 20), b = randn_as({4, 5, 6}, DType::Float32, 21);
  const Tensor c = matmul(a, b);
  ASSERT_EQ(c.sizes(), (Shape{2, 4, 3, 6}));
  const auto av = dvals(a), bv = dvals(b), cv = dvals(c);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const std::vector<double> ai(av.begin() + i * 15, av.begin() + (i + 1) * 15);
      const std::vector<double> bj(bv.begin() + j * 30, bv.begin() + (j + 1) * 30);
      const auto want = naive_mm(ai, bj, 3, 5, 6);
      for (size_t q = 0; q < want.size(); ++q) EXPECT_NEAR(cv[size_t((i * 4 + j) * 18) + q], want[q], 1e-5);
    }
  EXPECT_EQ(matmul(randn_as({5}, DType::Float32, 1), randn_as({5}, DType::Float32, 2)).dim(), 0);
  EXPECT_EQ(matmul(randn_as({5}, DType::Float32, 1), b).sizes(), (Shape{4, 6}));
  EXPECT_EQ(matmul(a, randn_as({5}, DType::Float32, 2)).sizes(), (Shape{2, 1, 3}));
  EXPECT_EQ(matmul(randn_as({7, 5}, DType::Float32, 1), randn_as({5, 2}, DType::Float32, 2)).sizes(),
            (Shape{7, 2}));
}

TEST(Matmul, DtypesTransposedAndErrors) {
  const Tensor a = randn_as({6, 9}, DType::Float64, 30), b = randn_as({4, 9}, DType::Float64, 31).t();
  const auto want = naive_mm(dvals(a), dvals(b), 6, 9, 4);
  test::expect_close(matmul(a, b), want, 1e-12, 1e-12);
  test::expect_close(matmul(a.to(DType::Float32), b.to(DType::Float32)), want, 1e-5, 1e-5);
  test::expect_close(matmul(a.to(DType::BFloat16), b.to(DType::BFloat16)),
                     naive_mm(dvals(a.to(DType::BFloat16)), dvals(b.to(DType::BFloat16)), 6, 9, 4), 1.0 / 64,
                     1e-2);
  const Tensor ia = arange(Scalar(int64_t(0)), Scalar(int64_t(6))).view({2, 3});
  test::expect_close(matmul(ia, ia.t()), {5, 14, 14, 50}, 0, 0);
  EXPECT_THROW(matmul(zeros({2, 3}), zeros({4, 2})), ValueError);
  EXPECT_THROW(matmul(zeros({2, 3}), zeros({3, 2}, DType::Float64)), TypeError);
  EXPECT_THROW(mm(zeros({2, 3, 1}), zeros({3, 2})), ValueError);
  EXPECT_EQ(matmul(zeros({2, 0}), zeros({0, 3})).sizes(), (Shape{2, 3}));
  test::expect_close(matmul(ones({2, 0}), ones({0, 3})), std::vector<double>(6, 0.0), 0, 0);
}

// cpu::sgemm / dgemm cut large products into one OpenBLAS call per thread,
// along N or M: every block edge, padded leading dimensions, both layouts of
// B, alpha and beta, and the same call nested in a parallel region (one call).
TEST(Matmul, BlasSplitBlocksMatchTheDoubleProduct) {
  struct Case {
    int64_t M, N, K;
  };
  for (const Case cs : {Case{300, 37, 500}, Case{5, 1003, 900}, Case{257, 259, 70}, Case{40, 40, 40}})
    for (bool b_trans : {false, true})
      for (bool nested : {false, true}) {
        const int64_t M = cs.M, N = cs.N, K = cs.K, lda = K + 3, ldb = (b_trans ? K : N) + 5, ldc = N + 7;
        const std::vector<double> a = dvals(randn_as({M, lda}, DType::Float64, 40));
        const std::vector<double> b = dvals(randn_as({b_trans ? N : K, ldb}, DType::Float64, 41));
        const std::vector<double> c0 = dvals(randn_as({M, ldc}, DType::Float64, 42));
        const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
        std::vector<float> cf(c0.begin(), c0.end());
        std::vector<double> cd = c0;
        auto run = [&] {
          cpu::sgemm(b_trans, M, N, K, 0.5f, af.data(), lda, bf.data(), ldb, 2.0f, cf.data(), ldc);
          cpu::dgemm(b_trans, M, N, K, 0.5, a.data(), lda, b.data(), ldb, 2.0, cd.data(), ldc);
        };
        if (nested)
          parallel_for(0, 2, 1, [&](int64_t i, int64_t) {
            if (i == 0) run();
          });
        else
          run();
        int bad = 0;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < ldc; ++n) {
            const size_t i = size_t(m * ldc + n);
            double want = c0[i], mag = std::fabs(c0[i]);
            if (n < N) {
              double s = 0, sm = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double t =
                    a[size_t(m * lda + k)] * b[b_trans ? size_t(n * ldb + k) : size_t(k * ldb + n)];
                s += t;
                sm += std::fabs(t);
              }
              want = 0.5 * s + 2.0 * c0[i];
              mag = 0.5 * sm + 2.0 * std::fabs(c0[i]);
            }
            // Past column N, C's padding is untouched.
            const bool ok =
                std::fabs(cf[i] - want) <= 1e-5 * mag + 1e-6 && std::fabs(cd[i] - want) <= 1e-12 * mag;
            if (!ok && ++bad <= 3)
              ADD_FAILURE() << M << "x" << N << "x" << K << " b_trans " << b_trans << " nested " << nested
                            << " at (" << m << ", " << n << "): f32 " << cf[i] << " f64 " << cd[i] << " want "
                            << want;
          }
        EXPECT_EQ(bad, 0);
      }
}

}  // namespace
}  // namespace kiln
