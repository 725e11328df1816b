// ggml's 256-element "K" super-block encoders (layouts: quant_blocks_k.cc).
// ggml leaves the fit to the writer; kiln's is:
//   1. Each sub-block (32 elements for Q4_K/Q5_K, 16 for Q2_K/Q3_K/Q6_K) gets a
//      float scale (and, for Q2_K/Q4_K/Q5_K, a min) by weighted least squares: for each of
//      kSweep candidate grids the codes are rounded, the best scale (and min)
//      for those codes is solved in closed form, and the candidate of least
//      weighted error is kept. Weights sqrt(mean x^2) + |x| favour the larger
//      elements, which carry more of a product's value.
//   2. The super-block's f16 d (and dmin) map the largest sub-block scale
//      (min) onto the top code (6 bits; Q2_K 4 bits; Q6_K and Q3_K onto the
//      negative end of their signed range), and every sub-block scale is
//      rounded to its code. Q2_K and Q3_K, whose scale codes are coarse, then
//      try the neighbouring codes (each of scale and min +-1) and keep the one
//      of least weighted error.
//   3. The codes are rounded again against the scales as stored (f16 times
//      code), so the block decodes to the nearest grid point it can.
#include <algorithm>
#include <cmath>
#include <limits>

#include "quant_encode.h"

namespace kiln::io::detail {
namespace {

constexpr int kSweep = 10;  // candidate grids: nmax + 0.1 * k for k in [-kSweep, kSweep]

// x ~= scale * L - min with L in [0, nmax], scale >= 0, min >= 0 (the grid
// always reaches 0 or below, as the format's unsigned min requires).
void fit_affine(const float* x, const float* w, int n, int nmax, float& scale, float& min) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);
  scale = 0;
  min = -lo;
  if (!(hi > lo)) return;  // every element equal to lo: the min alone holds them
  double best = std::numeric_limits<double>::infinity();
  for (int k = -kSweep; k <= kSweep; ++k) {
    const float iscale = (float(nmax) + 0.1f * float(k)) / (hi - lo);
    double sw = 0, sl = 0, sll = 0, sx = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      const double l = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
      sw += w[i];
      sl += w[i] * l;
      sll += w[i] * l * l;
      sx += w[i] * x[i];
      slx += w[i] * l * x[i];
    }
    // Weighted least squares for x ~= a * l + b; b must stay <= 0.
    const double det = sw * sll - sl * sl;
    if (det <= 0) continue;
    double a = (sw * slx - sl * sx) / det, b = (sll * sx - sl * slx) / det;
    if (b > 0) {
      b = 0;
      a = slx / sll;
    }
    if (a <= 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double l = std::clamp(nearest(float((x[i] - b) / a)), 0, nmax);
      const double e = a * l + b - x[i];
      err += w[i] * e * e;
    }
    if (err < best) {
      best = err;
      scale = float(a);
      min = float(-b);
    }
  }
}

// x ~= scale * L with L in [-nmax, nmax - 1]; the largest-magnitude element
// lands near -nmax, the end of the range with one more code.
float fit_symmetric(const float* x, const float* w, int n, int nmax) {
  const float peak = signed_peak(x, n);
  if (peak == 0) return 0;
  double best_score = -1;
  float scale = 0;
  for (int k = -kSweep; k <= kSweep; ++k) {
    const float iscale = -(float(nmax) + 0.1f * float(k)) / peak;
    double slx = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      const double l = std::clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
      slx += w[i] * l * x[i];
      sll += w[i] * l * l;
    }
    // With the best scale slx / sll, the error is sum w x^2 - slx^2 / sll.
    if (sll > 0 && slx * slx / sll > best_score) {
      best_score = slx * slx / sll;
      scale = float(slx / sll);
    }
  }
  return scale;
}

// Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scale and min codes.
void quant_k45(const float* src, uint8_t* dst, int64_t nblocks, bool five) {
  const int bytes = five ? 176 : 144, nmax = five ? 31 : 15;
  float w[256], scale[8], min[8];
  for (int64_t b = 0; b < nblocks; ++b, src += 256, dst += bytes) {
    element_weights(src, w, 256);
    float max_scale = 0, max_min = 0;
    for (int g = 0; g < 8; ++g) {
      fit_affine(src + 32 * g, w + 32 * g, 32, nmax, scale[g], min[g]);
      max_scale = std::max(max_scale, scale[g]);
      max_min = std::max(max_min, min[g]);
    }
    const float d = max_scale / 63, dmin = max_min / 63;
    const float id = d > 0 ? 1 / d : 0, idmin = dmin > 0 ? 1 / dmin : 0;
    std::memset(dst, 0, size_t(bytes));
    put_f16(dst, d);
    put_f16(dst + 2, dmin);
    const float d16 = f16_bits_to_float(float_to_f16_bits(d));
    const float dmin16 = f16_bits_to_float(float_to_f16_bits(dmin));
    uint8_t* s = dst + 4;
    uint8_t* qh = five ? dst + 16 : nullptr;
    uint8_t* qs = five ? dst + 48 : dst + 16;
    for (int g = 0; g < 8; ++g) {
      const int sc = std::clamp(nearest(scale[g] * id), 0, 63);
      const int m = std::clamp(nearest(min[g] * idmin), 0, 63);
      // The inverse of ggml::k4_scale_min's 12-byte packing.
      if (g < 4) {
        s[g] |= uint8_t(sc);
        s[g + 4] |= uint8_t(m);
      } else {
        s[g + 4] = uint8_t((sc & 0x0F) | (m & 0x0F) << 4);
        s[g - 4] |= uint8_t((sc >> 4) << 6);
        s[g] |= uint8_t((m >> 4) << 6);
      }
      const float dl = d16 * float(sc), ml = dmin16 * float(m);
      const float idl = dl > 0 ? 1 / dl : 0;
      const float* x = src + 32 * g;
      uint8_t* q4 = qs + (g >> 1) * 32;
      for (int l = 0; l < 32; ++l) {
        const int q = std::clamp(nearest((x[l] + ml) * idl), 0, nmax);
        q4[l] |= uint8_t((q & 0x0F) << (4 * (g & 1)));
        if (five) qh[l] |= uint8_t(((q >> 4) & 1) << g);
      }
    }
  }
}

}  // namespace

void quant_q4_k(const float* src, uint8_t* dst, int64_t nblocks) { quant_k45(src, dst, nblocks, false); }
void quant_q5_k(const float* src, uint8_t* dst, int64_t nblocks) { quant_k45(src, dst, nblocks, true); }

// Q6_K: 16 sub-blocks of 16, codes in [-32, 31], int8 scale codes.
void quant_q6_k(const float* src, uint8_t* dst, int64_t nblocks) {
  float w[256], scale[16];
  for (int64_t b = 0; b < nblocks; ++b, src += 256, dst += 210) {
    element_weights(src, w, 256);
    float peak = 0;
    for (int g = 0; g < 16; ++g) {
      scale[g] = fit_symmetric(src + 16 * g, w + 16 * g, 16, 32);
      if (std::fabs(scale[g]) > std::fabs(peak)) peak = scale[g];
    }
    const float iscale = peak != 0 ? -128 / peak : 0;
    std::memset(dst, 0, 210);
    const float d = iscale != 0 ? 1 / iscale : 0;
    put_f16(dst + 208, d);
    const float d16 = f16_bits_to_float(float_to_f16_bits(d));
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    int8_t* sc = reinterpret_cast<int8_t*>(dst + 192);
    for (int g = 0; g < 16; ++g) {
      sc[g] = int8_t(std::clamp(nearest(iscale * scale[g]), -128, 127));
      const float dl = d16 * float(sc[g]);
      const float idl = dl != 0 ? 1 / dl : 0;
      for (int k = 0; k < 16; ++k) {
        const int i = g * 16 + k;
        const int q = std::clamp(nearest(src[i] * idl), -32, 31) + 32;
        const int h = i >> 7, r = i & 127;
        ql[h * 64 + (r & 63)] |= uint8_t((q & 0x0F) << (4 * (r >> 6)));
        qh[h * 32 + (r & 31)] |= uint8_t((q >> 4) << (2 * (r >> 5)));
      }
    }
  }
}

namespace {

// Weighted squared error of x ~= dl * q - ml with each q the nearest code in [0, nmax].
double affine_error(const float* x, const float* w, int n, int nmax, float dl, float ml) {
  const float idl = dl > 0 ? 1 / dl : 0;
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const int q = std::clamp(nearest((x[i] + ml) * idl), 0, nmax);
    const double e = double(dl * float(q) - ml) - x[i];
    err += w[i] * e * e;
  }
  return err;
}

// Weighted squared error of x ~= dl * q with each q the nearest code in [lo, hi].
double symmetric_error(const float* x, const float* w, int n, int lo, int hi, float dl) {
  const float idl = dl != 0 ? 1 / dl : 0;
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const int q = std::clamp(nearest(x[i] * idl), lo, hi);
    const double e = double(dl * float(q)) - x[i];
    err += w[i] * e * e;
  }
  return err;
}

// Bits 2 * ((i / 32) % 4) of byte (i / 128) * 32 + i % 32: the 2-bit code order of Q2_K and Q3_K.
inline void put_2bit(uint8_t* qs, int i, int q) {
  qs[(i >> 7) * 32 + (i & 31)] |= uint8_t(q << (2 * ((i >> 5) & 3)));
}

}  // namespace

