// CPU kernels of convolution and convolution_backward_weight
// (ops/registry/conv.h) by im2col / col2im and OpenBLAS gemm: per (image,
// group), the patches of the larger-spatial tensor become the columns of a
// [C_g * k, L] matrix that one gemm multiplies with the weight. The
// transposed direction runs the same matrices backwards (gemm then col2im).
// Work is split over (image, group) items (forward) or groups (weight
// gradient, images summed in order) when there are enough of them, else
// inside each item (im2col / col2im by channel, the gemm by blocks of its
// output), so the bits do not depend on the thread count. One channel per
// group on the sliding side (depthwise) goes to conv_direct.h's kernels,
// channels-last tensors with groups = 1 (the front-end passes them through)
// to conv_nhwc.h's.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/ops/conv_direct.h"
#include "cpu/ops/conv_nhwc.h"
#include "cpu/ops/register.h"
#include "kiln/thread_pool.h"
#include "ops/registry/all.h"

namespace kiln::cpu {
namespace {

using ops::ConvParams;

using Geo = ConvGeo;

// A 1x1x1 kernel with stride 1 and no padding: the columns are x itself.
bool identity(const Geo& g) {
  for (int i = 0; i < 3; ++i)
    if (g.K[i] != 1 || g.s[i] != 1 || g.p[i] != 0 || g.S[i] != g.O[i]) return false;
  return true;
}

// Spatial sizes of t [N, C, *nd], padded to 3 at the front.
void spatial3(const Tensor& t, int64_t* out) {
  const int nd = t.dim() - 2;
  for (int i = 0; i < 3; ++i) out[i] = i < 3 - nd ? 1 : t.size(2 + i - (3 - nd));
}

Geo make_geo(const Tensor& big, const Tensor& small, const Tensor& weight, const ConvParams& p) {
  Geo g{};
  spatial3(big, g.S);
  spatial3(small, g.O);
  spatial3(weight, g.K);
  for (int i = 0; i < 3; ++i) {
    g.s[i] = p.stride[size_t(i)];
    g.p[i] = p.padding[size_t(i)];
    g.d[i] = p.dilation[size_t(i)];
  }
  return g;
}

// col [C * kn, small] from x [C, big]; positions outside x read 0.
template <typename T>
void im2col(const T* x, int64_t C, const Geo& g, T* col) {
  T* dst = col;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2)
          for (int64_t o0 = 0; o0 < g.O[0]; ++o0) {
            const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
            if (i0 < 0 || i0 >= g.S[0]) {
              std::fill(dst, dst + g.O[1] * g.O[2], T(0));
              dst += g.O[1] * g.O[2];
              continue;
            }
            for (int64_t o1 = 0; o1 < g.O[1]; ++o1, dst += g.O[2]) {
              const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
              if (i1 < 0 || i1 >= g.S[1]) {
                std::fill(dst, dst + g.O[2], T(0));
                continue;
              }
              const T* row = x + ((c * g.S[0] + i0) * g.S[1] + i1) * g.S[2];
              const int64_t off = k2 * g.d[2] - g.p[2];
              for (int64_t o2 = 0; o2 < g.O[2]; ++o2) {
                const int64_t i2 = o2 * g.s[2] + off;
                dst[o2] = i2 >= 0 && i2 < g.S[2] ? row[i2] : T(0);
              }
            }
          }
}

// The adjoint of im2col: x [C, big] += col [C * kn, small] scattered back.
template <typename T>
void col2im(const T* col, int64_t C, const Geo& g, T* x) {
  const T* src = col;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2)
          for (int64_t o0 = 0; o0 < g.O[0]; ++o0) {
            const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
            if (i0 < 0 || i0 >= g.S[0]) {
              src += g.O[1] * g.O[2];
              continue;
            }
            for (int64_t o1 = 0; o1 < g.O[1]; ++o1, src += g.O[2]) {
              const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
              if (i1 < 0 || i1 >= g.S[1]) continue;
              T* row = x + ((c * g.S[0] + i0) * g.S[1] + i1) * g.S[2];
              const int64_t off = k2 * g.d[2] - g.p[2];
              for (int64_t o2 = 0; o2 < g.O[2]; ++o2) {
                const int64_t i2 = o2 * g.s[2] + off;
                if (i2 >= 0 && i2 < g.S[2]) row[i2] += src[o2];
              }
            }
          }
}

