#include "llm/lora_adapter.h"

#include <cmath>
#include <filesystem>

#include "io/config_json.h"
#include "kiln/binary.h"
#include "kiln/error.h"
#include "kiln/io/safetensors.h"
#include "kiln/matmul.h"

namespace kiln::llm::detail {

namespace fs = std::filesystem;

namespace {

constexpr const char* kConfig = "adapter_config.json";
constexpr const char* kWeights = "adapter_model.safetensors";

// PEFT writes "base_model.model.<module>.lora_A.weight" (older files, and
// in-memory state dicts, put ".default" before ".weight").
bool split_lora_key(std::string key, std::string& module, char& which) {
  const std::string prefix = "base_model.model.";
  if (key.rfind(prefix, 0) == 0) key = key.substr(prefix.size());
  for (const char* suffix : {".lora_A.weight", ".lora_B.weight", ".lora_A.default.weight", ".lora_B.default.weight"}) {
    const std::string s = suffix;
    if (key.size() > s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0) {
      module = key.substr(0, key.size() - s.size());
      which = s[6];  // 'A' or 'B'
      return true;
    }
  }
  return false;
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool nonempty(const io::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return false;
  const auto& v = j[key];
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_object() || v.is_array() || v.is_string()) return !v.empty();
  return true;
}

class LoraSource final : public TensorSource {
 public:
  LoraSource(std::unique_ptr<TensorSource> base, LoraAdapter a) : base_(std::move(base)), a_(std::move(a)) {
    for (const auto& [name, f] : a_.factors) {
      KILN_CHECK(base_->contains(name), ValueError,
                 "[llm] adapter " << a_.dir << " adapts " << name << ", which the base model "
                                  << base_->describe() << " does not have");
      const Shape s = base_->shape_of(name);
      KILN_CHECK(s.size() == 2 && s[0] == f.second.size(0) && s[1] == f.first.size(1), ValueError,
                 "[llm] adapter " << a_.dir << ": " << name << " is " << shape_text(s) << " in the base model, but "
                                  << "lora_B @ lora_A is [" << f.second.size(0) << ", " << f.first.size(1) << "]");
    }
  }
  bool contains(const std::string& n) const override { return base_->contains(n); }
  Tensor get(const std::string& n) const override {
    auto it = a_.factors.find(n);
    if (it == a_.factors.end()) return base_->get(n);
    return merged(n, base_->get(n), it->second.second);
  }
  Tensor get_slice(const std::string& n, int64_t index) const override {
    KILN_CHECK(!a_.factors.count(n), NotImplementedError,
               "[llm] adapter " << a_.dir << ": LoRA on stacked expert weights (" << n << ") is not supported");
    return base_->get_slice(n, index);
  }
  Tensor get_rows(const std::string& n, int64_t r0, int64_t rows) const override {
    auto it = a_.factors.find(n);
    if (it == a_.factors.end()) return base_->get_rows(n, r0, rows);
    return merged(n, base_->get_rows(n, r0, rows), it->second.second.narrow(0, r0, rows));
  }
  Shape shape_of(const std::string& n) const override { return base_->shape_of(n); }
  std::optional<BlockType> block_type(const std::string& n) const override {
    if (a_.factors.count(n)) return std::nullopt;  // merged: floats
    return base_->block_type(n);
  }
  Tensor blocks(const std::string& n) const override { return base_->blocks(n); }
  bool dequantizes() const override { return base_->dequantizes(); }
  int64_t stored_bytes(const std::string& n) const override { return base_->stored_bytes(n); }
  int64_t total_bytes() const override { return base_->total_bytes(); }
  void release(const std::string& n) const override { base_->release(n); }
  std::string describe() const override { return base_->describe() + " + adapter " + a_.dir; }

 private:
  // w: rows of the base weight [n, K]; b: the same rows of lora_B [n, r].
  // Returns float32 w + scaling * b @ A [n, K].
  Tensor merged(const std::string& name, const Tensor& w, const Tensor& b) const {
    KILN_CHECK(!is_fp8(w.dtype()), NotImplementedError,
               "[llm] adapter " << a_.dir << ": merging into the FP8 checkpoint weight " << name
                                << " is not supported; convert the base model to bf16 first (kiln convert --dtype bf16)");
    const Tensor& A = a_.factors.at(name).first;
    return add(w.to(DType::Float32), matmul(b, A), Scalar(a_.scaling));
  }

