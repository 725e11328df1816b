// Where a model's tensors come from: a GGUF file (under their Hugging Face names,
// dequantized on request or as blocks), a safetensors checkpoint (zero-copy views), or memory.
#include <map>

#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/gguf_names.h"
#include "kiln/io/model_config.h"
#include "kiln/io/safetensors.h"
#include "llm/weights.h"

namespace kiln::llm::detail {

Tensor TensorSource::blocks(const std::string& name) const {
  KILN_CHECK(false, NotImplementedError, "[llm] " << describe() << " holds no blocks for " << name);
  return Tensor();
}

namespace {

// ---- GGUF: tensors under their Hugging Face names, dequantized on request ----
class GGUFSource final : public TensorSource {
 public:
  explicit GGUFSource(const std::string& path) : f_(io::GGUFFile::open(path)), path_(path) {
    const std::string arch = io::config_from_gguf(f_).architecture;
    for (const auto& t : f_.tensors()) {
      std::string hf = io::gguf_to_hf_name(t.name, arch);
      // Llama 3 GGUFs carry their rope scaling as per-frequency divisors.
      if (t.name == "rope_freqs.weight") hf = t.name;
      if (!hf.empty()) names_[hf] = t.name;
      total_ += int64_t(t.nbytes);
    }
  }
  const io::GGUFFile& file() const { return f_; }
  bool contains(const std::string& n) const override { return names_.count(n) != 0; }
  Tensor get(const std::string& n) const override { return f_.load_hf(gguf_name(n), DType::Float32); }
  Tensor get_slice(const std::string& n, int64_t index) const override {
    const std::string& g = gguf_name(n);
    const auto& info = f_.tensor_info(g);
    if (info.shape.size() < 3 || info.shape[0] == 1 || f_.qk_permute_heads(g)) return get(n).select(0, index);
    KILN_CHECK(
        index >= 0 && index < info.shape[0], IndexError,
        "[llm] slice " << index << " of " << n << " " << shape_to_string(info.shape) << " is out of range");
    if (io::ggml_plain_dtype(info.type)) return f_.tensor(g).select(0, index).to(DType::Float32);
    // Block-quantized: rows of a slice are contiguous in the file.
    const Tensor raw = f_.raw(g);  // [E, N, bytes per row]
    const Tensor part = raw.select(0, index);
    Shape shape(info.shape.begin() + 1, info.shape.end());
    Tensor out = empty(shape, DType::Float32);
    io::dequantize_row(info.type, part.data<uint8_t>(), out.data<float>(), out.numel());
    return out;
  }
  Tensor get_rows(const std::string& n, int64_t r0, int64_t count) const override {
    const std::string& g = gguf_name(n);
    const auto& info = f_.tensor_info(g);
    KILN_CHECK(info.shape.size() == 2 && r0 >= 0 && count >= 0 && r0 + count <= info.shape[0], IndexError,
               "[llm] rows [" << r0 << ", " << r0 + count << ") of " << n << " "
                              << shape_to_string(info.shape) << " are out of range");
    if (f_.qk_permute_heads(g)) return get(n).narrow(0, r0, count);  // rows move between heads
    if (io::ggml_plain_dtype(info.type)) return f_.tensor(g).narrow(0, r0, count).to(DType::Float32);
    // Block-quantized: each row is whole blocks, stored contiguously.
    const Tensor rows = f_.raw(g).narrow(0, r0, count);  // [count, bytes per row]
    Tensor out = empty({count, info.shape[1]}, DType::Float32);
    io::dequantize_row(info.type, rows.data<uint8_t>(), out.data<float>(), out.numel());
    return out;
  }
  Shape shape_of(const std::string& n) const override { return f_.tensor_info(gguf_name(n)).shape; }
  bool dequantizes() const override { return true; }
  std::optional<BlockType> block_type(const std::string& n) const override {
    const auto& info = f_.tensor_info(gguf_name(n));
    if (info.shape.size() != 2 && info.shape.size() != 3) return std::nullopt;  // matrices, expert stacks
    return io::ggml_block_type(info.type);
  }
  Tensor blocks(const std::string& n) const override {
    const std::string& g = gguf_name(n);
    KILN_CHECK(block_type(n).has_value(), ValueError,
               "[llm] " << n << " is not a block-quantized matrix or stack of them");
    const Tensor raw = f_.raw(g);  // [N, bytes per row], or [E, N, bytes per row]
    if (auto heads = f_.qk_permute_heads(g)) return io::unpermute_qk_rows(raw, *heads);  // whole rows move
    return raw;
  }
  int64_t stored_bytes(const std::string& n) const override {
    auto it = names_.find(n);
    return it == names_.end() ? 0 : int64_t(f_.tensor_info(it->second).nbytes);
  }
  int64_t total_bytes() const override { return total_; }
  void release(const std::string& n) const override {
    const auto& info = f_.tensor_info(gguf_name(n));
    f_.file()->dont_need(size_t(info.offset), size_t(info.nbytes));
  }
  std::string describe() const override { return path_; }