// C[M, N] (ldc N) = A[M, K] @ op(B) + beta * C; op(B) = B^T ([N, K]) when b_trans.
template <typename T>
void gemm_t(bool b_trans, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T beta, T* C) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == T(0)) std::fill(C, C + M * N, T(0));
    return;
  }
  const int64_t ldb = b_trans ? K : N;
  if constexpr (std::is_same_v<T, float>)
    sgemm(b_trans, M, N, K, 1.0f, A, K, B, ldb, beta, C, N);
  else
    dgemm(b_trans, M, N, K, 1.0, A, K, B, ldb, beta, C, N);
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

// Output positions per gemm of the blocked forward path, and per accumulation
// step of the blocked weight gradient: fixed, so no block moves with the
// thread count, and the patch columns of a block stay in cache.
constexpr int64_t kCols = 256, kWeightCols = 1024;

// col [C * kn, p1 - p0]: the patch columns of output positions [p0, p1) of
// x [C, *Q] (Q the source side: the big one forward, the small one
// transposed, where a column gathers the inputs that reach its position).
template <typename T>
void im2col_cols(const T* x, int64_t C, const Geo& g, bool transposed, int64_t p0, int64_t p1, T* col) {
  const int64_t* R = transposed ? g.S : g.O;
  const int64_t* Q = transposed ? g.O : g.S;
  const int64_t n = p1 - p0, qsp = Q[0] * Q[1] * Q[2];
  T* dst = col;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2, dst += n)
          for (int64_t p = p0; p < p1;) {
            // One run of positions along the last dim.
            const int64_t a2 = p % R[2], a1 = p / R[2] % R[1], a0 = p / (R[1] * R[2]);
            const int64_t seg = std::min(p1 - p, R[2] - a2);
            T* d = dst + (p - p0);
            const int64_t q0 = conv_source(g, transposed, 0, a0, k0);
            const int64_t q1 = q0 < 0 ? -1 : conv_source(g, transposed, 1, a1, k1);
            if (q1 < 0) {
              std::fill(d, d + seg, T(0));
            } else {
              const T* row = x + c * qsp + (q0 * Q[1] + q1) * Q[2];
              if (!transposed) {
                const int64_t off = k2 * g.d[2] - g.p[2];
                for (int64_t j = 0; j < seg; ++j) {
                  const int64_t q2 = (a2 + j) * g.s[2] + off;
                  d[j] = q2 >= 0 && q2 < Q[2] ? row[q2] : T(0);
                }
              } else {
                for (int64_t j = 0; j < seg; ++j) {
                  const int64_t q2 = conv_source(g, true, 2, a2 + j, k2);
                  d[j] = q2 >= 0 ? row[q2] : T(0);
                }
              }
            }
            p += seg;
          }
}

// im2col / col2im over channel blocks on the pool (inline when nested):
// each channel's rows are its own, so the bits do not depend on the split.
template <typename T>
void im2col_par(const T* x, int64_t C, const Geo& g, T* col) {
  parallel_for(0, C, 1, [&](int64_t c0, int64_t c1) {
    im2col(x + c0 * g.big(), c1 - c0, g, col + c0 * g.kn() * g.small());
  });
}
template <typename T>
void col2im_par(const T* col, int64_t C, const Geo& g, T* x) {
  parallel_for(0, C, 1, [&](int64_t c0, int64_t c1) {
    std::fill(x + c0 * g.big(), x + c1 * g.big(), T(0));
    col2im(col + c0 * g.kn() * g.small(), c1 - c0, g, x + c0 * g.big());
  });
}

// Whether `items` independent (image, group) items split over the pool
// evenly enough; otherwise the items run one after another, each threaded
// inside (im2col, gemm, col2im): with one image and one group the item split
// would leave all threads but one idle.
bool split_items(int64_t items) {
  const int64_t t = num_threads();
  return items % t == 0 || items >= 4 * t;
}

