// ModelConfig from Hugging Face config.json, including the FP8 quantization
// configs as published (quant_method "fp8" with 128x128 blocks; compressed-
// tensors float8 per channel / per tensor / per block).
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "io/config_json.h"
#include "kiln/error.h"
#include "kiln/io/model_config.h"

namespace kiln::io {
namespace {

struct Fields {
  const json& j;
  const std::string& name;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int64_t get_int(const char* key, std::optional<int64_t> dflt = std::nullopt, int64_t min = 0) const {
    if (!has(key)) {
      KILN_CHECK(dflt.has_value(), ValueError, "[config] " << name << " has no '" << key << "'");
      return *dflt;
    }
    const json& v = j[key];
    KILN_CHECK(v.is_number_integer(), ValueError,
               "[config] '" << key << "' in " << name << " must be an integer, got " << v.dump());
    KILN_CHECK(!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
               ValueError, "[config] '" << key << "' in " << name << " is too large");
    const int64_t x = v.get<int64_t>();
    KILN_CHECK(x >= min && x <= (int64_t(1) << 40), ValueError,
               "[config] '" << key << "' in " << name << " = " << x << " is out of range");
    return x;
  }
  double get_double(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    const json& v = j[key];
    KILN_CHECK(v.is_number() && std::isfinite(v.get<double>()), ValueError,
               "[config] '" << key << "' in " << name << " must be a finite number, got " << v.dump());
    return v.get<double>();
  }
  bool get_bool(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    KILN_CHECK(j[key].is_boolean(), ValueError,
               "[config] '" << key << "' in " << name << " must be true or false");
    return j[key].get<bool>();
  }
  std::string get_string(const char* key, const std::string& dflt = "") const {
    if (!has(key)) return dflt;
    KILN_CHECK(j[key].is_string(), ValueError, "[config] '" << key << "' in " << name << " must be a string");
    return j[key].get<std::string>();
  }
};

std::vector<std::string> string_list(const json& v, const char* what, const std::string& name) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  KILN_CHECK(v.is_array(), ValueError, "[config] " << what << " in " << name << " must be a list of strings");
  for (const auto& s : v) {
    KILN_CHECK(s.is_string(), ValueError,
               "[config] " << what << " in " << name << " must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

QuantConfig parse_fp8(const json& q, const std::string& name) {
  Fields f{q, name};
  QuantConfig c;
  c.method = "fp8";
  c.fmt = f.get_string("fmt", "e4m3");
  KILN_CHECK(c.fmt == "e4m3" || c.fmt == "e5m2", ValueError,
             "[config] fp8 fmt '" << c.fmt << "' in " << name << " is not supported");
  c.activation_scheme = f.get_string("activation_scheme", "dynamic");
  c.dynamic_activations = c.activation_scheme == "dynamic";
  KILN_CHECK(f.has("weight_block_size"), ValueError,
             "[config] quant_method 'fp8' without weight_block_size in " << name << " is not supported");
  const json& b = q["weight_block_size"];
  KILN_CHECK(b.is_array() && b.size() == 2 && b[0].is_number_integer() && b[1].is_number_integer() &&
                 b[0].get<int64_t>() > 0 && b[1].get<int64_t>() > 0 && b[0].get<int64_t>() <= 65536 &&
                 b[1].get<int64_t>() <= 65536,
             ValueError,
             "[config] weight_block_size in " << name << " must be [n, k] positive, got " << b.dump());
  c.scheme = QuantScheme::Fp8Block;
  c.block_n = b[0].get<int64_t>();
  c.block_k = b[1].get<int64_t>();
  c.scale_name = "weight_scale_inv";
  if (q.contains("modules_to_not_convert"))
    c.ignore = string_list(q["modules_to_not_convert"], "modules_to_not_convert", name);
  if (q.contains("ignored_layers")) {
    auto more = string_list(q["ignored_layers"], "ignored_layers", name);
    c.ignore.insert(c.ignore.end(), more.begin(), more.end());
  }
  return c;
}

QuantConfig parse_compressed_tensors(const json& q, const std::string& name) {
  QuantConfig c;
  c.method = "compressed-tensors";
  c.scale_name = "weight_scale";
  if (q.contains("ignore")) c.ignore = string_list(q["ignore"], "ignore", name);
  const std::string format = Fields{q, name}.get_string("format", "float-quantized");
  KILN_CHECK(format == "float-quantized" || format == "naive-quantized", ValueError,
             "[config] compressed-tensors format '" << format << "' in " << name
                                                    << " is not supported (kiln reads float-quantized FP8)");
  KILN_CHECK(q.contains("config_groups") && q["config_groups"].is_object() && !q["config_groups"].empty(),
             ValueError, "[config] compressed-tensors config in " << name << " has no config_groups");
  bool first = true;
  for (const auto& item : q["config_groups"].items()) {
    const std::string gname = item.key();
    const json& g = item.value();
    KILN_CHECK(g.is_object() && g.contains("weights") && g["weights"].is_object(), ValueError,
               "[config] config group '" << gname << "' in " << name << " has no weights");
    Fields w{g["weights"], name};
    const std::string type = w.get_string("type", "int");
    const int64_t bits = w.get_int("num_bits", 8, 1);
    KILN_CHECK(type == "float" && bits == 8, ValueError,
               "[config] compressed-tensors weights of type " << type << " with " << bits << " bits in "
                                                              << name
                                                              << " are not supported (kiln reads float8)");
    const std::string strategy = w.get_string("strategy", "tensor");
    QuantConfig g_cfg = c;
    if (strategy == "channel") {
      g_cfg.scheme = QuantScheme::Fp8Channel;
    } else if (strategy == "tensor") {
      g_cfg.scheme = QuantScheme::Fp8Tensor;
    } else if (strategy == "block") {
      const json& bs = g["weights"].value("block_structure", json());
      KILN_CHECK(bs.is_array() && bs.size() == 2 && bs[0].is_number_integer() && bs[1].is_number_integer() &&
                     bs[0].get<int64_t>() > 0 && bs[1].get<int64_t>() > 0,
                 ValueError, "[config] block strategy without a [n, k] block_structure in " << name);
      g_cfg.scheme = QuantScheme::Fp8Block;
      g_cfg.block_n = bs[0].get<int64_t>();
      g_cfg.block_k = bs[1].get<int64_t>();
    } else {
      KILN_CHECK(false, ValueError,
                 "[config] compressed-tensors weight strategy '" << strategy << "' in " << name
                                                                 << " is not supported");
    }
    if (g.contains("input_activations") && g["input_activations"].is_object())
      g_cfg.dynamic_activations = Fields{g["input_activations"], name}.get_bool("dynamic", true);
    KILN_CHECK(
        first || (g_cfg.scheme == c.scheme && g_cfg.block_n == c.block_n), ValueError,
        "[config] compressed-tensors groups with different strategies in " << name << " are not supported");
    c = g_cfg;
    first = false;
  }
  return c;
}

QuantConfig parse_quant(const json& q, const std::string& name) {
  KILN_CHECK(q.is_object(), ValueError, "[config] quantization_config in " << name << " is not an object");
  const std::string method = Fields{q, name}.get_string("quant_method", "");
  if (method == "fp8") return parse_fp8(q, name);
  if (method == "compressed-tensors") return parse_compressed_tensors(q, name);
  KILN_CHECK(false, ValueError,
             "[config] quantization method '"
                 << method << "' in " << name
                 << " is not supported (kiln reads 'fp8' and 'compressed-tensors' float8)");
  return {};
}

RopeScaling parse_rope_scaling(const json& r, const std::string& name) {
  RopeScaling s;
  if (r.is_null()) return s;
  KILN_CHECK(r.is_object(), ValueError, "[config] rope_scaling in " << name << " is not an object");
  Fields f{r, name};
  s.type = f.get_string("rope_type", f.get_string("type", ""));
  if (s.type == "default") s.type.clear();
  s.factor = f.get_double("factor", 1.0);
  s.low_freq_factor = f.get_double("low_freq_factor", 1.0);
  s.high_freq_factor = f.get_double("high_freq_factor", 4.0);
  s.original_max_position_embeddings = f.get_int("original_max_position_embeddings", 0);
  s.beta_fast = f.get_double("beta_fast", 32.0);
  s.beta_slow = f.get_double("beta_slow", 1.0);
  KILN_CHECK(
      s.type.empty() || s.type == "llama3" || s.type == "linear" || s.type == "yarn" || s.type == "dynamic",
      ValueError, "[config] rope scaling type '" << s.type << "' in " << name << " is not supported");
  return s;
}

// More layers than any model has; keeps per-layer loops bounded on hostile input.
constexpr int64_t kMaxLayers = 1 << 16;

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> archs = {"llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "olmoe"};
  return archs;
}

const char* quant_scheme_name(QuantScheme s) {
  switch (s) {
    case QuantScheme::None:
      return "none";
    case QuantScheme::Fp8Block:
      return "fp8-block";
    case QuantScheme::Fp8Channel:
      return "fp8-channel";
    case QuantScheme::Fp8Tensor:
      return "fp8-tensor";
    case QuantScheme::Gguf:
      return "gguf";
  }
  return "?";
}

ModelConfig parse_hf_config(const std::string& text, const std::string& name) {
  const json j = parse_json_strict(text, "config", name);
  KILN_CHECK(j.is_object(), ValueError, "[config] " << name << " is not a JSON object");
  Fields f{j, name};
  ModelConfig c;
  c.architecture = f.get_string("model_type");
  KILN_CHECK(!c.architecture.empty(), ValueError, "[config] " << name << " has no model_type");
  bool known = false;
  for (const auto& a : supported_architectures()) known = known || a == c.architecture;
  KILN_CHECK(known, ValueError,
             "[config] architecture '" << c.architecture << "' in " << name
                                       << " is not supported (kiln runs llama, qwen2, qwen3, "
                                          "qwen3_moe, mixtral, olmoe)");
  const std::string& a = c.architecture;
  c.vocab_size = f.get_int("vocab_size", std::nullopt, 1);
  c.hidden_size = f.get_int("hidden_size", std::nullopt, 1);
  c.intermediate_size = f.get_int("intermediate_size", std::nullopt, 1);
  c.num_hidden_layers = f.get_int("num_hidden_layers", std::nullopt, 1);
  KILN_CHECK(c.num_hidden_layers <= kMaxLayers, ValueError,
             "[config] num_hidden_layers = " << c.num_hidden_layers << " in " << name << " is out of range");
  c.num_attention_heads = f.get_int("num_attention_heads", std::nullopt, 1);
  c.num_key_value_heads = f.get_int("num_key_value_heads", c.num_attention_heads, 1);
  KILN_CHECK(c.num_attention_heads % c.num_key_value_heads == 0, ValueError,
             "[config] " << name << ": " << c.num_attention_heads << " attention heads are not a multiple of "
                         << c.num_key_value_heads << " key-value heads");
  c.head_dim = f.get_int("head_dim", c.hidden_size / c.num_attention_heads, 1);
  KILN_CHECK(f.has("head_dim") || c.hidden_size % c.num_attention_heads == 0, ValueError,
             "[config] " << name << ": hidden_size " << c.hidden_size << " is not a multiple of "
                         << c.num_attention_heads << " heads");
  c.max_position_embeddings = f.get_int("max_position_embeddings", 4096, 1);
  c.rms_norm_eps = f.get_double("rms_norm_eps", 1e-6);
  // transformers >= 5 folds rope_theta and rope_scaling into rope_parameters.
  if (f.has("rope_parameters") && j["rope_parameters"].is_object()) {
    c.rope_theta = Fields{j["rope_parameters"], name}.get_double("rope_theta", 10000.0);
    c.rope_scaling = parse_rope_scaling(j["rope_parameters"], name);
  } else {
    c.rope_theta = f.get_double("rope_theta", a == "mixtral" ? 1e6 : 10000.0);
    if (j.contains("rope_scaling")) c.rope_scaling = parse_rope_scaling(j["rope_scaling"], name);
  }
  c.tie_word_embeddings = f.get_bool("tie_word_embeddings", false);
  c.attention_bias = a == "qwen2" ? true : f.get_bool("attention_bias", false);
  c.qk_norm = a == "qwen3" || a == "qwen3_moe" || a == "olmoe";
  c.hidden_act = f.get_string("hidden_act", "silu");
  KILN_CHECK(c.hidden_act == "silu", ValueError,
             "[config] hidden_act '" << c.hidden_act << "' in " << name << " is not supported (silu only)");
  c.torch_dtype = f.get_string("torch_dtype", f.get_string("dtype", ""));
  if (f.has("bos_token_id")) c.bos_token_id = f.get_int("bos_token_id");
  if (f.has("eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_array()) {
      for (const auto& x : e) {
        KILN_CHECK(x.is_number_integer() && x.get<int64_t>() >= 0, ValueError,
                   "[config] eos_token_id in " << name << " must hold non-negative integers");
        c.eos_token_ids.push_back(x.get<int64_t>());
      }
    } else {
      c.eos_token_ids.push_back(f.get_int("eos_token_id"));
    }
  }
  const bool use_sw = a == "mixtral" || f.get_bool("use_sliding_window", false);
  if (use_sw && f.has("sliding_window")) c.sliding_window = f.get_int("sliding_window", std::nullopt, 1);

  if (a == "qwen3_moe" || a == "olmoe") {
    // transformers >= 5 writes num_local_experts for these too; published checkpoints say num_experts.
    c.num_experts = f.get_int(f.has("num_experts") ? "num_experts" : "num_local_experts", std::nullopt, 1);
    c.num_experts_per_tok = f.get_int("num_experts_per_tok", std::nullopt, 1);
    c.moe_intermediate_size =
        a == "qwen3_moe" ? f.get_int("moe_intermediate_size", std::nullopt, 1) : c.intermediate_size;
    c.norm_topk_prob = f.get_bool("norm_topk_prob", a == "qwen3_moe");
    c.router_aux_loss_coef = f.get_double("router_aux_loss_coef", 0);
    if (a == "qwen3_moe") {
      c.decoder_sparse_step = f.get_int("decoder_sparse_step", 1, 1);
      if (f.has("mlp_only_layers")) {
        KILN_CHECK(j["mlp_only_layers"].is_array(), ValueError,
                   "[config] mlp_only_layers in " << name << " is not a list");
        for (const auto& x : j["mlp_only_layers"]) {
          KILN_CHECK(x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < c.num_hidden_layers,
                     ValueError, "[config] mlp_only_layers in " << name << " holds " << x.dump());
          c.mlp_only_layers.push_back(x.get<int64_t>());
        }
      }
    }
  } else if (a == "mixtral") {
    c.num_experts = f.get_int("num_local_experts", std::nullopt, 1);
    c.num_experts_per_tok = f.get_int("num_experts_per_tok", std::nullopt, 1);
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;  // softmax over the chosen experts' logits
    c.router_aux_loss_coef = f.get_double("router_aux_loss_coef", 0);
  }
  KILN_CHECK(
      c.num_experts_per_tok <= c.num_experts, ValueError,
      "[config] " << name << " routes " << c.num_experts_per_tok << " of " << c.num_experts << " experts");
  if (f.has("quantization_config")) c.quant = parse_quant(j["quantization_config"], name);
  return c;
}

ModelConfig load_hf_config(const std::string& path) {
  const std::string file = is_dir(path) ? path + "/config.json" : path;
  return parse_hf_config(read_text_file(file, "config", size_t(1) << 24), file);
}

bool ModelConfig::layer_is_moe(int64_t i) const {
  if (num_experts == 0) return false;
  for (int64_t l : mlp_only_layers)
    if (l == i) return false;
  return (i + 1) % decoder_sparse_step == 0;
}

int64_t ModelConfig::parameter_count() const {
  // In double: a hostile config must not overflow int64 arithmetic (the count is a summary figure).
  const double h = double(hidden_size), q = double(num_attention_heads) * double(head_dim),
               kv = double(num_key_value_heads) * double(head_dim);
  double attn = h * q + 2 * h * kv + q * h;
  if (attention_bias) attn += q + 2 * kv;
  if (qk_norm) attn += architecture == "olmoe" ? q + kv : 2 * double(head_dim);
  double total =
      double(vocab_size) * h * (tie_word_embeddings ? 1 : 2) + h;  // embeddings (+ head) + final norm
  const int64_t layers = std::min<int64_t>(num_hidden_layers, kMaxLayers);
  for (int64_t l = 0; l < layers; ++l) {
    const double mlp = layer_is_moe(l) ? double(num_experts) * (3 * h * double(moe_intermediate_size) + h)
                                       : 3 * h * double(intermediate_size);
    total += attn + mlp + 2 * h;
  }
  return total >= 9.2e18 ? std::numeric_limits<int64_t>::max() : int64_t(total);
}

std::string ModelConfig::summary() const {
  std::ostringstream os;
  os << architecture << ": " << num_hidden_layers << " layers, hidden " << hidden_size << ", heads "
     << num_attention_heads << "/" << num_key_value_heads << " x " << head_dim << ", ffn "
     << intermediate_size << ", vocab " << vocab_size;
  if (is_moe())
    os << ", experts " << num_experts_per_tok << "/" << num_experts << " x " << moe_intermediate_size;
  os << ", rope theta " << rope_theta;
  if (!rope_scaling.type.empty()) os << " (" << rope_scaling.type << " x" << rope_scaling.factor << ")";
  if (tie_word_embeddings) os << ", tied embeddings";
  return os.str();
}

}  // namespace kiln::io
