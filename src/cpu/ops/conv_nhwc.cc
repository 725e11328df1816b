// Channels-last convolution kernels (see conv_nhwc.h).
#include "cpu/ops/conv_nhwc.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/gemm.h"
#include "kiln/memory_format.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

// Output rows per gemm of the forward kernels, and per accumulation step of
// the weight gradient: fixed, so blocks do not move with the thread count.
constexpr int64_t kRows = 256, kWeightRows = 1024;

bool is_cl(const Tensor& t) {
  if (t.dim() == 4) return is_contiguous(t, MemoryFormat::ChannelsLast);
  return t.dim() == 5 && is_contiguous(t, MemoryFormat::ChannelsLast3d);
}

// C[M, N] (ldc) = A[M, K] (lda) @ op(B) + beta * C; op(B) = B^T ([N, K], ldb) when b_trans.
template <typename T>
void gemm_ld(bool b_trans, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
             T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    sgemm(b_trans, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  else
    dgemm(b_trans, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

// col [r1 - r0, kn * C]: row r's patch of x [*Q, C] (Q the source side), kn
// blocks of C channels, zeros where the patch leaves x.
template <typename T>
void build_rows(const T* x, int64_t C, const ConvGeo& g, bool transposed, int64_t r0, int64_t r1, T* col) {
  const int64_t* R = transposed ? g.S : g.O;
  const int64_t* Q = transposed ? g.O : g.S;
  T* dst = col;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t a2 = r % R[2], a1 = r / R[2] % R[1], a0 = r / (R[1] * R[2]);
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
      const int64_t q0 = conv_source(g, transposed, 0, a0, k0);
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
        const int64_t q1 = q0 < 0 ? -1 : conv_source(g, transposed, 1, a1, k1);
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2, dst += C) {
          const int64_t q2 = q1 < 0 ? -1 : conv_source(g, transposed, 2, a2, k2);
          if (q2 < 0)
            std::fill(dst, dst + C, T(0));
          else
            std::memcpy(dst, x + ((q0 * Q[1] + q1) * Q[2] + q2) * C, size_t(C) * sizeof(T));
        }
      }
    }
  }
}

bool identity(const ConvGeo& g) {
  for (int i = 0; i < 3; ++i)
    if (g.K[i] != 1 || g.s[i] != 1 || g.p[i] != 0 || g.S[i] != g.O[i]) return false;
  return true;
}

template <typename T>
void conv_nhwc_t(const Tensor& input, const Tensor& weight, const Tensor& bias, const ops::ConvParams& p,
                 const ConvGeo& g, const Tensor& out) {
  const int64_t N = input.size(0), C_in = input.size(1), C_out = out.size(1), kn = g.kn(), K = kn * C_in;
  const int64_t in_sp = p.transposed ? g.small() : g.big(), out_sp = p.transposed ? g.big() : g.small();
  const T* x = input.data<T>();
  const T* w = weight.data<T>();
  const T* b = bias.defined() ? bias.data<T>() : nullptr;
  T* y = out.data<T>();
  // wp [C_out, kn, C_in]: each output channel's patch weights in row order.
  std::vector<T> wp(size_t(C_out * K));
  for (int64_t co = 0; co < C_out; ++co)
    for (int64_t ci = 0; ci < C_in; ++ci)
      for (int64_t k = 0; k < kn; ++k)
        wp[size_t((co * kn + k) * C_in + ci)] =
            p.transposed ? w[(ci * C_out + co) * kn + k] : w[(co * C_in + ci) * kn + k];
  const bool ident = identity(g);
  const int64_t blocks = (out_sp + kRows - 1) / kRows;
  parallel_for(0, N * blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> col;
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t n = blk / blocks, r0 = blk % blocks * kRows, r1 = std::min(out_sp, r0 + kRows);
      const T* xn = x + n * in_sp * C_in;
      const T* A = xn + r0 * C_in;
      if (!ident) {
        col.resize(size_t((r1 - r0) * K));
        build_rows(xn, C_in, g, p.transposed, r0, r1, col.data());
        A = col.data();
      }
      T* yr = y + (n * out_sp + r0) * C_out;
      if constexpr (std::is_same_v<T, float>) {
        // kiln's packed GEMM: AVX-512 where OpenBLAS may run AVX2 kernels.
        GemvArgs ga;
        ga.w = wp.data();
        ga.ldw = K;
        ga.N = C_out;
        ga.K = K;
        ga.x = A;
        ga.ldx = K;
        ga.M = r1 - r0;
        ga.y = yr;
        ga.ldy = C_out;
        ga.bias = b;
        gemm_packed(DType::Float32, ga);
        continue;
      }
      gemm_ld<T>(true, r1 - r0, C_out, K, A, K, wp.data(), K, T(0), yr, C_out);
      if (b)
        for (int64_t r = 0; r < r1 - r0; ++r)
          for (int64_t c = 0; c < C_out; ++c) yr[r * C_out + c] += b[c];
    }
  });
}