// Forward, or transposed with unit strides: per (image, group, block of
// output positions), the block's patch columns (im2col_cols) times the
// weight [C_out_g, C_in_g * kn] (transposed: w[c_in, c_out, k] read as
// [c_out][c_in, k]) straight into the output block.
template <typename T>
void convolution_blocked(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                         const Geo& g, const Tensor& out) {
  const int64_t N = input.size(0), G = p.groups, C_in = input.size(1), C_out = out.size(1);
  const int64_t Cin_g = C_in / G, Cout_g = C_out / G, kn = g.kn(), K = Cin_g * kn;
  const int64_t in_sp = p.transposed ? g.small() : g.big(), out_sp = p.transposed ? g.big() : g.small();
  const T* x = input.data<T>();
  const T* w = weight.data<T>();
  T* y = out.data<T>();
  std::vector<T> wt;
  if (p.transposed) {
    wt.resize(size_t(C_out * K));
    for (int64_t gr = 0; gr < G; ++gr)
      for (int64_t ci = 0; ci < Cin_g; ++ci)
        for (int64_t co = 0; co < Cout_g; ++co)
          for (int64_t k = 0; k < kn; ++k)
            wt[size_t((gr * Cout_g + co) * K + ci * kn + k)] = w[((gr * Cin_g + ci) * Cout_g + co) * kn + k];
    w = wt.data();
  }
  const int64_t blocks = (out_sp + kCols - 1) / kCols;
  parallel_for(0, N * G * blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> col;
    for (int64_t it = b0; it < b1; ++it) {
      const int64_t blk = it % blocks, ng = it / blocks, n = ng / G, gr = ng % G;
      const int64_t p0 = blk * kCols, p1 = std::min(out_sp, p0 + kCols);
      col.resize(size_t(K * (p1 - p0)));
      im2col_cols(x + (n * C_in + gr * Cin_g) * in_sp, Cin_g, g, p.transposed, p0, p1, col.data());
      T* yb = y + (n * C_out + gr * Cout_g) * out_sp + p0;
      gemm_ld<T>(false, Cout_g, p1 - p0, K, w + gr * Cout_g * K, K, col.data(), p1 - p0, T(0), yb, out_sp);
      if (bias.defined()) {
        const T* b = bias.data<T>() + gr * Cout_g;
        for (int64_t c = 0; c < Cout_g; ++c)
          for (int64_t j = 0; j < p1 - p0; ++j) yb[c * out_sp + j] += b[c];
      }
    }
  });
}

template <typename T>
void convolution_t(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                   const Tensor& out) {
  const int64_t N = input.size(0), G = p.groups;
  const int64_t Cin_g = input.size(1) / G, Cout_g = out.size(1) / G;
  // Forward: patches of the input, one column per output position; transposed:
  // the output is the side the kernel slides over.
  const Geo g = p.transposed ? make_geo(out, input, weight, p) : make_geo(input, out, weight, p);
  const T* x = input.data<T>();
  const T* w = weight.data<T>();
  T* y = out.data<T>();
  if (conv_takes_nhwc(input, out, G)) return conv_nhwc(input, weight, bias, p, g, out);
  if (p.transposed ? conv_direct_fits(Cout_g, Cin_g) : conv_direct_fits(Cin_g, Cout_g))
    return conv_direct<T>(x, w, bias.defined() ? bias.data<T>() : nullptr, p, g, N, input.size(1),
                          out.size(1), y);
  const int64_t kn = g.kn(), in_sp = p.transposed ? g.small() : g.big(),
                out_sp = p.transposed ? g.big() : g.small();
  const bool unit_stride = g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1;
  if (!identity(g) && (!p.transposed || unit_stride))
    return convolution_blocked<T>(input, weight, bias, p, g, out);
  // Transposed: weight [C_in, C_out_g * kn] per group, transposed once to
  // [C_out_g * kn, C_in_g] so the gemm's A is row-major.
  std::vector<T> wt;
  if (p.transposed) {
    const int64_t R = Cout_g * kn;
    wt.resize(size_t(G * R * Cin_g));
    for (int64_t gr = 0; gr < G; ++gr)
      for (int64_t c = 0; c < Cin_g; ++c)
        for (int64_t r = 0; r < R; ++r) wt[size_t((gr * R + r) * Cin_g + c)] = w[(gr * Cin_g + c) * R + r];
  }
  const bool ident = identity(g);
  auto run = [&](int64_t i0, int64_t i1) {
    std::vector<T> col;
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t n = item / G, gr = item % G;
      const T* xi = x + (n * input.size(1) + gr * Cin_g) * in_sp;
      T* yi = y + (n * out.size(1) + gr * Cout_g) * out_sp;
      if (!p.transposed) {
        const T* cp = xi;
        if (!ident) {
          col.resize(size_t(Cin_g * kn * out_sp));
          im2col_par(xi, Cin_g, g, col.data());
          cp = col.data();
        }
        gemm_t<T>(false, Cout_g, out_sp, Cin_g * kn, w + gr * Cout_g * Cin_g * kn, cp, T(0), yi);
      } else if (ident) {
        gemm_t<T>(false, Cout_g, out_sp, Cin_g, wt.data() + gr * Cout_g * Cin_g, xi, T(0), yi);
      } else {
        col.resize(size_t(Cout_g * kn * in_sp));
        gemm_t<T>(false, Cout_g * kn, in_sp, Cin_g, wt.data() + gr * Cout_g * kn * Cin_g, xi, T(0),
                  col.data());
        col2im_par(col.data(), Cout_g, g, yi);
      }
      if (bias.defined()) {
        const T* b = bias.data<T>() + gr * Cout_g;
        parallel_for(0, Cout_g, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c)
            for (int64_t j = 0; j < out_sp; ++j) yi[c * out_sp + j] += b[c];
        });
      }
    }
  };
  if (split_items(N * G))
    parallel_for(0, N * G, 1, run);
  else
    run(0, N * G);
}

