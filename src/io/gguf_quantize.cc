// quantize_gguf: a GGUF in, the same model re-encoded per a recipe out.
// Recipes (kiln's, after llama.cpp's names and mixes; "more-bits layers" are
// the first and last eighth of the layers and every third between):
//   F32, F16, BF16, Q8_0: every matrix that type.
//   Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q3_K_S, Q6_K: every matrix that
//           type (Q3_K_S: Q3_K) but the output head, Q6_K (Q6_K: itself).
//   Q2_K:   Q2_K; attn_output and ffn_down Q3_K; attn_v Q3_K (Q4_K when 4 or
//           more query heads share a KV head).
//   Q3_K_M: Q3_K; attn_v Q5_K in the first 2 layers, Q4_K after; ffn_down
//           Q5_K in the first sixteenth, Q4_K after; attn_output and attn_qkv Q4_K.
//   Q3_K_L: Q3_K; attn_v, ffn_down and attn_output Q5_K; attn_qkv Q4_K.
//   Q4_K_S: Q4_K; attn_v in the first 4 layers and ffn_down in the first
//           eighth Q5_K.
//   Q4_K_M: Q4_K; attn_v / ffn_down in the more-bits layers Q6_K; attn_qkv Q5_K.
//   Q5_K_S: Q5_K.
//   Q5_K_M: Q5_K; attn_v / ffn_down in the more-bits layers, and attn_qkv, Q6_K.
//   IQ4_NL and IQ4_XS also give ffn_down in the first eighth Q5_K, and attn_v
//   Q5_K when 4 or more query heads share a KV head.
// The head is output.weight, or token_embd.weight when the model ties them;
// every recipe but F32/F16/BF16/Q8_0 makes it Q6_K. These are llama.cpp's
// choices (llama_tensor_get_type) for dense models without an importance
// matrix, so a file kiln writes holds the types of the file llama.cpp's
// quantizer writes. (llama.cpp's bumps for 70B models and 8-expert MoE models
// are not made.)
#include "kiln/io/gguf_quantize.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "kiln/error.h"
#include "kiln/io/gguf_writer.h"
#include "kiln/thread_pool.h"

namespace kiln::io {
namespace {

// llama.cpp's llama_ftype numbers, stored as general.file_type.
enum FileType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
  kBF16 = 32,
};

struct Recipe {
  const char* name;
  FileType ftype;
  GGMLType base;  // every matrix the rules below leave alone
  GGMLType head;
};

const Recipe kRecipes[] = {
    {"F32", kF32, GGMLType::F32, GGMLType::F32},
    {"F16", kF16, GGMLType::F16, GGMLType::F16},
    {"BF16", kBF16, GGMLType::BF16, GGMLType::BF16},
    {"Q2_K", kQ2_K, GGMLType::Q2_K, GGMLType::Q6_K},
    {"Q3_K_S", kQ3_K_S, GGMLType::Q3_K, GGMLType::Q6_K},
    {"Q3_K_M", kQ3_K_M, GGMLType::Q3_K, GGMLType::Q6_K},
    {"Q3_K_L", kQ3_K_L, GGMLType::Q3_K, GGMLType::Q6_K},
    {"Q4_0", kQ4_0, GGMLType::Q4_0, GGMLType::Q6_K},
    {"Q4_1", kQ4_1, GGMLType::Q4_1, GGMLType::Q6_K},
    {"IQ4_NL", kIQ4_NL, GGMLType::IQ4_NL, GGMLType::Q6_K},
    {"IQ4_XS", kIQ4_XS, GGMLType::IQ4_XS, GGMLType::Q6_K},
    {"Q5_0", kQ5_0, GGMLType::Q5_0, GGMLType::Q6_K},
    {"Q5_1", kQ5_1, GGMLType::Q5_1, GGMLType::Q6_K},
    {"Q8_0", kQ8_0, GGMLType::Q8_0, GGMLType::Q8_0},
    {"Q4_K_S", kQ4_K_S, GGMLType::Q4_K, GGMLType::Q6_K},
    {"Q4_K_M", kQ4_K_M, GGMLType::Q4_K, GGMLType::Q6_K},
    {"Q5_K_S", kQ5_K_S, GGMLType::Q5_K, GGMLType::Q6_K},
    {"Q5_K_M", kQ5_K_M, GGMLType::Q5_K, GGMLType::Q6_K},
    {"Q6_K", kQ6_K, GGMLType::Q6_K, GGMLType::Q6_K},
};

const Recipe& find_recipe(std::string name) {
  for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (name == "Q3_K") name = "Q3_K_M";  // llama.cpp's aliases
  if (name == "Q4_K") name = "Q4_K_M";
  if (name == "Q5_K") name = "Q5_K_M";
  for (const Recipe& r : kRecipes)
    if (name == r.name) return r;
  KILN_CHECK(false, ValueError,
             "[quantize] unknown type '" << name << "' (kiln writes " << gguf_quantize_recipe_names() << ")");
}

// The N of "blk.N.", or -1.
int64_t layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  int64_t n = 0;
  size_t k = 4;
  for (; k < name.size() && name[k] >= '0' && name[k] <= '9'; ++k) n = n * 10 + (name[k] - '0');
  return k > 4 && k < name.size() && name[k] == '.' ? n : -1;
}

