// GGUF (v2, v3): llama.cpp's model file. Little-endian:
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv,
//   n_kv x {string key, u32 value type, value},
//   n_tensors x {string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset},
//   padding to general.alignment (default 32), then the tensor data.
// ne[0] is the contiguous dimension, so a tensor with ne = [K, N] has the
// PyTorch shape [N, K]. Everything is bounds-checked before use; a file that
// points outside itself, overlaps tensors, repeats a name or holds malformed
// UTF-8 is refused with ValueError "[gguf] ...".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/block_quant.h"
#include "kiln/io/mapped_file.h"
#include "kiln/tensor.h"

namespace kiln::io {

// Metadata value types (gguf_type).
enum class GGUFType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};
const char* gguf_type_name(GGUFType t);

// A metadata value. Scalars fill one of i/u/f/b/s; arrays fill one of the
// vectors by element kind (integers of every width -> ints, floats -> floats,
// strings -> strings, bools -> ints as 0/1). Nested arrays are refused.
struct GGUFValue {
  GGUFType type = GGUFType::UInt8;
  GGUFType elem_type = GGUFType::UInt8;  // arrays only
  int64_t i = 0;                         // signed integer scalars (and unsigned ones that fit)
  uint64_t u = 0;                        // unsigned integer scalars
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;  // uint64 elements above 2^63-1 wrap
  std::vector<double> floats;
  std::vector<std::string> strings;

  bool is_array() const { return type == GGUFType::Array; }
  bool is_int() const;  // an integer scalar
  bool is_float() const { return type == GGUFType::Float32 || type == GGUFType::Float64; }
  size_t array_size() const { return ints.size() + floats.size() + strings.size(); }
  std::string to_string(size_t max_items = 8) const;  // a short human-readable rendering
};

// ggml tensor types (the ones with a known block layout; others are refused by number).
enum class GGMLType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};
struct GGMLTypeInfo {
  const char* name;
  uint32_t block_size;  // elements per block
  uint32_t type_size;   // bytes per block
  bool dequantizable;   // kiln can turn it into floats
};
// nullptr for a type number kiln does not know.
const GGMLTypeInfo* ggml_type_info(uint32_t type);
// The names of the types kiln dequantizes, in type-number order ("F32, F16, Q4_0, ...").
const std::string& ggml_dequantizable_type_names();
// The kiln dtype a ggml type is stored as element-for-element (F32, F16, BF16,
// F64, I8..I64), or nullopt for block-quantized types.
std::optional<DType> ggml_plain_dtype(GGMLType t);
// The block type kiln's kernels run a ggml type as (kiln/block_quant.h), or
// nullopt for plain types and for block types kiln only dequantizes.
std::optional<BlockType> ggml_block_type(GGMLType t);

struct GGUFTensorInfo {
  std::string name;
  GGMLType type = GGMLType::F32;
  std::vector<int64_t> ne;  // ggml order: ne[0] contiguous
  Shape shape;              // PyTorch order: reversed ne
  int64_t numel = 0;
  uint64_t offset = 0;  // absolute byte offset in the file
  uint64_t nbytes = 0;
};

struct GGUFHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_start = 0;
  std::vector<std::pair<std::string, GGUFValue>> metadata;  // file order
  std::vector<GGUFTensorInfo> tensors;                      // file order
};

// Parses and validates a GGUF image of `size` bytes (no tensor is made).
GGUFHeader parse_gguf(const uint8_t* data, size_t size, const std::string& name = "<memory>");

// Dequantizes `n` elements (a whole number of blocks) of ggml type `t` from
// `src` (n / block_size * type_size bytes, which the caller guarantees) into
// f32, bit for bit as gguf-py's gguf.quants.dequantize does (ggml's reference
// layouts; Q8_K, which gguf-py does not read, as ggml's dequantize_row_q8_K).
// NaN/inf block scales are not refused: they give NaN/inf elements as the
// reference's float arithmetic does. Throws NotImplementedError naming the
// type and the supported ones for any other type.
void dequantize_row(GGMLType t, const uint8_t* src, float* dst, int64_t n);

class GGUFFile {
 public:
  static GGUFFile open(const std::string& path);
  static GGUFFile from_file(std::shared_ptr<MappedFile> file);

  uint32_t version() const { return header_.version; }
  uint64_t alignment() const { return header_.alignment; }
  const GGUFHeader& header() const { return header_; }
  const std::shared_ptr<MappedFile>& file() const { return file_; }

  // ---- metadata ----
  const std::vector<std::pair<std::string, GGUFValue>>& metadata() const { return header_.metadata; }
  const GGUFValue* find(std::string_view key) const;  // nullptr when absent
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Typed getters: nullopt when the key is absent; TypeError when it has another type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;   // any integer type that fits int64
  std::optional<double> get_float(std::string_view key) const;  // float32/64 or an integer
  std::optional<bool> get_bool(std::string_view key) const;
  const std::vector<std::string>* get_string_array(std::string_view key) const;
  const std::vector<int64_t>* get_int_array(std::string_view key) const;
  const std::vector<double>* get_float_array(std::string_view key) const;
  // general.architecture ("" when absent).
  std::string architecture() const;

  // ---- tensors ----
  const std::vector<GGUFTensorInfo>& tensors() const { return header_.tensors; }
  const GGUFTensorInfo* find_tensor(std::string_view name) const;
  const GGUFTensorInfo& tensor_info(std::string_view name) const;  // IndexError when absent
  // Zero-copy view of a plain-typed tensor (F32, F16, BF16, F64, I8..I64) in its own
  // dtype; TypeError for block-quantized types (use dequantize or raw).
  Tensor tensor(std::string_view name) const;
  // The tensor as `dtype` (float32 by default): plain types converted, block types
  // dequantized. Shape in PyTorch order. Rows are in file order (see load_hf).
  Tensor dequantize(std::string_view name, DType dtype = DType::Float32) const;
  // The stored bytes as uint8 [ne[3], ne[2], ne[1], bytes per row] (leading 1s dropped), zero-copy.
  Tensor raw(std::string_view name) const;
  // As Hugging Face lays the weight out: dequantize(name, dtype) and, for
  // architectures whose converter permuted Q/K rows for interleaved rope
  // ("llama"), blk.N.attn_q / attn_k rows put back in rotate-half order.
  Tensor load_hf(std::string_view name, DType dtype = DType::Float32) const;
  // True when load_hf un-permutes `name` (and the head count it uses).
  std::optional<int64_t> qk_permute_heads(std::string_view name) const;

 private:
  std::shared_ptr<MappedFile> file_;
  GGUFHeader header_;
  std::map<std::string, size_t, std::less<>> kv_index_, tensor_index_;
};

// Undoes llama.cpp's convert_hf_to_gguf permute on a [rows, ...] weight whose
// rows are n_head groups of interleaved (even, odd) rope pairs: row
// h*d + 2*i + j becomes h*d + j*d/2 + i (rotate-half order, as HF stores it).
Tensor unpermute_qk_rows(const Tensor& w, int64_t n_head);
// The converter's permute itself (the inverse): rotate-half rows to interleaved pairs.
Tensor permute_qk_rows(const Tensor& w, int64_t n_head);

}  // namespace kiln::io
