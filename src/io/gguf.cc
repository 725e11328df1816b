// GGUFFile: metadata access, zero-copy plain tensors, dequantization, and the
// Hugging Face row order for llama's Q/K projections.
#include "kiln/io/gguf.h"

#include <cstdio>
#include <limits>

#include "kiln/error.h"
#include "kiln/thread_pool.h"

namespace kiln::io {

GGUFFile GGUFFile::open(const std::string& path) { return from_file(MappedFile::open(path, "gguf")); }

GGUFFile GGUFFile::from_file(std::shared_ptr<MappedFile> file) {
  GGUFFile g;
  g.header_ = parse_gguf(file->data(), file->size(), file->path());
  g.file_ = std::move(file);
  for (size_t i = 0; i < g.header_.metadata.size(); ++i) g.kv_index_.emplace(g.header_.metadata[i].first, i);
  for (size_t i = 0; i < g.header_.tensors.size(); ++i) g.tensor_index_.emplace(g.header_.tensors[i].name, i);
  return g;
}

// ---- metadata ------------------------------------------------------------------

const GGUFValue* GGUFFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &header_.metadata[it->second].second;
}

namespace {
[[noreturn]] void wrong_type(std::string_view key, const GGUFValue& v, const char* wanted) {
  std::string got = gguf_type_name(v.type);
  if (v.is_array()) got = std::string("array of ") + gguf_type_name(v.elem_type);
  throw TypeError("[gguf] metadata '" + std::string(key) + "' is " + got + ", not " + wanted);
}
bool int_elem(GGUFType t) {
  GGUFValue v;
  v.type = t;
  return v.is_int() || t == GGUFType::Bool;
}
}  // namespace

std::optional<std::string> GGUFFile::get_string(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GGUFType::String) wrong_type(key, *v, "a string");
  return v->s;
}

std::optional<int64_t> GGUFFile::get_int(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_int()) wrong_type(key, *v, "an integer");
  if (v->type == GGUFType::UInt64 && v->u > uint64_t(std::numeric_limits<int64_t>::max()))
    throw ValueError("[gguf] metadata '" + std::string(key) + "' = " + std::to_string(v->u) +
                     " does not fit int64");
  return v->i;
}

std::optional<double> GGUFFile::get_float(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_int()) return double(v->type == GGUFType::UInt64 ? double(v->u) : double(v->i));
  wrong_type(key, *v, "a number");
}

std::optional<bool> GGUFFile::get_bool(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GGUFType::Bool) wrong_type(key, *v, "a bool");
  return v->b;
}

const std::vector<std::string>* GGUFFile::get_string_array(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return nullptr;
  if (!v->is_array() || v->elem_type != GGUFType::String) wrong_type(key, *v, "an array of strings");
  return &v->strings;
}

const std::vector<int64_t>* GGUFFile::get_int_array(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return nullptr;
  if (!v->is_array() || !int_elem(v->elem_type)) wrong_type(key, *v, "an array of integers");
  return &v->ints;
}

const std::vector<double>* GGUFFile::get_float_array(std::string_view key) const {
  const GGUFValue* v = find(key);
  if (!v) return nullptr;
  if (!v->is_array() || (v->elem_type != GGUFType::Float32 && v->elem_type != GGUFType::Float64))
    wrong_type(key, *v, "an array of floats");
  return &v->floats;
}

std::string GGUFFile::architecture() const { return get_string("general.architecture").value_or(""); }

// ---- tensors -------------------------------------------------------------------

const GGUFTensorInfo* GGUFFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &header_.tensors[it->second];
}

const GGUFTensorInfo& GGUFFile::tensor_info(std::string_view name) const {
  const GGUFTensorInfo* t = find_tensor(name);
  KILN_CHECK(t != nullptr, IndexError, "[gguf] no tensor named '" << name << "' in " << file_->path());
  return *t;
}

Tensor GGUFFile::tensor(std::string_view name) const {
  const GGUFTensorInfo& ti = tensor_info(name);
  auto dt = ggml_plain_dtype(ti.type);
  KILN_CHECK(dt.has_value(), TypeError,
             "[gguf] tensor '" << name << "' is " << ggml_type_info(uint32_t(ti.type))->name
                               << " (block-quantized): use dequantize() or raw()");
  return file_->tensor_view(size_t(ti.offset), *dt, ti.shape);
}

