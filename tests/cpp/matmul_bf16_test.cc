// matmul / mm / bmm of bf16 tensors past the matrix-vector rows on the bf16
// GEMM (AMX tiles or AVX512-BF16): the product of two bf16 values is exact
// in float32 and the sums are float32, so the result is the double-precision
// product of the inputs within float32 accumulation, rounded once to bf16 -
// on each unit, and with the GEMM off (the float32 path).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "matmul_test_util.h"

namespace kiln {
namespace {

using test::dvals;
using test::randn_as;

// want[b][m][n] = sum_k a[b][m][k] b[b][k][n] in double, and sum |terms|.
void reference(const Tensor& a, const Tensor& b, std::vector<double>& want, std::vector<double>& mag) {
  const int64_t B = a.dim() == 3 ? a.size(0) : 1, M = a.size(-2), K = a.size(-1), N = b.size(-1);
  const auto av = dvals(a), bv = dvals(b);
  want.assign(size_t(B * M * N), 0.0);
  mag.assign(want.size(), 0.0);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        const double x = av[size_t((i * M + m) * K + k)];
        for (int64_t n = 0; n < N; ++n) {
          const double t = x * bv[size_t((i * K + k) * N + n)];
          want[size_t((i * M + m) * N + n)] += t;
          mag[size_t((i * M + m) * N + n)] += std::fabs(t);
        }
      }
}

// Each layout of B the front-ends meet: row-major [K, N] (one transposed
// copy), a transposed view of W [N, K] (read in place) and a strided one;
// A transposed too (the weight gradient's g^T @ x). M from past the
// matrix-vector rows to several token blocks, K and N with tails.
TEST(MatmulBf16, ExactToTheBf16InputsOnEachUnit) {
  struct Case {
    int64_t M, K, N;
  };
  const Case cases[] = {{7, 40, 33}, {40, 300, 70}, {200, 129, 230}, {600, 520, 64}};
  for (const int unit : {0, 1, 2}) {  // GEMM off, AVX512-BF16, AMX
    const test::Bf16Gemm gemm(unit != 0);
    const test::AmxTiles tiles(unit == 2);
    if (unit == 2 && !cpu::amx_tiles_active()) continue;
    const char* names[] = {"float32 path", "AVX512-BF16", "AMX tiles"};
    for (const Case& c : cases)
      for (int layout = 0; layout < 4; ++layout) {
        SCOPED_TRACE(std::string(names[unit]) + " M=" + std::to_string(c.M) + " K=" + std::to_string(c.K) +
                     " N=" + std::to_string(c.N) + " layout " + std::to_string(layout));
        Tensor a = randn_as({c.M, c.K}, DType::BFloat16, 70);
        Tensor b = randn_as({c.K, c.N}, DType::BFloat16, 71);
        if (layout == 1) b = randn_as({c.N, c.K}, DType::BFloat16, 72).t();
        if (layout == 2) b = randn_as({c.N, 2 * c.K}, DType::BFloat16, 73).slice(1, 0, c.K).t();
        if (layout == 3) a = randn_as({c.K, c.M}, DType::BFloat16, 74).t();
        std::vector<double> want, mag;
        reference(a, b, want, mag);
        const Tensor y = matmul(a, b);
        ASSERT_EQ(y.dtype(), DType::BFloat16);
        test::expect_close(y, want, 1.0 / 256, 1e-30, &mag, 1e-5);
      }
  }
}

// bmm and batched matmul run each batch through it; M <= 6 keeps the
// float32 path, and f16 stays on it (its x would be rounded to bf16).
TEST(MatmulBf16, BatchesFewRowsAndF16) {
  const test::Bf16Gemm gemm(true);
  const Tensor a = randn_as({3, 50, 96}, DType::BFloat16, 80), b = randn_as({3, 96, 40}, DType::BFloat16, 81);
  std::vector<double> want, mag;
  reference(a, b, want, mag);
  test::expect_close(bmm(a, b), want, 1.0 / 256, 1e-30, &mag, 1e-5);
  test::expect_close(matmul(a, b), want, 1.0 / 256, 1e-30, &mag, 1e-5);
  const Tensor a4 = randn_as({4, 96}, DType::BFloat16, 82), b4 = randn_as({96, 40}, DType::BFloat16, 83);
  reference(a4, b4, want, mag);
  test::expect_close(matmul(a4, b4), want, 1.0 / 256, 1e-30, &mag, 1e-5);
  const Tensor ah = randn_as({50, 96}, DType::Float16, 84), bh = randn_as({96, 40}, DType::Float16, 85);
  reference(ah, bh, want, mag);
  test::expect_close(matmul(ah, bh), want, 1.0 / 2048, 1e-30, &mag, 1e-5);
}

}  // namespace
}  // namespace kiln