// grad_weight [C_a, C_s_g, *k] per group = sum over images of
// a [C_a_g, small] @ im2col(src)^T, src the side the kernel slides over
// (forward: the input, a = grad_output; transposed: src = grad_output, a = the input).
template <typename T>
void convolution_backward_weight_t(const Tensor& input, const Tensor& grad_output, const ConvParams& p,
                                   const Tensor& grad_weight) {
  const Tensor& src = p.transposed ? grad_output : input;
  const Tensor& a = p.transposed ? input : grad_output;
  const int64_t N = input.size(0), G = p.groups;
  const int64_t Cs_g = src.size(1) / G, Ca_g = a.size(1) / G;
  const Geo g = make_geo(src, a, grad_weight, p);
  const T* sp = src.data<T>();
  const T* ap = a.data<T>();
  T* gw = grad_weight.data<T>();
  if (conv_takes_nhwc(src, a, G)) return conv_nhwc_weight(src, a, p, g, grad_weight);
  if (conv_direct_fits(Cs_g, Ca_g)) return conv_direct_weight<T>(sp, ap, p, g, N, src.size(1), a.size(1), gw);
  const int64_t kn = g.kn(), big = g.big(), small = g.small();
  const bool ident = identity(g);
  const int64_t per_group = Ca_g * Cs_g * kn;
  std::fill(gw, gw + G * per_group, T(0));
  if (!ident && !split_items(G)) {
    // Blocks of output positions in order, each gemm threaded: the patch
    // columns of one block, never those of a whole image.
    std::vector<T> col;
    for (int64_t gr = 0; gr < G; ++gr)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t p0 = 0; p0 < small; p0 += kWeightCols) {
          const int64_t p1 = std::min(small, p0 + kWeightCols), m = p1 - p0;
          const T* si = sp + (n * src.size(1) + gr * Cs_g) * big;
          col.resize(size_t(Cs_g * kn * m));
          parallel_for(0, Cs_g, 1, [&](int64_t c0, int64_t c1) {
            im2col_cols(si + c0 * big, c1 - c0, g, false, p0, p1, col.data() + c0 * kn * m);
          });
          gemm_ld<T>(true, Ca_g, Cs_g * kn, m, ap + (n * a.size(1) + gr * Ca_g) * small + p0, small,
                     col.data(), m, T(1), gw + gr * per_group, Cs_g * kn);
        }
    return;
  }
  auto run = [&](int64_t g0, int64_t g1) {
    std::vector<T> col;
    for (int64_t gr = g0; gr < g1; ++gr)
      for (int64_t n = 0; n < N; ++n) {
        const T* si = sp + (n * src.size(1) + gr * Cs_g) * big;
        const T* cp = si;
        if (!ident) {
          col.resize(size_t(Cs_g * kn * small));
          im2col_par(si, Cs_g, g, col.data());
          cp = col.data();
        }
        gemm_t<T>(true, Ca_g, Cs_g * kn, small, ap + (n * a.size(1) + gr * Ca_g) * small, cp, T(1),
                  gw + gr * per_group);
      }
  };
  if (split_items(G))
    parallel_for(0, G, 1, run);
  else
    run(0, G);
}

void convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p,
                 const Tensor& out) {
  if (out.numel() == 0) return;
  if (input.dtype() == DType::Float64) return convolution_t<double>(input, weight, bias, p, out);
  convolution_t<float>(input, weight, bias, p, out);
}

void convolution_backward_weight(const Tensor& input, const Tensor& grad_output, const ConvParams& p,
                                 const Tensor& grad_weight) {
  if (grad_weight.numel() == 0) return;
  if (input.dtype() == DType::Float64)
    return convolution_backward_weight_t<double>(input, grad_output, p, grad_weight);
  convolution_backward_weight_t<float>(input, grad_output, p, grad_weight);
}

}  // namespace

void register_conv_kernels() {
  ops::convolution.set_kernel(DeviceKind::CPU, convolution);
  ops::convolution_backward_weight.set_kernel(DeviceKind::CPU, convolution_backward_weight);
}

}  // namespace kiln::cpu
