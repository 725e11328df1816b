// Direct convolution kernels (see conv_direct.h): every output row is a sum
// of scaled input rows (conv_axpy), every weight-gradient entry a sum of row
// dot products (conv_dot), with scalar loops where the last dim is strided.
#include "cpu/ops/conv_direct.h"

#include <algorithm>

#include "cpu/conv_direct.h"
#include "kiln/thread_pool.h"

namespace kiln::cpu {
namespace {

// The positions o in [lo, hi) of a row of n for which o * s + off lies in [0, len).
void valid_range(int64_t off, int64_t s, int64_t len, int64_t n, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = off >= len ? 0 : std::min(n, (len - 1 - off) / s + 1);
  if (hi < lo) hi = lo;
}

// The small-side index o with o * s - p + k * d == i, or -1.
int64_t small_index(int64_t i, int64_t s, int64_t p, int64_t k, int64_t d, int64_t n) {
  const int64_t t = i + p - k * d;
  if (t < 0 || t % s != 0 || t / s >= n) return -1;
  return t / s;
}

}  // namespace

template <typename T>
void conv_direct(const T* x, const T* w, const T* bias, const ops::ConvParams& p, const ConvGeo& g, int64_t N,
                 int64_t C_in, int64_t C_out, T* y) {
  const int64_t G = p.groups, Cin_g = C_in / G, Cout_g = C_out / G, kn = g.kn();
  const int64_t in_sp = p.transposed ? g.small() : g.big(), out_sp = p.transposed ? g.big() : g.small();
  const int64_t s2 = g.s[2];
  parallel_for(0, N * C_out, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / C_out, co = q % C_out, gr = co / Cout_g, cog = co % Cout_g;
      T* yp = y + q * out_sp;
      std::fill(yp, yp + out_sp, T(0));
      // Rows of the output: forward the small side, transposed the big one.
      const int64_t R0 = p.transposed ? g.S[0] : g.O[0], R1 = p.transposed ? g.S[1] : g.O[1];
      const int64_t len = p.transposed ? g.S[2] : g.O[2];
      for (int64_t r0 = 0; r0 < R0; ++r0)
        for (int64_t r1 = 0; r1 < R1; ++r1) {
          T* yrow = yp + (r0 * R1 + r1) * len;
          for (int64_t ci = 0; ci < Cin_g; ++ci) {
            const T* xp = x + (n * C_in + gr * Cin_g + ci) * in_sp;
            const T* wk = w + (p.transposed ? (gr * Cin_g + ci) * Cout_g + cog : co * Cin_g + ci) * kn;
            for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
              for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
                const T* xrow;
                if (!p.transposed) {
                  const int64_t i0 = r0 * g.s[0] - g.p[0] + k0 * g.d[0],
                                i1 = r1 * g.s[1] - g.p[1] + k1 * g.d[1];
                  if (i0 < 0 || i0 >= g.S[0] || i1 < 0 || i1 >= g.S[1]) continue;
                  xrow = xp + (i0 * g.S[1] + i1) * g.S[2];
                } else {
                  const int64_t o0 = small_index(r0, g.s[0], g.p[0], k0, g.d[0], g.O[0]),
                                o1 = small_index(r1, g.s[1], g.p[1], k1, g.d[1], g.O[1]);
                  if (o0 < 0 || o1 < 0) continue;
                  xrow = xp + (o0 * g.O[1] + o1) * g.O[2];
                }
                for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
                  const T wv = wk[(k0 * g.K[1] + k1) * g.K[2] + k2];
                  const int64_t off = k2 * g.d[2] - g.p[2];
                  int64_t lo, hi;
                  // Small-side position o2 meets big-side position o2 * s2 + off.
                  valid_range(off, s2, g.S[2], g.O[2], lo, hi);
                  if (!p.transposed) {
                    if (s2 == 1)
                      conv_axpy(wv, xrow + lo + off, yrow + lo, hi - lo);
                    else
                      for (int64_t o2 = lo; o2 < hi; ++o2) yrow[o2] += wv * xrow[o2 * s2 + off];
                  } else if (s2 == 1) {
                    conv_axpy(wv, xrow + lo, yrow + lo + off, hi - lo);
                  } else {
                    for (int64_t o2 = lo; o2 < hi; ++o2) yrow[o2 * s2 + off] += wv * xrow[o2];
                  }
                }
              }
          }
        }
      if (bias)
        for (int64_t j = 0; j < out_sp; ++j) yp[j] += bias[co];
    }
  });
}

template <typename T>
void conv_direct_weight(const T* src, const T* a, const ops::ConvParams& p, const ConvGeo& g, int64_t N,
                        int64_t C_s, int64_t C_a, T* gw) {
  const int64_t G = p.groups, Cs_g = C_s / G, Ca_g = C_a / G, kn = g.kn(), big = g.big(), small = g.small();
  const int64_t s2 = g.s[2];
  parallel_for(0, C_a, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t ca = c0; ca < c1; ++ca) {
      const int64_t gr = ca / Ca_g;
      for (int64_t cs = 0; cs < Cs_g; ++cs)
        for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
              const int64_t off = k2 * g.d[2] - g.p[2];
              int64_t lo, hi;
              valid_range(off, s2, g.S[2], g.O[2], lo, hi);
              T acc = 0;
              for (int64_t n = 0; n < N; ++n) {
                const T* ap = a + (n * C_a + ca) * small;
                const T* sp = src + (n * C_s + gr * Cs_g + cs) * big;
                for (int64_t o0 = 0; o0 < g.O[0]; ++o0) {
                  const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
                  if (i0 < 0 || i0 >= g.S[0]) continue;
                  for (int64_t o1 = 0; o1 < g.O[1]; ++o1) {
                    const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
                    if (i1 < 0 || i1 >= g.S[1]) continue;
                    const T* arow = ap + (o0 * g.O[1] + o1) * g.O[2];
                    const T* srow = sp + (i0 * g.S[1] + i1) * g.S[2];
                    if (s2 == 1)
                      acc += conv_dot(arow + lo, srow + lo + off, hi - lo);
                    else
                      for (int64_t o2 = lo; o2 < hi; ++o2) acc += arow[o2] * srow[o2 * s2 + off];
                  }
                }
              }
              gw[(ca * Cs_g + cs) * kn + (k0 * g.K[1] + k1) * g.K[2] + k2] = acc;
            }
    }
  });
}

template void conv_direct<float>(const float*, const float*, const float*, const ops::ConvParams&,
                                 const ConvGeo&, int64_t, int64_t, int64_t, float*);
template void conv_direct<double>(const double*, const double*, const double*, const ops::ConvParams&,
                                  const ConvGeo&, int64_t, int64_t, int64_t, double*);
template void conv_direct_weight<float>(const float*, const float*, const ops::ConvParams&, const ConvGeo&,
                                        int64_t, int64_t, int64_t, float*);
template void conv_direct_weight<double>(const double*, const double*, const ops::ConvParams&, const ConvGeo&,
                                         int64_t, int64_t, int64_t, double*);

}  // namespace kiln::cpu