Tensor GGUFFile::raw(std::string_view name) const {
  const GGUFTensorInfo& ti = tensor_info(name);
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(ti.type));
  Shape shape(ti.shape.begin(), ti.shape.end() - 1);
  shape.push_back(ti.ne[0] / info->block_size * info->type_size);
  return file_->tensor_view(size_t(ti.offset), DType::UInt8, shape);
}

Tensor GGUFFile::dequantize(std::string_view name, DType dtype) const {
  const GGUFTensorInfo& ti = tensor_info(name);
  if (auto dt = ggml_plain_dtype(ti.type)) return tensor(name).to(dtype).contiguous();
  const GGMLTypeInfo* info = ggml_type_info(uint32_t(ti.type));
  KILN_CHECK(info->dequantizable, NotImplementedError,
             "[gguf] tensor '" << name << "' is " << info->name << ", which kiln cannot dequantize (it reads "
                               << ggml_dequantizable_type_names() << ")");
  Tensor out = empty(ti.shape, DType::Float32);
  const int64_t row = ti.ne[0];
  const int64_t rows = row ? ti.numel / row : 0;
  const uint64_t row_bytes = uint64_t(row / info->block_size) * info->type_size;
  const uint8_t* src = file_->data() + ti.offset;
  float* dst = out.data<float>();
  parallel_for(0, rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(row, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      dequantize_row(ti.type, src + uint64_t(r) * row_bytes, dst + r * row, row);
  });
  return dtype == DType::Float32 ? out : out.to(dtype);
}

std::optional<int64_t> GGUFFile::qk_permute_heads(std::string_view name) const {
  // llama.cpp's converter interleaves rope pairs only for architectures run with
  // "normal" rope; qwen2/qwen3/olmoe use NeoX rope and keep the HF row order.
  const std::string arch = architecture();
  if (arch != "llama") return std::nullopt;
  const std::string_view n = name;
  if (n.substr(0, 4) != "blk.") return std::nullopt;
  const bool q = n.ends_with(".attn_q.weight") || n.ends_with(".attn_q.bias");
  const bool k = n.ends_with(".attn_k.weight") || n.ends_with(".attn_k.bias");
  if (!q && !k) return std::nullopt;
  const auto heads = get_int(arch + ".attention.head_count");
  KILN_CHECK(heads.has_value() && *heads > 0, ValueError,
             "[gguf] " << arch << ".attention.head_count is missing; cannot restore the Q/K row order");
  if (q) return *heads;
  return get_int(arch + ".attention.head_count_kv").value_or(*heads);
}

Tensor GGUFFile::load_hf(std::string_view name, DType dtype) const {
  Tensor w = dequantize(name, dtype);
  if (auto heads = qk_permute_heads(name)) return unpermute_qk_rows(w, *heads);
  return w;
}

namespace {

// Moves each head's rows between the two rope orders (see unpermute_qk_rows).
Tensor swap_rope_halves(const Tensor& w, int64_t n_head, bool to_interleaved, const char* op) {
  KILN_CHECK(w.dim() >= 1 && n_head > 0, ValueError, "[" << op << "] needs a tensor and n_head > 0");
  const int64_t rows = w.size(0);
  KILN_CHECK(n_head <= rows, ValueError,
             "[" << op << "] " << rows << " rows cannot hold " << n_head << " heads");
  KILN_CHECK(rows % (2 * n_head) == 0, ValueError,
             "[" << op << "] " << rows << " rows do not split into " << n_head << " heads of rope pairs");
  const int64_t inner = w.numel() / std::max<int64_t>(rows, 1), half = rows / n_head / 2;
  // Interleaved rows are [n_head, d/2, 2]; rotate-half rows [n_head, 2, d/2].
  Tensor v = to_interleaved ? w.contiguous().reshape({n_head, 2, half, inner})
                            : w.contiguous().reshape({n_head, half, 2, inner});
  return v.transpose(1, 2).contiguous().reshape(w.sizes());
}

}  // namespace

Tensor unpermute_qk_rows(const Tensor& w, int64_t n_head) {
  return swap_rope_halves(w, n_head, false, "gguf.unpermute_qk");
}

Tensor permute_qk_rows(const Tensor& w, int64_t n_head) {
  return swap_rope_halves(w, n_head, true, "gguf.permute_qk");
}

}  // namespace kiln::io
