// ggml's 32-element block formats and the dispatch over every type kiln reads.
// Each is dequantized as gguf-py's gguf.quants does it (see quant_blocks.h).
// clang-format off
//   Q8_0:   {f16 d; int8 q[32]}                 x = d * q
//   Q4_0:   {f16 d; u8 qs[16]}                  x[j] = d * ((qs[j] & 15) - 8), x[j+16] = d * ((qs[j] >> 4) - 8)
//   Q4_1:   {f16 d; f16 m; u8 qs[16]}           x[j] = d * (qs[j] & 15) + m,   x[j+16] = d * (qs[j] >> 4) + m
//   Q5_0:   {f16 d; u32 qh; u8 qs[16]}          q = nibble | (bit j of qh) << 4; x = d * (q - 16)
//   Q5_1:   {f16 d; f16 m; u32 qh; u8 qs[16]}   x = d * q + m
//   IQ4_NL: {f16 d; u8 qs[16]}                  x = d * levels[nibble] (Q4_0's nibble order)
// clang-format on
#include "quant_blocks.h"

#include "kiln/error.h"
#include "kiln/io/gguf.h"

namespace kiln::io {
namespace detail {

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
      dst[j] = float(qs[j] & 0x0F) * d + m;
      dst[j + 16] = float(qs[j] >> 4) * d + m;
    }
  }
}

namespace {
// The 32 five-bit codes of a Q5 block: low nibbles from qs (Q4 order), high bits from qh.
inline void q5_codes(const uint8_t* qh_p, const uint8_t* qs, int q[32]) {
  uint32_t qh;
  std::memcpy(&qh, qh_p, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0x0F) | int((qh >> j) & 1) << 4;
    q[j + 16] = (qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
  }
}
}  // namespace

void dequant_q5_0(const uint8_t* src, float* dst, int64_t nblocks) {
  int q[32];
  for (int64_t b = 0; b < nblocks; ++b, src += 22, dst += 32) {
    const float d = f16_at(src);
    q5_codes(src + 2, src + 6, q);
    for (int j = 0; j < 32; ++j) dst[j] = d * float(q[j] - 16);
  }
}

void dequant_q5_1(const uint8_t* src, float* dst, int64_t nblocks) {
  int q[32];
  for (int64_t b = 0; b < nblocks; ++b, src += 24, dst += 32) {
    const float d = f16_at(src), m = f16_at(src + 2);
    q5_codes(src + 4, src + 8, q);
    for (int j = 0; j < 32; ++j) dst[j] = d * float(q[j]) + m;
  }
}

void dequant_iq4_nl(const uint8_t* src, float* dst, int64_t nblocks) {
  for (int64_t b = 0; b < nblocks; ++b, src += 18, dst += 32) {
    const float d = f16_at(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * float(kIQ4Levels[qs[j] & 0x0F]);
      dst[j + 16] = d * float(kIQ4Levels[qs[j] >> 4]);
    }
  }
}

}  // namespace detail

namespace {

template <typename T, typename Conv>
void plain(const uint8_t* src, float* dst, int64_t n, Conv conv) {
  for (int64_t k = 0; k < n; ++k) {
    T v;
    std::memcpy(&v, src + k * int64_t(sizeof(T)), sizeof(T));
    dst[k] = conv(v);
  }
}

using BlockFn = void (*)(const uint8_t*, float*, int64_t);

BlockFn block_decoder(GGMLType t) {
  using namespace detail;
  switch (t) {
    case GGMLType::Q4_0:
      return dequant_q4_0;
    case GGMLType::Q4_1:
      return dequant_q4_1;
    case GGMLType::Q5_0:
      return dequant_q5_0;
    case GGMLType::Q5_1:
      return dequant_q5_1;
    case GGMLType::Q8_0:
      return dequant_q8_0;
    case GGMLType::Q2_K:
      return dequant_q2_k;
    case GGMLType::Q3_K:
      return dequant_q3_k;
    case GGMLType::Q4_K:
      return dequant_q4_k;
    case GGMLType::Q5_K:
      return dequant_q5_k;
    case GGMLType::Q6_K:
      return dequant_q6_k;
    case GGMLType::Q8_K:
      return dequant_q8_k;
    case GGMLType::IQ4_NL:
      return dequant_iq4_nl;
    case GGMLType::IQ4_XS:
      return dequant_iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace

void dequantize_row(GGMLType t, const uint8_t* src, float* dst, int64_t n) {
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(t));
  KILN_CHECK(info != nullptr, ValueError, "[gguf.dequantize] unknown ggml type " << uint32_t(t));
  KILN_CHECK(info->dequantizable, NotImplementedError,
             "[gguf.dequantize] ggml type " << info->name << " is not supported (kiln reads "
                                            << ggml_dequantizable_type_names() << ")");
  KILN_CHECK(n >= 0 && n % info->block_size == 0, ValueError,
             "[gguf.dequantize] " << n << " elements is not a whole number of " << info->name << " blocks");
  if (n == 0) return;  // an empty tensor may have no data pointer at all
  if (BlockFn f = block_decoder(t)) return f(src, dst, n / info->block_size);
  switch (t) {
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
  // Only reached if the type table and the decoders above disagree.
  KILN_CHECK(false, NotImplementedError, "[gguf.dequantize] ggml type " << info->name << " has no decoder");
}

}  // namespace kiln::io
