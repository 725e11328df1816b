// Writing ggml's block types: the per-row encoders, and `kiln quantize`'s
// whole-file requantizer (a GGUF in, a GGUF that llama.cpp reads out).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/io/gguf.h"

namespace kiln::io {

// Encodes `n` floats (a whole number of blocks) as ggml type `t` into `dst`
// (n / block_size * type_size bytes, which the caller provides).
//   Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: bit for bit as gguf-py's gguf.quants.quantize.
//   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K: each sub-block's scale (and min) fitted by
//     weighted least squares over a sweep of candidate grids, then the
//     super-block's 4-bit (Q2_K), 6-bit (Q3_K/Q4_K/Q5_K) or 8-bit (Q6_K) scale
//     codes chosen and the codes re-rounded against the scales as stored.
//   IQ4_NL, IQ4_XS: the same fit over ggml's 16 non-linear levels.
//   F32, F16, BF16: rounded to nearest even.
// The input must be finite (quantize_gguf checks; a NaN would poison a block).
void quantize_row(GGMLType t, const float* src, uint8_t* dst, int64_t n);
// True for the types quantize_row writes.
bool ggml_quantizable(GGMLType t);
// "F32, F16, BF16, Q4_0, ..." for error messages and --help.
const std::string& ggml_quantizable_type_names();

// A model as a GGUF file holds it: metadata, and each tensor's bytes in its ggml type.
struct GGUFSourceTensor {
  std::string name;
  GGMLType type = GGMLType::F32;
  std::vector<int64_t> ne;        // ggml order: ne[0] contiguous
  const uint8_t* data = nullptr;  // the tensor's bytes, held by the source; or (when null)
  std::function<Tensor()> load;   // a contiguous tensor of those bytes, made when the writer
                                  // reaches it, so a converted checkpoint never sits in memory whole
};
struct GGUFSource {
  std::vector<std::pair<std::string, GGUFValue>> metadata;
  std::vector<GGUFSourceTensor> tensors;
  uint64_t alignment = 32;
  std::shared_ptr<const void> owner;  // the mapped file(s) the tensors read from
};
// A GGUF file as it stands.
GGUFSource gguf_source_from_file(const std::string& path);
// A Hugging Face checkpoint directory (config.json, safetensors, tokenizer.json
// with tokenizer_config.json) as llama.cpp's converter writes it: llama, qwen2,
// qwen3, and the MoE qwen3_moe, mixtral (as llama) and olmoe, each layer's
// experts stacked [E, N, K]; {arch}.* keys from the config; llama's Q/K rows in
// interleaved rope order; Llama 3 rope scaling as a rope_freqs tensor; 1-d
// tensors as F32, matrices in their bf16/f16/f32; the byte-level BPE
// tokenizer as tokenizer.ggml.*, with the pre-tokenizer llama.cpp names chosen
// by tokenizing a probe text both ways (refused when none matches; a directory
// without tokenizer.json gives a file without a tokenizer, which kiln runs on
// token ids and llama.cpp refuses). Other architectures, rope scaling other
// than llama3/linear/yarn and other tokenizer models are refused by name.
GGUFSource gguf_source_from_hf(const std::string& dir);

// What a recipe ("Q4_K_M") turned one tensor into.
struct QuantizeStep {
  size_t index = 0, count = 0;  // tensor index in the file, tensors in all
  std::string name;
  GGMLType from = GGMLType::F32, to = GGMLType::F32;
  Shape shape;
  uint64_t bytes = 0;  // bytes written for it
};

struct QuantizeOptions {
  // A recipe: F32, F16, BF16, Q8_0 (every matrix that type), Q2_K, Q3_K_S,
  // Q3_K_M, Q3_K_L, Q4_0, Q4_1, IQ4_NL, IQ4_XS, Q5_0, Q5_1, Q4_K_S, Q4_K_M,
  // Q5_K_S, Q5_K_M, Q6_K (each matrix the type llama.cpp's quantizer gives
  // it; Q3_K, Q4_K and Q5_K mean their _M).
  std::string recipe = "Q4_K_M";
  // A source tensor stored in a block type other than the target is refused
  // unless this is set: requantizing stacks two roundings.
  bool allow_requantize = false;
  std::function<void(const QuantizeStep&)> progress;  // after each tensor is written
};

struct QuantizeSummary {
  uint64_t in_bytes = 0, out_bytes = 0;  // tensor data of the source and of the result
  uint64_t file_bytes = 0;               // the written file
  int64_t weights = 0;                   // elements of the tensors in the result
  int64_t quantized = 0, copied = 0;     // tensors re-encoded, tensors copied byte for byte
};

// Reads `in` (a GGUF file, or a Hugging Face checkpoint directory as
// gguf_source_from_hf reads it), writes `out` (through out.tmp, renamed once whole):
// every metadata key kept (general.file_type and general.quantization_version
// set for the recipe), 1-d tensors and the MoE router kept as stored, every
// matrix re-encoded per the recipe. K types and IQ4_XS need rows that are whole
// 256-element super-blocks; other rows fall back as llama.cpp does (Q2_K, Q3_K
// -> Q4_0; IQ4_XS -> IQ4_NL; Q4_K -> Q5_0; Q5_K -> Q5_1; Q6_K -> Q8_0), and rows that
// are not whole 32-element blocks to F16.
QuantizeSummary quantize_gguf(const std::string& in, const std::string& out, const QuantizeOptions& options);
QuantizeSummary quantize_gguf(const GGUFSource& in, const std::string& out, const QuantizeOptions& options);
// The recipe names quantize_gguf takes, for --help and errors.
const std::string& gguf_quantize_recipe_names();

}  // namespace kiln::io
