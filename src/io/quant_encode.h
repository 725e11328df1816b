// ggml block encoders (internal to src/io): each writes `nblocks` whole blocks
// of its type at `dst` from nblocks * block_size floats at `src`, the inverse
// of the decoders in quant_blocks.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kiln/float_types.h"

namespace kiln::io::detail {

inline void put_f16(uint8_t* p, float v) {
  const uint16_t h = float_to_f16_bits(v);
  std::memcpy(p, &h, 2);
}

inline int nearest(float v) { return int(std::lrintf(v)); }

// The fitting weights of n elements: sqrt(mean x^2) + |x|, which favour the
// larger elements (they carry more of a product's value) without ignoring the rest.
inline void element_weights(const float* x, float* w, int n) {
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) sum_sq += double(x[i]) * x[i];
  const float base = float(std::sqrt(sum_sq / n));
  for (int i = 0; i < n; ++i) w[i] = base + std::fabs(x[i]);
}

// The element of largest magnitude among n, with its sign (the first on ties).
inline float signed_peak(const float* x, int n) {
  float peak = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(peak)) peak = x[i];
  return peak;
}

// The code among c0 - 1, c0, c0 + 1 (those in [lo, hi]) of least err(code),
// and that error: coarse scale codes rounded to nearest are not always the
// best once the elements are rounded against them.
struct CodeChoice {
  int code;
  double err;
};
template <class Err>
CodeChoice best_code_near(int c0, int lo, int hi, Err err) {
  CodeChoice best{c0, 0};
  bool first = true;
  for (int c = c0 > lo ? c0 - 1 : lo; c <= (c0 < hi ? c0 + 1 : hi); ++c) {
    const double e = err(c);
    if (first || e < best.err) best = {c, e};
    first = false;
  }
  return best;
}

// 32-element blocks (quant_encode.cc), bit for bit as gguf-py.
void quant_q4_0(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q4_1(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q5_0(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q5_1(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q8_0(const float* src, uint8_t* dst, int64_t nblocks);

// 256-element super-blocks (quant_encode_k.cc), fitted by kiln.
void quant_q4_k(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q5_k(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q6_k(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q2_k(const float* src, uint8_t* dst, int64_t nblocks);
void quant_q3_k(const float* src, uint8_t* dst, int64_t nblocks);

// The non-linear 4-bit types (quant_encode_iq4.cc), fitted by kiln.
void quant_iq4_nl(const float* src, uint8_t* dst, int64_t nblocks);
void quant_iq4_xs(const float* src, uint8_t* dst, int64_t nblocks);

}  // namespace kiln::io::detail
