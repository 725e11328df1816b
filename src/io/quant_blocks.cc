// ggml block formats, dequantized to f32 exactly as ggml's reference code
// (and gguf-py's gguf.quants) does it: the f16 scale widened to f32, then one
// f32 multiply (and one add for Q4_1) per element.
//   Q8_0: {f16 d; int8 q[32]}                 x = d * q
//   Q4_0: {f16 d; u8 qs[16]}                  x[j] = d * ((qs[j] & 15) - 8), x[j+16] = d * ((qs[j] >> 4) - 8)
//   Q4_1: {f16 d; f16 m; u8 qs[16]}           x[j] = d * (qs[j] & 15) + m,   x[j+16] = d * (qs[j] >> 4) + m
#include <cstring>

#include "kiln/error.h"
#include "kiln/float_types.h"
#include "kiln/io/gguf.h"

namespace kiln::io {
namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_bits_to_float(h);
}

void dequant_q8_0(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 34, dst += 32) {
    const float d = f16_at(src);
    const int8_t* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int j = 0; j < 32; ++j) dst[j] = float(q[j]) * d;
  }
}

void dequant_q4_0(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 18, dst += 32) {
    const float d = f16_at(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = float(int(qs[j] & 0x0F) - 8) * d;
      dst[j + 16] = float(int(qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 20, dst += 32) {
    const float d = f16_at(src), m = f16_at(src + 2);
    const uint8_t* qs = src + 4;
    for (int j = 0; j < 16; ++j) {
      // Two statements: no fused multiply-add, whatever the compiler's contraction mode.
      const float lo = float(qs[j] & 0x0F) * d;
      const float hi = float(qs[j] >> 4) * d;
      dst[j] = lo + m;
      dst[j + 16] = hi + m;
    }
  }
}

template <typename T, typename Conv>
void plain(const uint8_t* src, float* dst, int64_t n, Conv conv) {
  for (int64_t k = 0; k < n; ++k) {
    T v;
    std::memcpy(&v, src + k * int64_t(sizeof(T)), sizeof(T));
    dst[k] = conv(v);
  }
}

}  // namespace

void dequantize_row(GGMLType t, const uint8_t* src, float* dst, int64_t n) {
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(t));
  KILN_CHECK(info != nullptr, ValueError, "[gguf.dequantize] unknown ggml type " << uint32_t(t));
  KILN_CHECK(n >= 0 && n % info->block_size == 0, ValueError,
             "[gguf.dequantize] " << n << " elements is not a whole number of " << info->name << " blocks");
  const int64_t nb = n / info->block_size;
  if (n == 0) return;  // an empty tensor may have no data pointer at all
  switch (t) {
    case GGMLType::Q8_0:
      return dequant_q8_0(src, dst, nb);
    case GGMLType::Q4_0:
      return dequant_q4_0(src, dst, nb);
    case GGMLType::Q4_1:
      return dequant_q4_1(src, dst, nb);
    case GGMLType::F32:
      std::memcpy(dst, src, size_t(n) * 4);
      return;
    case GGMLType::F16:
      return plain<uint16_t>(src, dst, n, [](uint16_t h) { return f16_bits_to_float(h); });
    case GGMLType::BF16:
      return plain<uint16_t>(src, dst, n, [](uint16_t h) { return bf16_bits_to_float(h); });
    case GGMLType::F64:
      return plain<double>(src, dst, n, [](double v) { return float(v); });
    case GGMLType::I8:
      return plain<int8_t>(src, dst, n, [](int8_t v) { return float(v); });
    case GGMLType::I16:
      return plain<int16_t>(src, dst, n, [](int16_t v) { return float(v); });
    case GGMLType::I32:
      return plain<int32_t>(src, dst, n, [](int32_t v) { return float(v); });
    case GGMLType::I64:
      return plain<int64_t>(src, dst, n, [](int64_t v) { return float(v); });
    default:
      break;
  }
  KILN_CHECK(false, NotImplementedError,
             "[gguf.dequantize] ggml type " << info->name
                                            << " is not supported (kiln reads F32, F16, BF16, "
                                               "F64, I8-I64, Q8_0, Q4_0 and Q4_1)");
}

}  // namespace kiln::io