  std::unique_ptr<TensorSource> base_;
  LoraAdapter a_;
};

}  // namespace

bool is_lora_adapter_dir(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && fs::exists(fs::path(dir) / kConfig, ec);
}

LoraAdapter load_lora_adapter(const std::string& dir) {
  LoraAdapter a;
  a.dir = dir;
  const std::string cfg_path = (fs::path(dir) / kConfig).string();
  const io::json j = io::parse_json_strict(io::read_text_file(cfg_path, "llm", size_t(1) << 20), "llm", cfg_path);
  KILN_CHECK(j.is_object(), ValueError, "[llm] " << cfg_path << " is not a JSON object");
  const std::string type = j.contains("peft_type") && j["peft_type"].is_string() ? j["peft_type"].get<std::string>()
                                                                                  : std::string("LORA");
  KILN_CHECK(type == "LORA", NotImplementedError,
             "[llm] " << cfg_path << " holds a " << type << " adapter; kiln runs LoRA adapters");
  for (const char* k : {"use_dora", "rank_pattern", "alpha_pattern", "fan_in_fan_out", "modules_to_save"})
    KILN_CHECK(!nonempty(j, k), NotImplementedError,
               "[llm] " << cfg_path << ": '" << k << "' is not supported by kiln's adapter loading");
  KILN_CHECK(j.contains("r") && io::json_is_int(j["r"]) && j["r"].get<int64_t>() > 0, ValueError,
             "[llm] " << cfg_path << ": field 'r' must be a positive integer");
  const int64_t r = j["r"].get<int64_t>();
  double alpha = double(r);
  if (j.contains("lora_alpha")) {
    KILN_CHECK(j["lora_alpha"].is_number(), ValueError, "[llm] " << cfg_path << ": field 'lora_alpha' must be a number");
    alpha = j["lora_alpha"].get<double>();
  }
  const bool rslora = j.contains("use_rslora") && j["use_rslora"].is_boolean() && j["use_rslora"].get<bool>();
  a.scaling = rslora ? alpha / std::sqrt(double(r)) : alpha / double(r);
  if (j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string())
    a.base_model = j["base_model_name_or_path"].get<std::string>();

  const std::string w_path = (fs::path(dir) / kWeights).string();
  std::error_code ec;
  KILN_CHECK(fs::exists(w_path, ec), ValueError, "[llm] adapter " << dir << " holds no " << kWeights);
  const io::SafetensorsCheckpoint ck = io::SafetensorsCheckpoint::open(w_path);
  std::map<std::string, Tensor> as, bs;
  for (const auto& key : ck.names()) {
    std::string module;
    char which = 0;
    KILN_CHECK(split_lora_key(key, module, which), ValueError,
               "[llm] " << w_path << ": tensor " << key << " is not a lora_A / lora_B weight");
    const Tensor t = ck.tensor(key);
    KILN_CHECK(t.dim() == 2 && is_floating(t.dtype()), ValueError,
               "[llm] " << w_path << ": " << key << " must be a 2-d float tensor, got " << t.shape_str() << " "
                        << name(t.dtype()));
    KILN_CHECK(which == 'A' ? t.size(0) == r : t.size(1) == r, ValueError,
               "[llm] " << w_path << ": " << key << " is " << t.shape_str() << ", not of rank r = " << r);
    (which == 'A' ? as : bs)[module + ".weight"] = t.to(DType::Float32).contiguous();
  }
  KILN_CHECK(!as.empty(), ValueError, "[llm] " << w_path << " holds no LoRA tensors");
  for (auto& [name, A] : as) {
    auto b = bs.find(name);
    KILN_CHECK(b != bs.end(), ValueError, "[llm] " << w_path << ": " << name << " has lora_A but no lora_B");
    a.factors[name] = {A, b->second};
    bs.erase(b);
  }
  KILN_CHECK(bs.empty(), ValueError, "[llm] " << w_path << ": " << bs.begin()->first << " has lora_B but no lora_A");
  return a;
}

std::string lora_base_model_path(const LoraAdapter& a) {
  KILN_CHECK(!a.base_model.empty(), ValueError,
             "[llm] adapter " << a.dir << " names no base model (base_model_name_or_path); pass the base model "
                              << "and the adapter separately (kiln generate MODEL --adapter " << a.dir << ")");
  fs::path p(a.base_model);
  if (p.is_relative()) p = fs::path(a.dir) / p;
  std::error_code ec;
  KILN_CHECK(fs::exists(p, ec), ValueError,
             "[llm] adapter " << a.dir << " names the base model '" << a.base_model
                              << "', which is not a local path; pass the base model and the adapter separately "
                              << "(kiln generate MODEL --adapter " << a.dir << ")");
  return p.string();
}

std::unique_ptr<TensorSource> lora_source(std::unique_ptr<TensorSource> base, LoraAdapter adapter) {
  return std::make_unique<LoraSource>(std::move(base), std::move(adapter));
}

}  // namespace kiln::llm::detail
