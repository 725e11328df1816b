// ggml's 32-element block encoders and the dispatch over every type kiln
// writes. The legacy types follow gguf-py's gguf.quants.quantize operation for
// operation in float32 (built with -ffp-contract=off), so the bytes are its:
//   Q8_0: d = amax / 127,                    q = round-half-away(x / d)
//   Q4_0: d = x[argmax |x|] / -8,            q = min(15, trunc(x / d + 8.5))
//   Q5_0: d = x[argmax |x|] / -16,           q = min(31, trunc(x / d + 16.5))
//   Q4_1: d = (max - min) / 15, m = min,     q = min(15, trunc((x - m) / d + 0.5))
//   Q5_1: d = (max - min) / 31, m = min,     q = min(31, trunc((x - m) / d + 0.5))
// where "/ d" is a multiply by the float32 reciprocal (0 when d is 0), and d
// and m are stored as f16. Layouts: quant_blocks.cc.
#include "quant_encode.h"

#include <algorithm>
#include <cmath>

#include "kiln/error.h"
#include "kiln/io/gguf_quantize.h"

namespace kiln::io {
namespace detail {
namespace {

inline float reciprocal_or_zero(float d) { return d == 0.0f ? 0.0f : 1.0f / d; }

// The element of largest magnitude, with its sign (the first on ties, as argmax).
inline float signed_absmax(const float* x) {
  float best = x[0];
  for (int j = 1; j < 32; ++j)
    if (std::fabs(x[j]) > std::fabs(best)) best = x[j];
  return best;
}

inline void min_max(const float* x, float& lo, float& hi) {
  lo = hi = x[0];
  for (int j = 1; j < 32; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
}

// trunc(v) clamped to [0, top]: the reference's trunc -> uint8 -> clip. A
// NaN (0 * inf, from a scale whose reciprocal overflows) reads as 0, where
// converting it to an integer would be undefined.
inline int trunc_code(float v, int top) { return v >= 0 ? int(std::min(std::trunc(v), float(top))) : 0; }

// Q4 order: element j in the low nibble of byte j, element j + 16 in its high nibble.
inline void pack_nibbles(const int q[32], uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
}

// Bit j of the little-endian u32 at qh: bit 4 of code j.
inline void pack_high_bits(const int q[32], uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 32; ++j) h |= uint32_t((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &h, 4);
}

// Q4_0 / Q5_0: symmetric, the largest-magnitude element mapped to -half.
void quant_symmetric(const float* src, uint8_t* dst, int64_t nblocks, int half, bool five) {
  const int bytes = five ? 22 : 18, top = 2 * half - 1;
  int q[32];
  for (int64_t b = 0; b < nblocks; ++b, src += 32, dst += bytes) {
    const float d = signed_absmax(src) / float(-half);
    const float id = reciprocal_or_zero(d);
    for (int j = 0; j < 32; ++j) q[j] = trunc_code(src[j] * id + (float(half) + 0.5f), top);
    put_f16(dst, d);
    if (five) pack_high_bits(q, dst + 2);
    pack_nibbles(q, dst + (five ? 6 : 2));
  }
}

// Q4_1 / Q5_1: affine over [min, max].
void quant_affine(const float* src, uint8_t* dst, int64_t nblocks, int top, bool five) {
  const int bytes = five ? 24 : 20;
  int q[32];
  for (int64_t b = 0; b < nblocks; ++b, src += 32, dst += bytes) {
    float lo, hi;
    min_max(src, lo, hi);
    const float d = (hi - lo) / float(top);
    const float id = reciprocal_or_zero(d);
    for (int j = 0; j < 32; ++j) q[j] = trunc_code((src[j] - lo) * id + 0.5f, top);
    put_f16(dst, d);
    put_f16(dst + 2, lo);
    if (five) pack_high_bits(q, dst + 4);
    pack_nibbles(q, dst + (five ? 8 : 4));
  }
}

}  // namespace

void quant_q8_0(const float* src, uint8_t* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 32, dst += 34) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = reciprocal_or_zero(d);
    put_f16(dst, d);
    for (int j = 0; j < 32; ++j) {
      const float q = std::round(src[j] * id);  // |q| <= 127 unless 1 / d overflowed; NaN then reads as 0
      dst[2 + j] = uint8_t(int8_t(q >= -127.0f ? std::min(q, 127.0f) : q < -127.0f ? -127.0f : 0.0f));
    }
  }
}

void quant_q4_0(const float* src, uint8_t* dst, int64_t nblocks) {
  quant_symmetric(src, dst, nblocks, 8, false);
}
void quant_q5_0(const float* src, uint8_t* dst, int64_t nblocks) {
  quant_symmetric(src, dst, nblocks, 16, true);
}
void quant_q4_1(const float* src, uint8_t* dst, int64_t nblocks) {
  quant_affine(src, dst, nblocks, 15, false);
}
void quant_q5_1(const float* src, uint8_t* dst, int64_t nblocks) {
  quant_affine(src, dst, nblocks, 31, true);
}

}  // namespace detail