 private:
  const std::string& gguf_name(const std::string& n) const {
    auto it = names_.find(n);
    KILN_CHECK(it != names_.end(), ValueError, "[llm] tensor " << n << " is missing from " << path_);
    return it->second;
  }
  io::GGUFFile f_;
  std::string path_;
  std::map<std::string, std::string> names_;  // HF name -> GGUF name
  int64_t total_ = 0;
};

// ---- safetensors (single file or sharded index): zero-copy views ----
class SafetensorsSource final : public TensorSource {
 public:
  explicit SafetensorsSource(const std::string& path)
      : ck_(io::SafetensorsCheckpoint::open(path)), path_(path) {
    for (const auto& n : ck_.names()) {
      const auto& e = ck_.entry(n);
      total_ += int64_t(e.end - e.begin);
    }
  }
  bool contains(const std::string& n) const override { return ck_.contains(n); }
  Tensor get(const std::string& n) const override {
    KILN_CHECK(ck_.contains(n), ValueError, "[llm] tensor " << n << " is missing from " << path_);
    return ck_.tensor(n);
  }
  int64_t stored_bytes(const std::string& n) const override {
    if (!ck_.contains(n)) return 0;
    const auto& e = ck_.entry(n);
    return int64_t(e.end - e.begin);
  }
  int64_t total_bytes() const override { return total_; }
  void release(const std::string& n) const override {
    for (const auto& s : ck_.shards())
      if (const auto* e = s.find(n)) {
        s.file()->dont_need(size_t(e->begin), size_t(e->end - e->begin));
        return;
      }
  }
  std::string describe() const override { return path_; }

 private:
  io::SafetensorsCheckpoint ck_;
  std::string path_;
  int64_t total_ = 0;
};

class MemorySource final : public TensorSource {
 public:
  explicit MemorySource(std::vector<std::pair<std::string, Tensor>> t) {
    for (auto& [n, x] : t) {
      total_ += int64_t(x.nbytes());
      map_[n] = std::move(x);
    }
  }
  bool contains(const std::string& n) const override { return map_.count(n) != 0; }
  Tensor get(const std::string& n) const override {
    auto it = map_.find(n);
    KILN_CHECK(it != map_.end(), ValueError, "[llm] tensor " << n << " is missing from the given tensors");
    return it->second;
  }
  int64_t stored_bytes(const std::string& n) const override {
    auto it = map_.find(n);
    return it == map_.end() ? 0 : int64_t(it->second.nbytes());
  }
  int64_t total_bytes() const override { return total_; }
  std::string describe() const override { return "<memory>"; }

 private:
  std::map<std::string, Tensor> map_;
  int64_t total_ = 0;
};

}  // namespace

std::unique_ptr<TensorSource> gguf_source(const std::string& path) {
  return std::make_unique<GGUFSource>(path);
}
std::unique_ptr<TensorSource> safetensors_source(const std::string& path) {
  return std::make_unique<SafetensorsSource>(path);
}
std::unique_ptr<TensorSource> memory_source(std::vector<std::pair<std::string, Tensor>> tensors) {
  return std::make_unique<MemorySource>(std::move(tensors));
}

}  // namespace kiln::llm::detail