template <typename T>
void conv_nhwc_weight_t(const Tensor& src, const Tensor& a, const ConvGeo& g, const Tensor& grad_weight) {
  const int64_t N = src.size(0), C_s = src.size(1), C_a = a.size(1), kn = g.kn(), K = kn * C_s;
  const int64_t big = g.big(), small = g.small();
  const T* sp = src.data<T>();
  const T* ap = a.data<T>();
  const bool ident = identity(g);
  // gwp [C_a, kn, C_s] += a^T [C_a, rows] @ col [rows, kn * C_s], blocks in order.
  std::vector<T> gwp(size_t(C_a * K), T(0)), col, at;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t r0 = 0; r0 < small; r0 += kWeightRows) {
      const int64_t r1 = std::min(small, r0 + kWeightRows), rows = r1 - r0;
      const T* sn = sp + n * big * C_s;
      const T* B = sn + r0 * C_s;
      if (!ident) {
        col.resize(size_t(rows * K));
        parallel_for(r0, r1, 16, [&](int64_t q0, int64_t q1) {
          build_rows(sn, C_s, g, false, q0, q1, col.data() + (q0 - r0) * K);
        });
        B = col.data();
      }
      at.resize(size_t(C_a * rows));
      const T* an = ap + (n * small + r0) * C_a;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < C_a; ++c) at[size_t(c * rows + r)] = an[r * C_a + c];
      gemm_ld<T>(false, C_a, K, rows, at.data(), rows, B, K, T(1), gwp.data(), K);
    }
  T* gw = grad_weight.data<T>();
  for (int64_t ca = 0; ca < C_a; ++ca)
    for (int64_t cs = 0; cs < C_s; ++cs)
      for (int64_t k = 0; k < kn; ++k) gw[(ca * C_s + cs) * kn + k] = gwp[size_t((ca * kn + k) * C_s + cs)];
}

}  // namespace

bool conv_takes_nhwc(const Tensor& input, const Tensor& out, int64_t groups) {
  return groups == 1 && is_cl(input) && is_cl(out) && !(input.is_contiguous() && out.is_contiguous());
}

void conv_nhwc(const Tensor& input, const Tensor& weight, const Tensor& bias, const ops::ConvParams& p,
               const ConvGeo& g, const Tensor& out) {
  if (input.dtype() == DType::Float64) return conv_nhwc_t<double>(input, weight, bias, p, g, out);
  conv_nhwc_t<float>(input, weight, bias, p, g, out);
}

void conv_nhwc_weight(const Tensor& src, const Tensor& a, const ops::ConvParams&, const ConvGeo& g,
                      const Tensor& grad_weight) {
  if (src.dtype() == DType::Float64) return conv_nhwc_weight_t<double>(src, a, g, grad_weight);
  conv_nhwc_weight_t<float>(src, a, g, grad_weight);
}

}  // namespace kiln::cpu