// Q2_K: 16 sub-blocks of 16, codes in [0, 3], 4-bit scale and min codes.
void quant_q2_k(const float* src, uint8_t* dst, int64_t nblocks) {
  float w[256], scale[16], min[16];
  for (int64_t b = 0; b < nblocks; ++b, src += 256, dst += 84) {
    element_weights(src, w, 256);
    float max_scale = 0, max_min = 0;
    for (int g = 0; g < 16; ++g) {
      fit_affine(src + 16 * g, w + 16 * g, 16, 3, scale[g], min[g]);
      max_scale = std::max(max_scale, scale[g]);
      max_min = std::max(max_min, min[g]);
    }
    const float d = max_scale / 15, dmin = max_min / 15;
    const float id = d > 0 ? 1 / d : 0, idmin = dmin > 0 ? 1 / dmin : 0;
    std::memset(dst, 0, 84);
    put_f16(dst + 80, d);
    put_f16(dst + 82, dmin);
    const float d16 = f16_bits_to_float(float_to_f16_bits(d));
    const float dmin16 = f16_bits_to_float(float_to_f16_bits(dmin));
    uint8_t* qs = dst + 16;
    for (int g = 0; g < 16; ++g) {
      const float* x = src + 16 * g;
      // The scale and min codes together: for each scale code, its best min code.
      const int m0 = std::clamp(nearest(min[g] * idmin), 0, 15);
      auto best_min = [&](int s) {
        return best_code_near(m0, 0, 15, [&](int k) {
          return affine_error(x, w + 16 * g, 16, 3, d16 * float(s), dmin16 * float(k));
        });
      };
      const int sc = best_code_near(std::clamp(nearest(scale[g] * id), 0, 15), 0, 15, [&](int s) {
                       return best_min(s).err;
                     }).code;
      const int m = best_min(sc).code;
      dst[g] = uint8_t(sc | m << 4);
      const float dl = d16 * float(sc), ml = dmin16 * float(m);
      const float idl = dl > 0 ? 1 / dl : 0;
      for (int k = 0; k < 16; ++k) put_2bit(qs, 16 * g + k, std::clamp(nearest((x[k] + ml) * idl), 0, 3));
    }
  }
}

// Q3_K: 16 sub-blocks of 16, codes in [-4, 3], 6-bit signed scale codes.
void quant_q3_k(const float* src, uint8_t* dst, int64_t nblocks) {
  float w[256], scale[16];
  for (int64_t b = 0; b < nblocks; ++b, src += 256, dst += 110) {
    element_weights(src, w, 256);
    float peak = 0;
    for (int g = 0; g < 16; ++g) {
      scale[g] = fit_symmetric(src + 16 * g, w + 16 * g, 16, 4);
      if (std::fabs(scale[g]) > std::fabs(peak)) peak = scale[g];
    }
    const float iscale = peak != 0 ? -32 / peak : 0;
    const float d = iscale != 0 ? 1 / iscale : 0;
    std::memset(dst, 0, 110);
    put_f16(dst + 108, d);
    const float d16 = f16_bits_to_float(float_to_f16_bits(d));
    uint8_t* hmask = dst;
    uint8_t* qs = dst + 32;
    uint8_t* s = dst + 96;
    for (int g = 0; g < 16; ++g) {
      const float* x = src + 16 * g;
      const int sc = best_code_near(std::clamp(nearest(iscale * scale[g]), -32, 31), -32, 31, [&](int c) {
                       return symmetric_error(x, w + 16 * g, 16, -4, 3, d16 * float(c));
                     }).code;
      // The inverse of the decoder's unpacking: low 4 bits in nibble g/8 of
      // s[g%8], high 2 bits at bit 2*(g/4) of s[8 + g%4].
      const int code = sc + 32;
      s[g & 7] |= uint8_t((code & 0x0F) << (4 * (g >> 3)));
      s[8 + (g & 3)] |= uint8_t((code >> 4) << (2 * (g >> 2)));
      const float dl = d16 * float(sc);
      const float idl = dl != 0 ? 1 / dl : 0;
      for (int k = 0; k < 16; ++k) {
        const int i = 16 * g + k, q = std::clamp(nearest(x[k] * idl), -4, 3);
        // q >= 0: its 2 bits with the hmask bit set; q < 0: q + 4 with it clear.
        put_2bit(qs, i, q & 3);
        if (q >= 0) hmask[i & 31] |= uint8_t(1 << (i >> 5));
      }
    }
  }
}

}  // namespace kiln::io::detail