// llama.cpp's use_more_bits: the first and last eighth, and every third layer between.
bool more_bits_layer(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// A matrix the recipe re-encodes: a weight of two or more dims, not the MoE router
// (kept in float, as llama.cpp keeps it).
bool is_matrix(const GGUFSourceTensor& t) {
  return t.ne.size() >= 2 && t.name.ends_with(".weight") && t.name.find("ffn_gate_inp") == std::string::npos;
}

// What the recipe rules look at: which matrix of which layer, in how deep a
// model, and how many query heads share each KV head.
struct MatrixRole {
  bool head = false;
  int64_t layer = -1, n_layers = 0, gqa = 1;
  bool attn_v = false, ffn_down = false, attn_output = false, attn_qkv = false;
};

// The recipe's type for one matrix (llama_tensor_get_type's rules for dense models).
GGMLType recipe_type(const Recipe& r, const MatrixRole& m) {
  using T = GGMLType;
  if (m.head) return r.head;
  if (m.layer < 0) return r.base;
  const int64_t i = m.layer, n = m.n_layers;
  const FileType f = r.ftype;
  if (m.attn_v) {
    if (f == kQ2_K) return m.gqa >= 4 ? T::Q4_K : T::Q3_K;
    if (f == kQ3_K_M) return i < 2 ? T::Q5_K : T::Q4_K;
    if (f == kQ3_K_L) return T::Q5_K;
    if ((f == kIQ4_NL || f == kIQ4_XS) && m.gqa >= 4) return T::Q5_K;
    if ((f == kQ4_K_M || f == kQ5_K_M) && more_bits_layer(i, n)) return T::Q6_K;
    if (f == kQ4_K_S && i < 4) return T::Q5_K;
  } else if (m.ffn_down) {
    if (f == kQ2_K) return T::Q3_K;
    if (f == kQ3_K_M) return i < n / 16 ? T::Q5_K : T::Q4_K;
    if (f == kQ3_K_L) return T::Q5_K;
    if ((f == kQ4_K_M || f == kQ5_K_M) && more_bits_layer(i, n)) return T::Q6_K;
    if ((f == kIQ4_NL || f == kIQ4_XS || f == kQ4_K_S) && i < n / 8) return T::Q5_K;
  } else if (m.attn_output) {
    if (f == kQ2_K) return T::Q3_K;
    if (f == kQ3_K_M) return T::Q4_K;
    if (f == kQ3_K_L) return T::Q5_K;
  } else if (m.attn_qkv) {
    if (f == kQ3_K_M || f == kQ3_K_L) return T::Q4_K;
    if (f == kQ4_K_M) return T::Q5_K;
    if (f == kQ5_K_M) return T::Q6_K;
  }
  return r.base;
}

// The type a matrix gets: the recipe's choice, then the fallback its row length
// needs (llama.cpp's, checked against llama-cpp-python 0.3.36's quantizer).
GGMLType target_type(const Recipe& r, const GGUFSourceTensor& t, const MatrixRole& role) {
  GGMLType want = recipe_type(r, role);
  const int64_t row = t.ne[0];
  if (row % 256 != 0) {
    if (want == GGMLType::Q2_K || want == GGMLType::Q3_K) want = GGMLType::Q4_0;
    if (want == GGMLType::IQ4_XS) want = GGMLType::IQ4_NL;
    if (want == GGMLType::Q4_K) want = GGMLType::Q5_0;
    if (want == GGMLType::Q5_K) want = GGMLType::Q5_1;
    if (want == GGMLType::Q6_K) want = GGMLType::Q8_0;
  }
  if (row % int64_t(ggml_type_info(uint32_t(want))->block_size) != 0) want = GGMLType::F16;
  return want;
}

bool is_block_type(GGMLType t) { return !ggml_plain_dtype(t).has_value(); }

int64_t layer_count(const GGUFSource& src) {
  int64_t n = 0;
  for (const GGUFSourceTensor& t : src.tensors) n = std::max(n, layer_of(t.name) + 1);
  return n;
}

// Query heads per KV head ({arch}.attention.head_count / head_count_kv; a
// per-layer array counts by its first layer, as llama.cpp's n_gqa() does).
int64_t query_heads_per_kv_head(const GGUFSource& src) {
  std::string arch;
  for (const auto& kv : src.metadata)
    if (kv.first == "general.architecture") arch = kv.second.s;
  auto count = [&](const std::string& key) -> int64_t {
    for (const auto& kv : src.metadata)
      if (kv.first == arch + ".attention." + key) {
        if (kv.second.is_int()) return kv.second.i;
        if (kv.second.is_array() && !kv.second.ints.empty()) return kv.second.ints[0];
      }
    return 0;
  };
  const int64_t heads = count("head_count"), kv_heads = count("head_count_kv");
  return heads > 0 && kv_heads > 0 ? heads / kv_heads : 1;
}

int64_t numel(const std::vector<int64_t>& ne) {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

GGUFValue uint32_value(uint32_t v) {
  GGUFValue g;
  g.type = GGUFType::UInt32;
  g.u = v;
  g.i = int64_t(v);
  return g;
}

// Re-encodes tensor `t` (its bytes at base) as `to` into dst, rows in parallel.
void encode_tensor(const GGUFSourceTensor& t, const uint8_t* base, GGMLType to, uint8_t* dst) {
  const int64_t ne0 = t.ne[0], rows = ne0 == 0 ? 0 : numel(t.ne) / ne0;
  const uint64_t in_row = ggml_tensor_bytes(t.type, {ne0}), out_row = ggml_tensor_bytes(to, {ne0});
  const bool checked = is_block_type(to) || to == GGMLType::F16;  // f16 scales or values can overflow
  enum Fault { kNone, kNonFinite, kOverflow };
  std::atomic<int64_t> bad_row{-1};
  std::atomic<int> fault{kNone};
  parallel_for(0, rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(ne0, 1)), [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(ne0));
    auto fail = [&](int64_t r, Fault f) {
      int64_t none = -1;
      if (bad_row.compare_exchange_strong(none, r)) fault = f;
    };
    auto finite = [&] {
      return std::all_of(row.begin(), row.end(), [](float v) { return std::isfinite(v); });
    };
    for (int64_t r = b; r < e && bad_row.load(std::memory_order_relaxed) < 0; ++r) {
      dequantize_row(t.type, base + uint64_t(r) * in_row, row.data(), ne0);
      if (!finite()) return fail(r, kNonFinite);
      uint8_t* out = dst + uint64_t(r) * out_row;
      quantize_row(to, row.data(), out, ne0);
      if (!checked) continue;
      // Values past f16's range give an infinite block scale: decode the row back to see.
      dequantize_row(to, out, row.data(), ne0);
      if (!finite()) return fail(r, kOverflow);
    }
  });
  KILN_CHECK(fault.load() != kNonFinite, ValueError,
             "[quantize] " << t.name << " holds NaN or infinite values (row " << bad_row.load()
                           << "); a quantized block cannot hold them");
  KILN_CHECK(fault.load() != kOverflow, ValueError,
             "[quantize] " << t.name << " row " << bad_row.load() << " holds values too large for "
                           << ggml_type_info(uint32_t(to))->name
                           << " (its f16 numbers would be infinite); write F32 or BF16 instead");
}

}  // namespace

