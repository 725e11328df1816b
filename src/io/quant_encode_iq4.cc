// The non-linear 4-bit encoders: IQ4_NL (32-element blocks) and IQ4_XS
// (256-element super-blocks of 8 sub-blocks), whose codes index ggml's 16
// levels (kIQ4Levels, -127..113, denser near zero). Layouts: quant_blocks.cc
// and quant_blocks_k.cc. ggml leaves the fit to the writer; kiln's is:
//   1. Each block (IQ4_NL) or sub-block (IQ4_XS) gets a float scale: for
//      candidate scales that put its largest-magnitude element near either
//      end of the levels, every element takes its nearest level, the best
//      scale for those levels is solved by weighted least squares, and the
//      candidate of least weighted error is kept (weights as the K types').
//   2. IQ4_XS: the f16 d maps the largest sub-block scale onto -32, the
//      negative end of the 6-bit signed scale codes; each sub-block tries its
//      rounded code and the two beside it and keeps the one of least error.
//   3. Every element takes the level nearest to it under the scale as stored.
#include <algorithm>
#include <cmath>

#include "core/ggml_blocks.h"
#include "quant_encode.h"

namespace kiln::io::detail {
namespace {

using ggml::kIQ4Levels;

constexpr int kSweep = 5;  // candidates: an end level +- 3 * k for k in [-kSweep, kSweep]

// The midpoints between neighbouring levels are all multiples of 1/2, so the
// nearest level is constant over each half-unit interval [k/2, (k+1)/2): one
// table entry per interval over [-kHalfSpan / 2, kHalfSpan / 2), the end
// levels beyond. A table lookup, not 15 compares or a search: the fits below
// call this ~20 times per element.
constexpr int kHalfSpan = 300;

struct NearestLevelTable {
  uint8_t index[2 * kHalfSpan];
  NearestLevelTable() {
    for (int k = 0; k < 2 * kHalfSpan; ++k) {
      const float v = float(k - kHalfSpan) * 0.5f + 0.25f;  // inside interval k
      int q = 0;
      for (int j = 0; j < 15; ++j) q += v > 0.5f * float(kIQ4Levels[j] + kIQ4Levels[j + 1]);
      index[k] = uint8_t(q);
    }
  }
};
const NearestLevelTable kNearest;

// The index of the level nearest v (a midpoint itself goes to the upper one).
inline int nearest_level(float v) {
  const float k = 2 * v + float(kHalfSpan);  // the interval holding v, before truncation
  if (!(k >= 0)) return 0;                   // below the table, or NaN (0 * inf)
  return k >= float(2 * kHalfSpan) ? 15 : kNearest.index[int(k)];
}

// The scale of x ~= scale * levels[q] for n elements (step 1).
float fit_levels(const float* x, const float* w, int n) {
  const float peak = signed_peak(x, n);
  if (peak == 0) return 0;
  double best_score = -1;
  float scale = 0;
  for (const float end : {float(kIQ4Levels[0]), float(kIQ4Levels[15])})
    for (int k = -kSweep; k <= kSweep; ++k) {
      const float target = end + (end < 0 ? -3.0f : 3.0f) * float(k);
      const float iscale = target / peak;
      float slx = 0, sll = 0;  // float: n is at most 32
      for (int i = 0; i < n; ++i) {
        const float l = kIQ4Levels[nearest_level(iscale * x[i])];
        slx += w[i] * l * x[i];
        sll += w[i] * l * l;
      }
      // With the best scale slx / sll, the error is sum w x^2 - slx^2 / sll.
      if (sll > 0 && double(slx) * slx / sll > best_score) {
        best_score = double(slx) * slx / sll;
        scale = slx / sll;
      }
    }
  return scale;
}

// Weighted squared error of x ~= dl * levels[q] with each q nearest.
double levels_error(const float* x, const float* w, int n, float dl) {
  const float idl = dl != 0 ? 1 / dl : 0;
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const double e = double(dl * float(kIQ4Levels[nearest_level(x[i] * idl)])) - x[i];
    err += w[i] * e * e;
  }
  return err;
}

// The 32 codes of x under scale dl, in Q4_0's nibble order: element j in the
// low nibble of qs[j], element j + 16 in its high nibble.
void put_levels(const float* x, float dl, uint8_t* qs) {
  const float idl = dl != 0 ? 1 / dl : 0;
  for (int j = 0; j < 16; ++j)
    qs[j] = uint8_t(nearest_level(x[j] * idl) | nearest_level(x[j + 16] * idl) << 4);
}

}  // namespace

// IQ4_NL (18 B): f16 d; u8 qs[16].
void quant_iq4_nl(const float* src, uint8_t* dst, int64_t nblocks) {
  float w[32];
  for (int64_t b = 0; b < nblocks; ++b, src += 32, dst += 18) {
    element_weights(src, w, 32);
    const float d = fit_levels(src, w, 32);
    put_f16(dst, d);
    put_levels(src, f16_bits_to_float(float_to_f16_bits(d)), dst + 2);
  }
}

// IQ4_XS (136 B): f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128].
void quant_iq4_xs(const float* src, uint8_t* dst, int64_t nblocks) {
  float w[256], scale[8];
  for (int64_t b = 0; b < nblocks; ++b, src += 256, dst += 136) {
    element_weights(src, w, 256);
    float peak = 0;
    for (int g = 0; g < 8; ++g) {
      scale[g] = fit_levels(src + 32 * g, w + 32 * g, 32);
      if (std::fabs(scale[g]) > std::fabs(peak)) peak = scale[g];
    }
    const float iscale = peak != 0 ? -32 / peak : 0;
    const float d = iscale != 0 ? 1 / iscale : 0;
    std::memset(dst, 0, 136);
    put_f16(dst, d);
    const float d16 = f16_bits_to_float(float_to_f16_bits(d));
    uint16_t scales_h = 0;
    uint8_t* scales_l = dst + 4;
    for (int g = 0; g < 8; ++g) {
      const float* x = src + 32 * g;
      const int sc = best_code_near(std::clamp(nearest(iscale * scale[g]), -32, 31), -32, 31, [&](int c) {
                       return levels_error(x, w + 32 * g, 32, d16 * float(c));
                     }).code;
      const int code = sc + 32;  // low 4 bits in nibble g%2 of scales_l[g/2], high 2 at bit 2g of scales_h
      scales_l[g >> 1] |= uint8_t((code & 0x0F) << (4 * (g & 1)));
      scales_h |= uint16_t((code >> 4) << (2 * g));
      put_levels(x, d16 * float(sc), dst + 8 + 16 * g);
    }
    std::memcpy(dst + 2, &scales_h, 2);
  }
}

}  // namespace kiln::io::detail