namespace {

using EncodeFn = void (*)(const float*, uint8_t*, int64_t);

EncodeFn block_encoder(GGMLType t) {
  using namespace detail;
  switch (t) {
    case GGMLType::Q4_0:
      return quant_q4_0;
    case GGMLType::Q4_1:
      return quant_q4_1;
    case GGMLType::Q5_0:
      return quant_q5_0;
    case GGMLType::Q5_1:
      return quant_q5_1;
    case GGMLType::Q8_0:
      return quant_q8_0;
    case GGMLType::Q4_K:
      return quant_q4_k;
    case GGMLType::Q5_K:
      return quant_q5_k;
    case GGMLType::Q6_K:
      return quant_q6_k;
    case GGMLType::Q2_K:
      return quant_q2_k;
    case GGMLType::Q3_K:
      return quant_q3_k;
    case GGMLType::IQ4_NL:
      return quant_iq4_nl;
    case GGMLType::IQ4_XS:
      return quant_iq4_xs;
    default:
      return nullptr;
  }
}

bool plain_float(GGMLType t) { return t == GGMLType::F32 || t == GGMLType::F16 || t == GGMLType::BF16; }

}  // namespace

bool ggml_quantizable(GGMLType t) { return plain_float(t) || block_encoder(t) != nullptr; }

const std::string& ggml_quantizable_type_names() {
  static const std::string names = [] {
    std::string s;
    for (uint32_t k = 0; k < 64; ++k) {
      const GGMLTypeInfo* info = ggml_type_info(k);
      if (info == nullptr || !ggml_quantizable(GGMLType(k))) continue;
      s += (s.empty() ? "" : ", ") + std::string(info->name);
    }
    return s;
  }();
  return names;
}

void quantize_row(GGMLType t, const float* src, uint8_t* dst, int64_t n) {
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(t));
  KILN_CHECK(info != nullptr, ValueError, "[gguf.quantize] unknown ggml type " << uint32_t(t));
  KILN_CHECK(ggml_quantizable(t), NotImplementedError,
             "[gguf.quantize] kiln does not write ggml type " << info->name << " (it writes "
                                                              << ggml_quantizable_type_names() << ")");
  KILN_CHECK(n >= 0 && n % info->block_size == 0, ValueError,
             "[gguf.quantize] " << n << " elements is not a whole number of " << info->name << " blocks");
  if (n == 0) return;
  if (EncodeFn f = block_encoder(t)) return f(src, dst, n / info->block_size);
  for (int64_t k = 0; k < n; ++k) {
    if (t == GGMLType::F32) {
      std::memcpy(dst + 4 * k, src + k, 4);
      continue;
    }
    const uint16_t h = t == GGMLType::F16 ? float_to_f16_bits(src[k]) : float_to_bf16_bits(src[k]);
    std::memcpy(dst + 2 * k, &h, 2);
  }
}

}  // namespace kiln::io