const std::string& gguf_quantize_recipe_names() {
  static const std::string names = [] {
    std::string s;
    for (const Recipe& r : kRecipes) s += (s.empty() ? "" : ", ") + std::string(r.name);
    return s + " (Q3_K, Q4_K and Q5_K mean their _M)";
  }();
  return names;
}

GGUFSource gguf_source_from_file(const std::string& path) {
  const GGUFFile f = GGUFFile::open(path);
  GGUFSource src;
  src.metadata = f.metadata();
  src.alignment = f.alignment();
  src.owner = f.file();
  for (const GGUFTensorInfo& t : f.tensors())
    src.tensors.push_back({t.name, t.type, t.ne, f.file()->data() + t.offset});
  return src;
}

QuantizeSummary quantize_gguf(const std::string& in, const std::string& out, const QuantizeOptions& options) {
  find_recipe(options.recipe);  // a bad type is refused before anything is read
  std::error_code ec;
  KILN_CHECK(!std::filesystem::equivalent(in, out, ec), ValueError,
             "[quantize] the output " << out << " is the input; write a new file");
  const GGUFSource src =
      std::filesystem::is_directory(in, ec) ? gguf_source_from_hf(in) : gguf_source_from_file(in);
  return quantize_gguf(src, out, options);
}

QuantizeSummary quantize_gguf(const GGUFSource& src, const std::string& out, const QuantizeOptions& options) {
  const Recipe& recipe = find_recipe(options.recipe);
  const int64_t n_layers = layer_count(src), gqa = query_heads_per_kv_head(src);
  bool has_output = false;
  for (const GGUFSourceTensor& t : src.tensors) has_output |= t.name == "output.weight";

  QuantizeSummary sum;
  std::vector<GGUFWriteTensor> plan;
  for (const GGUFSourceTensor& t : src.tensors) {
    GGMLType to = t.type;
    if (is_matrix(t)) {
      MatrixRole role;
      role.head = t.name == "output.weight" || (!has_output && t.name == "token_embd.weight");
      role.layer = layer_of(t.name);
      role.n_layers = n_layers;
      role.gqa = gqa;
      role.attn_v = t.name.find(".attn_v.") != std::string::npos;
      role.ffn_down = t.name.find(".ffn_down") != std::string::npos;
      role.attn_output = t.name.find(".attn_output.") != std::string::npos;
      role.attn_qkv = t.name.find(".attn_qkv.") != std::string::npos;
      to = target_type(recipe, t, role);
      const GGMLTypeInfo* from = ggml_type_info(uint32_t(t.type));
      KILN_CHECK(to == t.type || from->dequantizable, NotImplementedError,
                 "[quantize] " << t.name << " is " << from->name << ", which kiln does not read (it reads "
                               << ggml_dequantizable_type_names() << ")");
      KILN_CHECK(to == t.type || !is_block_type(t.type) || !is_block_type(to) || options.allow_requantize,
                 ValueError,
                 "[quantize] " << t.name << " is already " << from->name << "; re-quantizing it to "
                               << ggml_type_info(uint32_t(to))->name
                               << " stacks two roundings. Quantize from an F32/F16/BF16 GGUF, or pass "
                                  "--allow-requantize");
    }
    plan.push_back({t.name, to, t.ne});
    sum.in_bytes += ggml_tensor_bytes(t.type, t.ne);
    sum.weights += numel(t.ne);
  }

  std::vector<std::pair<std::string, GGUFValue>> metadata;
  for (const auto& kv : src.metadata)
    if (kv.first != "general.file_type" && kv.first != "general.quantization_version") metadata.push_back(kv);
  metadata.emplace_back("general.quantization_version", uint32_value(2));
  metadata.emplace_back("general.file_type", uint32_value(recipe.ftype));

  write_gguf(out, metadata, plan, src.alignment, [&](size_t k, uint8_t* dst) {
    const GGUFSourceTensor& t = src.tensors[k];
    const GGMLType to = plan[k].type;
    const uint64_t bytes = ggml_tensor_bytes(to, t.ne);
    Tensor made;  // the tensor made on demand, released once written
    const uint8_t* base = t.data;
    if (base == nullptr) {
      made = t.load();
      KILN_CHECK(made.is_contiguous() && made.nbytes() == ggml_tensor_bytes(t.type, t.ne), ValueError,
                 "[quantize] " << t.name << " came out as " << made.nbytes() << " bytes, not "
                               << ggml_tensor_bytes(t.type, t.ne));
      base = static_cast<const uint8_t*>(made.data_ptr());
    }
    if (to == t.type) {
      if (bytes) std::memcpy(dst, base, bytes);
      ++sum.copied;
    } else {
      encode_tensor(t, base, to, dst);
      ++sum.quantized;
    }
    sum.out_bytes += bytes;
    if (options.progress) {
      Shape shape(t.ne.rbegin(), t.ne.rend());
      options.progress({k, src.tensors.size(), t.name, t.type, to, shape, bytes});
    }
  });
  std::error_code ec;
  sum.file_bytes = uint64_t(std::filesystem::file_size(out, ec));
  return sum;
}

}  // namespace kiln::io
