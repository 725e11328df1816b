// gguf_source_from_hf: a Hugging Face checkpoint directory as llama.cpp's
// converter (convert_hf_to_gguf.py) lays it out, for quantize_gguf to encode.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/error.h"
#include "kiln/io/gguf_names.h"
#include "kiln/io/gguf_quantize.h"
#include "kiln/io/model_config.h"
#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/tokenizer.h"

namespace kiln::io {
namespace {

using json = nlohmann::json;
using KV = std::vector<std::pair<std::string, GGUFValue>>;

void put_string(KV& m, const std::string& key, std::string v) {
  GGUFValue g;
  g.type = GGUFType::String;
  g.s = std::move(v);
  m.emplace_back(key, std::move(g));
}

void put_u32(KV& m, const std::string& key, int64_t v) {
  KILN_CHECK(v >= 0 && v <= int64_t(UINT32_MAX), ValueError,
             "[quantize] " << key << " = " << v << " is out of range");
  GGUFValue g;
  g.type = GGUFType::UInt32;
  g.u = uint64_t(v);
  g.i = v;
  m.emplace_back(key, std::move(g));
}

void put_f32(KV& m, const std::string& key, double v) {
  GGUFValue g;
  g.type = GGUFType::Float32;
  g.f = double(float(v));
  m.emplace_back(key, std::move(g));
}

void put_bool(KV& m, const std::string& key, bool v) {
  GGUFValue g;
  g.type = GGUFType::Bool;
  g.b = v;
  g.i = v;
  m.emplace_back(key, std::move(g));
}

void put_array(KV& m, const std::string& key, std::vector<std::string> strings) {
  GGUFValue g;
  g.type = GGUFType::Array;
  g.elem_type = GGUFType::String;
  g.strings = std::move(strings);
  m.emplace_back(key, std::move(g));
}

void put_array(KV& m, const std::string& key, std::vector<int64_t> ints) {
  GGUFValue g;
  g.type = GGUFType::Array;
  g.elem_type = GGUFType::Int32;
  g.ints = std::move(ints);
  m.emplace_back(key, std::move(g));
}

// The GGUF architecture name of an HF model_type (config_from_gguf's inverse).
std::string gguf_arch(const ModelConfig& c) {
  const std::string& a = c.architecture;
  if (a == "llama" || a == "qwen2" || a == "qwen3" || a == "olmoe") return a;
  if (a == "mixtral") return "llama";  // llama.cpp runs Mixtral as llama with experts
  if (a == "qwen3_moe") {
    // GGUF has no key for dense layers inside a qwen3moe model.
    KILN_CHECK(
        c.decoder_sparse_step == 1 && c.mlp_only_layers.empty(), NotImplementedError,
        "[quantize] this qwen3_moe checkpoint has dense layers (decoder_sparse_step / mlp_only_layers), "
        "which GGUF's qwen3moe cannot describe");
    return "qwen3moe";
  }
  KILN_CHECK(
      false, NotImplementedError,
      "[quantize] kiln quantize converts llama, qwen2, qwen3, qwen3_moe, mixtral and olmoe checkpoints, not "
          << a);
  return a;
}

void put_hparams(KV& m, const ModelConfig& c, const std::string& a) {
  put_u32(m, a + ".context_length", c.max_position_embeddings);
  put_u32(m, a + ".embedding_length", c.hidden_size);
  put_u32(m, a + ".block_count", c.num_hidden_layers);
  put_u32(m, a + ".feed_forward_length", c.intermediate_size);
  put_u32(m, a + ".attention.head_count", c.num_attention_heads);
  put_u32(m, a + ".attention.head_count_kv", c.num_key_value_heads);
  put_u32(m, a + ".attention.key_length", c.head_dim);
  put_u32(m, a + ".attention.value_length", c.head_dim);
  put_u32(m, a + ".rope.dimension_count", c.head_dim);
  put_f32(m, a + ".rope.freq_base", c.rope_theta);
  put_f32(m, a + ".attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  put_u32(m, a + ".vocab_size", c.vocab_size);
  if (c.is_moe()) {
    put_u32(m, a + ".expert_count", c.num_experts);
    put_u32(m, a + ".expert_used_count", c.num_experts_per_tok);
    put_u32(m, a + ".expert_feed_forward_length", c.moe_intermediate_size);
    put_bool(m, a + ".expert_weights_norm", c.norm_topk_prob);
  }
  const std::string& scaling = c.rope_scaling.type;
  if (scaling.empty() || scaling == "none" || scaling == "default" || scaling == "llama3") return;
  KILN_CHECK(
      scaling == "linear" || scaling == "yarn", NotImplementedError,
      "[quantize] rope scaling '" << scaling << "' is not converted (kiln writes llama3, linear and yarn)");
  put_string(m, a + ".rope.scaling.type", scaling);
  put_f32(m, a + ".rope.scaling.factor", c.rope_scaling.factor);
  if (c.rope_scaling.original_max_position_embeddings > 0)
    put_u32(m, a + ".rope.scaling.original_context_length", c.rope_scaling.original_max_position_embeddings);
}

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  KILN_CHECK(f.good(), ValueError, "[quantize] cannot read " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  KILN_CHECK(!j.is_discarded() && j.is_object(), ValueError,
             "[quantize] " << path << " is not a JSON object");
  return j;
}

// llama.cpp's token types.
enum : int64_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

// The llama.cpp pre-tokenizer name a tokenizer.json pre_tokenizer reads as, or "".
std::string described_pre_tokenizer(const json& p) {
  if (!p.is_object()) return "";
  const std::string type = p.value("type", "");
  if (type == "ByteLevel") return p.value("use_regex", true) ? "gpt-2" : "";
  if (type != "Sequence") return "";
  for (const json& step : p.value("pretokenizers", json::array())) {
    const std::string t = step.value("type", "");
    if (t == "Digits" && step.value("individual_digits", false)) return "smollm";
    if (t == "Split" && step.contains("pattern") && step["pattern"].contains("Regex")) {
      const std::string re = step["pattern"]["Regex"].get<std::string>();
      if (re.find("\\p{N}{1,3}") != std::string::npos) return "llama-bpe";
      if (re.find("\\p{N}|") != std::string::npos) return "qwen2";
    }
  }
  return "";
}

// tokenizer.json's byte-level BPE as tokenizer.ggml.* keys.
void put_tokenizer(KV& m, const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  const json j = read_json(path);
  const json& model = j.value("model", json::object());
  const std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
  KILN_CHECK(type == "BPE" && !model.value("byte_fallback", false), NotImplementedError,
             "[quantize] " << path << " is a " << (type.empty() ? "non-BPE" : type)
                           << (model.value("byte_fallback", false) ? " (byte-fallback)" : "")
                           << " tokenizer; kiln writes byte-level BPE ones");
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  auto place = [&](const std::string& tok, int64_t id, int64_t kind) {
    KILN_CHECK(id >= 0 && id < (int64_t(1) << 24), ValueError,
               "[quantize] token id " << id << " in " << path);
    if (size_t(id) >= tokens.size()) {
      for (size_t k = tokens.size(); k <= size_t(id); ++k) tokens.push_back("[PAD" + std::to_string(k) + "]");
      types.resize(tokens.size(), kUnused);
    }
    tokens[size_t(id)] = tok;
    types[size_t(id)] = kind;
  };
  const json vocab = model.value("vocab", json::object());
  for (const auto& [tok, id] : vocab.items()) place(tok, id.get<int64_t>(), kNormal);
  for (const json& a : j.value("added_tokens", json::array()))
    place(a.at("content").get<std::string>(), a.at("id").get<int64_t>(),
          a.value("special", false) ? kControl : kUserDefined);
  std::vector<std::string> merges;
  for (const json& mg : model.value("merges", json::array()))
    merges.push_back(mg.is_string() ? mg.get<std::string>()
                                    : mg.at(0).get<std::string>() + " " + mg.at(1).get<std::string>());

  // The pre-tokenizer: the llama.cpp name whose splitting tokenizes a probe
  // text as the checkpoint's own tokenizer does, the one tokenizer.json's
  // pre_tokenizer describes tried first (a small vocabulary may tokenize the
  // probe alike under several).
  const Tokenizer hf = Tokenizer::from_file(path);
  TokenizerParts parts;
  parts.tokens = tokens;
  parts.merges = merges;
  for (int64_t t : types) parts.token_types.push_back(int32_t(t));
  static const char* const kProbe =
      "Hello world! It's 2026: 12345 apples cost $3.14159, don't they? I'VE SEEN 'em\n\n   spaced\ttabs "
      "na\xc3\xafve caf\xc3\xa9 \xe6\x9d\xb1\xe4\xba\xac \xe2\x80\x94 x2y 007";
  const std::vector<int32_t> want = hf.encode(kProbe);
  std::string pre;
  std::vector<std::string> names = {"smollm", "llama-bpe", "qwen2", "gpt-2"};
  const std::string described = described_pre_tokenizer(j.value("pre_tokenizer", json()));
  std::stable_partition(names.begin(), names.end(), [&](const std::string& n) { return n == described; });
  for (const std::string& name : names) {
    parts.pre = name;
    if (Tokenizer::from_parts(parts).encode(kProbe) == want) {
      pre = name;
      break;
    }
  }
  KILN_CHECK(
      !pre.empty(), NotImplementedError,
      "[quantize] " << path
                    << "'s pre-tokenizer splits text as none of llama.cpp's smollm, llama-bpe, qwen2 or "
                       "gpt-2 do");
  put_string(m, "tokenizer.ggml.model", "gpt2");
  put_string(m, "tokenizer.ggml.pre", pre);
  put_array(m, "tokenizer.ggml.tokens", std::move(tokens));
  put_array(m, "tokenizer.ggml.token_type", std::move(types));
  put_array(m, "tokenizer.ggml.merges", std::move(merges));
  if (auto id = hf.bos_id()) put_u32(m, "tokenizer.ggml.bos_token_id", *id);
  if (auto id = hf.eos_id()) put_u32(m, "tokenizer.ggml.eos_token_id", *id);
  if (auto id = hf.pad_id()) put_u32(m, "tokenizer.ggml.padding_token_id", *id);
  const std::vector<int32_t> with = hf.encode("a", true), without = hf.encode("a");
  put_bool(m, "tokenizer.ggml.add_bos_token",
           hf.bos_id() && with.size() > without.size() && with[0] == *hf.bos_id());
  put_bool(m, "tokenizer.ggml.add_eos_token",
           hf.eos_id() && with.size() > without.size() && with.back() == *hf.eos_id());
  if (!hf.chat_template().empty()) put_string(m, "tokenizer.chat_template", hf.chat_template());
}

// Llama 3's rope scaling as llama.cpp's converter precomputes it: one divisor
// per rotary frequency, float32 [head_dim / 2].
Tensor llama3_rope_freqs(const ModelConfig& c) {
  const RopeScaling& r = c.rope_scaling;
  const double old = double(r.original_max_position_embeddings);
  KILN_CHECK(
      old > 0 && r.high_freq_factor > r.low_freq_factor, ValueError,
      "[quantize] llama3 rope scaling needs original_max_position_embeddings and low < high freq factors");
  const int64_t half = c.head_dim / 2;
  Tensor f = empty({half}, DType::Float32);
  for (int64_t i = 0; i < half; ++i) {
    const double freq = 1.0 / std::pow(c.rope_theta, double(2 * i) / double(c.head_dim));
    const double wavelen = 2 * M_PI / freq;
    double factor = r.factor;
    if (wavelen < old / r.high_freq_factor) {
      factor = 1.0;
    } else if (wavelen <= old / r.low_freq_factor) {
      const double smooth = (old / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      factor = 1 / ((1 - smooth) / r.factor + smooth);
    }
    f.data<float>()[i] = float(factor);
  }
  return f;
}

// "model.layers.3.mlp.experts.5.up_proj.weight" -> ("model.layers.3.mlp.experts.up_proj.weight", 5):
// the stacked name gguf_names maps and the expert index, or ("", -1) for other names.
std::pair<std::string, int64_t> expert_of(const std::string& hf) {
  const size_t at = hf.find(".experts.");
  if (at == std::string::npos) return {"", -1};
  const size_t begin = at + 9;
  size_t end = begin;
  while (end < hf.size() && hf[end] >= '0' && hf[end] <= '9') ++end;
  if (end == begin || end - begin > 6 || end >= hf.size() || hf[end] != '.') return {"", -1};
  return {hf.substr(0, begin) + hf.substr(end + 1), std::stoll(hf.substr(begin, end - begin))};
}

// One layer's experts stacked as GGUF holds them: [E, N, K] from E tensors [N, K].
Tensor stack_experts(const SafetensorsCheckpoint& ckpt, const std::vector<std::string>& names) {
  const Tensor first = ckpt.tensor(names[0]);
  Shape shape = first.sizes();
  shape.insert(shape.begin(), int64_t(names.size()));
  Tensor out = empty(shape, first.dtype());
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  for (const std::string& n : names) {
    const Tensor t = ckpt.tensor(n).contiguous();
    KILN_CHECK(t.sizes() == first.sizes() && t.dtype() == first.dtype(), ValueError,
               "[quantize] expert " << n << " differs in shape or dtype from " << names[0]);
    std::memcpy(dst, t.data_ptr(), t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

// Where a tensor goes in llama.cpp's order: the embedding, the layers in
// order, then the final norm and the head.
std::pair<int64_t, std::string> file_order(const std::string& gguf_name) {
  if (gguf_name == "rope_freqs.weight") return {-2, gguf_name};
  if (gguf_name == "token_embd.weight") return {-1, gguf_name};
  if (gguf_name.rfind("blk.", 0) == 0) return {std::stoll(gguf_name.substr(4)), gguf_name};
  return {INT64_MAX, gguf_name};
}

GGMLType ggml_type_of(DType d, const std::string& name) {
  switch (d) {
    case DType::Float32:
      return GGMLType::F32;
    case DType::Float16:
      return GGMLType::F16;
    case DType::BFloat16:
      return GGMLType::BF16;
    default:
      KILN_CHECK(false, NotImplementedError,
                 "[quantize] " << name << " is " << kiln::name(d)
                               << "; kiln quantize reads float32, float16 and bfloat16 checkpoints");
  }
  return GGMLType::F32;
}

}  // namespace

GGUFSource gguf_source_from_hf(const std::string& dir) {
  const ModelConfig c = load_hf_config(dir);
  const std::string arch = gguf_arch(c);
  GGUFSource src;
  KV& m = src.metadata;
  put_string(m, "general.architecture", arch);
  std::filesystem::path name = std::filesystem::absolute(dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();  // "models/smol/"
  put_string(m, "general.name", name.filename().string());
  put_hparams(m, c, arch);
  if (std::filesystem::exists(dir + "/tokenizer.json")) put_tokenizer(m, dir);

  const auto ckpt = std::make_shared<SafetensorsCheckpoint>(SafetensorsCheckpoint::open(dir));
  src.owner = ckpt;
  std::vector<std::pair<std::string, std::string>> names;         // (gguf, hf; or the stacked hf name)
  std::map<std::string, std::map<int64_t, std::string>> experts;  // stacked hf name -> expert -> hf
  for (const std::string& hf : ckpt->names()) {
    if (hf.ends_with("rotary_emb.inv_freq")) continue;  // recomputed from the config
    if (hf == "lm_head.weight" && c.tie_word_embeddings) continue;
    const auto [stacked, expert] = expert_of(hf);
    const std::string g = hf_to_gguf_name(expert >= 0 ? stacked : hf, c.architecture);
    KILN_CHECK(!g.empty(), NotImplementedError, "[quantize] " << hf << " has no GGUF name for " << arch);
    if (expert < 0) {
      names.emplace_back(g, hf);
      continue;
    }
    if (experts[stacked].empty()) names.emplace_back(g, stacked);
    experts[stacked][expert] = hf;
  }
  for (const auto& [stacked, by_index] : experts)
    KILN_CHECK(int64_t(by_index.size()) == c.num_experts && by_index.rbegin()->first == c.num_experts - 1,
               ValueError,
               "[quantize] " << stacked << ": the checkpoint holds " << by_index.size() << " of "
                             << c.num_experts << " experts");
  const bool llama3 = c.rope_scaling.type == "llama3";
  if (llama3) names.emplace_back("rope_freqs.weight", "");
  std::sort(names.begin(), names.end(),
            [](const auto& a, const auto& b) { return file_order(a.first) < file_order(b.first); });
  const auto qk_heads = [&](const std::string& g) -> int64_t {  // llama's Q/K rows go interleaved
    if (arch != "llama") return 0;
    if (g.ends_with(".attn_q.weight") || g.ends_with(".attn_q.bias")) return c.num_attention_heads;
    if (g.ends_with(".attn_k.weight") || g.ends_with(".attn_k.bias")) return c.num_key_value_heads;
    return 0;
  };
  for (const auto& [g, hf] : names) {
    // Type and shape from the headers; the bytes are made when the writer asks.
    std::vector<std::string> each;  // a layer's experts, in order
    if (auto e = experts.find(hf); e != experts.end())
      for (const auto& kv : e->second) each.push_back(kv.second);
    DType dtype = DType::Float32;
    Shape shape = {c.head_dim / 2};  // rope_freqs
    if (!hf.empty()) {
      const SafetensorsEntry& entry = ckpt->entry(each.empty() ? hf : each[0]);
      dtype = entry.dtype;
      shape = entry.shape;
      if (!each.empty()) shape.insert(shape.begin(), int64_t(each.size()));
    }
    GGMLType type = ggml_type_of(dtype, hf);
    const bool to_f32 =
        shape.size() == 1 && type != GGMLType::F32;  // norms and biases, as the converter writes them
    if (to_f32) type = GGMLType::F32;
    const int64_t heads = qk_heads(g);
    GGUFSourceTensor t{g, type, std::vector<int64_t>(shape.rbegin(), shape.rend()), nullptr, nullptr};
    t.load = [ckpt, c, hf = hf, each, to_f32, heads]() {
      Tensor w = hf.empty()      ? llama3_rope_freqs(c)
                 : !each.empty() ? stack_experts(*ckpt, each)
                                 : ckpt->tensor(hf);
      if (to_f32) w = w.to(DType::Float32);
      if (heads > 0) w = permute_qk_rows(w, heads);
      return w.contiguous();
    };
    src.tensors.push_back(std::move(t));
  }
  return src;
}

}  // namespace kiln::io
