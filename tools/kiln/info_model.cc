// `kiln info PATH`: a summary of a model file or directory — safetensors
// (single or sharded), GGUF, config.json, tokenizer — as text or JSON.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/model_config.h"
#include "kiln/io/safetensors.h"
#include "kiln/sysinfo.h"

namespace kiln::cli {
namespace {

using json = nlohmann::ordered_json;

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
bool has_magic(const std::string& path, const char* magic) {
  std::ifstream f(path, std::ios::binary);
  char m[4] = {};
  return f.read(m, 4) && std::memcmp(m, magic, 4) == 0;
}
std::string dir_of(const std::string& p) {
  if (is_dir(p)) return p;
  const auto s = p.rfind('/');
  return s == std::string::npos ? "." : p.substr(0, s);
}

json config_json(const io::ModelConfig& c) {
  json j;
  j["architecture"] = c.architecture;
  j["layers"] = c.num_hidden_layers;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["heads"] = c.num_attention_heads;
  j["kv_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["context_length"] = c.max_position_embeddings;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = c.rope_scaling.type.empty() ? json(nullptr) : json(c.rope_scaling.type);
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.is_moe()) {
    j["experts"] = c.num_experts;
    j["experts_per_token"] = c.num_experts_per_tok;
    j["expert_intermediate_size"] = c.moe_intermediate_size;
  }
  j["quantization"] = io::quant_scheme_name(c.quant.scheme);
  if (c.quant.scheme == io::QuantScheme::Fp8Block) j["quant_block"] = {c.quant.block_n, c.quant.block_k};
  j["parameters_from_config"] = c.parameter_count();
  return j;
}

// Tokenizer facts from tokenizer.json (+ tokenizer_config.json) without building it.
json hf_tokenizer_json(const std::string& dir) {
  json t;
  const std::string path = dir + "/tokenizer.json";
  if (!exists(path)) return json(nullptr);
  std::ifstream f(path, std::ios::binary);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw ValueError("[info] " + path + " is not valid JSON");
  t["file"] = "tokenizer.json";
  if (j.contains("model") && j["model"].is_object()) {
    const auto& m = j["model"];
    if (m.contains("type") && m["type"].is_string()) t["model"] = m["type"];
    if (m.contains("vocab") && m["vocab"].is_object()) t["vocab_size"] = m["vocab"].size();
    if (m.contains("merges") && m["merges"].is_array()) t["merges"] = m["merges"].size();
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    t["added_tokens"] = j["added_tokens"].size();
  const std::string cfg = dir + "/tokenizer_config.json";
  if (exists(cfg)) {
    std::ifstream cf(cfg, std::ios::binary);
    nlohmann::json c = nlohmann::json::parse(cf, nullptr, false);
    if (c.is_object()) t["chat_template"] = c.contains("chat_template") && !c["chat_template"].is_null();
  }
  return t;
}

struct TypeStat {
  int64_t tensors = 0, elements = 0;
  uint64_t bytes = 0;
};

json type_table(const std::map<std::string, TypeStat>& m) {
  json j = json::object();
  for (const auto& [k, s] : m) j[k] = {{"tensors", s.tensors}, {"elements", s.elements}, {"bytes", s.bytes}};
  return j;
}

json safetensors_summary(const std::string& path) {
  auto ck = io::SafetensorsCheckpoint::open(path);
  std::map<std::string, TypeStat> types;
  int64_t params = 0;
  uint64_t bytes = 0, file_bytes = 0;
  for (const auto& n : ck.names()) {
    const auto& e = ck.entry(n);
    auto& s = types[name(e.dtype)];
    const int64_t numel = shape_numel(e.shape, "info");
    s.tensors++;
    s.elements += numel;
    s.bytes += e.end - e.begin;
    params += numel;
    bytes += e.end - e.begin;
  }
  for (const auto& sh : ck.shards()) file_bytes += sh.file()->size();
  json j;
  j["format"] = "safetensors";
  j["shards"] = ck.shards().size();
  j["tensors"] = ck.names().size();
  j["elements"] = params;
  j["tensor_bytes"] = bytes;
  j["file_bytes"] = file_bytes;
  j["dtypes"] = type_table(types);
  return j;
}

json gguf_summary(const std::string& path) {
  auto g = io::GGUFFile::open(path);
  json j;
  j["format"] = "gguf";
  j["gguf_version"] = g.version();
  j["architecture"] = g.architecture();
  if (auto n = g.get_string("general.name")) j["name"] = *n;
  if (auto ft = g.get_int("general.file_type")) j["file_type"] = *ft;
  j["alignment"] = g.alignment();
  std::map<std::string, TypeStat> types;
  int64_t params = 0;
  uint64_t bytes = 0;
  for (const auto& t : g.tensors()) {
    auto& s = types[io::ggml_type_info(uint32_t(t.type))->name];
    s.tensors++;
    s.elements += t.numel;
    s.bytes += t.nbytes;
    params += t.numel;
    bytes += t.nbytes;
  }
  j["tensors"] = g.tensors().size();
  j["elements"] = params;
  j["tensor_bytes"] = bytes;
  j["file_bytes"] = g.file()->size();
  j["metadata_keys"] = g.metadata().size();
  j["types"] = type_table(types);
  try {
    j["config"] = config_json(io::config_from_gguf(g));
  } catch (const ValueError& e) {
    j["config"] = nullptr;
    j["config_error"] = e.what();
  }
  json t;
  if (auto m = g.get_string("tokenizer.ggml.model")) t["model"] = *m;
  if (auto p = g.get_string("tokenizer.ggml.pre")) t["pre"] = *p;
  if (auto toks = g.get_string_array("tokenizer.ggml.tokens")) t["vocab_size"] = toks->size();
  if (auto merges = g.get_string_array("tokenizer.ggml.merges")) t["merges"] = merges->size();
  if (auto b = g.get_int("tokenizer.ggml.bos_token_id")) t["bos_token_id"] = *b;
  if (auto e = g.get_int("tokenizer.ggml.eos_token_id")) t["eos_token_id"] = *e;
  t["chat_template"] = g.contains("tokenizer.chat_template");
  j["tokenizer"] = t.empty() ? json(nullptr) : t;
  return j;
}

std::string human(uint64_t b) { return sys::format_bytes(int64_t(b)); }
std::string count(int64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.1fM", n / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%lld", (long long)n);
  return buf;
}

void print_text(const std::string& path, const json& j) {
  std::printf("%s\n", path.c_str());
  std::printf("  format          %s", j["format"].get<std::string>().c_str());
  if (j.contains("gguf_version")) std::printf(" v%d", j["gguf_version"].get<int>());
  if (j.contains("shards") && j["shards"].get<int>() > 1) std::printf(" (%d shards)", j["shards"].get<int>());
  std::printf("\n");
  if (j.contains("name")) std::printf("  name            %s\n", j["name"].get<std::string>().c_str());
  std::printf("  tensors         %lld, %s elements, %s of tensor data (file %s)\n",
              (long long)j["tensors"].get<int64_t>(), count(j["elements"].get<int64_t>()).c_str(),
              human(j["tensor_bytes"].get<uint64_t>()).c_str(),
              human(j["file_bytes"].get<uint64_t>()).c_str());
  const json& types = j.contains("types") ? j["types"] : j["dtypes"];
  for (const auto& [k, v] : types.items())
    std::printf("    %-12s  %5lld tensors  %10s elements  %10s\n", k.c_str(),
                (long long)v["tensors"].get<int64_t>(), count(v["elements"].get<int64_t>()).c_str(),
                human(v["bytes"].get<uint64_t>()).c_str());
  if (j.contains("config") && !j["config"].is_null()) {
    const json& c = j["config"];
    std::printf("  architecture    %s\n", c["architecture"].get<std::string>().c_str());
    std::printf("  layers          %lld, hidden %lld, ffn %lld\n", (long long)c["layers"].get<int64_t>(),
                (long long)c["hidden_size"].get<int64_t>(), (long long)c["intermediate_size"].get<int64_t>());
    std::printf("  attention       %lld heads, %lld kv heads, head dim %lld\n",
                (long long)c["heads"].get<int64_t>(), (long long)c["kv_heads"].get<int64_t>(),
                (long long)c["head_dim"].get<int64_t>());
    if (c.contains("experts"))
      std::printf("  experts         %lld of %lld per token, ffn %lld\n",
                  (long long)c["experts_per_token"].get<int64_t>(), (long long)c["experts"].get<int64_t>(),
                  (long long)c["expert_intermediate_size"].get<int64_t>());
    std::printf("  vocab           %lld\n", (long long)c["vocab_size"].get<int64_t>());
    std::printf("  context         %lld, rope theta %g%s%s\n", (long long)c["context_length"].get<int64_t>(),
                c["rope_theta"].get<double>(), c["rope_scaling"].is_null() ? "" : ", scaling ",
                c["rope_scaling"].is_null() ? "" : c["rope_scaling"].get<std::string>().c_str());
    std::printf("  embeddings      %s\n",
                c["tie_word_embeddings"].get<bool>() ? "tied" : "separate output head");
    std::printf("  quantization    %s\n", c["quantization"].get<std::string>().c_str());
  } else if (j.contains("architecture")) {
    std::printf("  architecture    %s (%s)\n", j["architecture"].get<std::string>().c_str(),
                j.contains("config_error") ? j["config_error"].get<std::string>().c_str() : "no config");
  }
  if (j.contains("tokenizer") && !j["tokenizer"].is_null()) {
    const json& t = j["tokenizer"];
    std::printf("  tokenizer      ");
    for (const auto& [k, v] : t.items())
      std::printf(" %s=%s", k.c_str(), v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
    std::printf("\n");
  }
}

}  // namespace

namespace {
// Control characters from a file (a tensor name holding a newline) must not
// break the one-line error.
std::string one_line(const char* msg) {
  std::string out;
  for (const char* p = msg; *p; ++p) {
    const unsigned char ch = static_cast<unsigned char>(*p);
    if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", ch);
      out += buf;
    } else {
      out.push_back(char(ch));
    }
  }
  return out;
}
int summarize(const std::string& path, bool as_json);
}  // namespace

int run_model_info(const std::string& path, bool as_json) {
  try {
    return summarize(path, as_json);
  } catch (const TypeError& e) {
    throw TypeError(one_line(e.what()));
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(one_line(e.what()));
  } catch (const Error& e) {
    throw ValueError(one_line(e.what()));
  }
}

namespace {
int summarize(const std::string& path, bool as_json) {
  if (!exists(path)) throw ValueError("[info] " + path + " does not exist");
  json j;
  if (!is_dir(path) && (has_magic(path, "GGUF") || (path.size() > 5 && path.ends_with(".gguf")))) {
    j = gguf_summary(path);
  } else {
    const std::string dir = dir_of(path);
    const bool ckpt = !is_dir(path) || exists(path + "/model.safetensors") ||
                      exists(path + "/model.safetensors.index.json");
    if (ckpt) {
      j = safetensors_summary(path);
    } else {
      j["format"] = "directory";
      j["tensors"] = 0;
      j["elements"] = 0;
      j["tensor_bytes"] = 0;
      j["file_bytes"] = 0;
      j["dtypes"] = json::object();
    }
    if (exists(dir + "/config.json")) {
      const io::ModelConfig c = io::load_hf_config(dir);
      j["config"] = config_json(c);
      if (c.quant.scheme != io::QuantScheme::None) j["quantization_method"] = c.quant.method;
    }
    j["tokenizer"] = hf_tokenizer_json(dir);
  }
  if (as_json)
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  else
    print_text(path, j);
  return 0;
}
}  // namespace

}  // namespace kiln::cli
