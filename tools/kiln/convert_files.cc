// config.json and tokenizer.json writers for `kiln convert`; see convert_files.h.
#include "convert_files.h"

#include <unordered_set>

#include "kiln/error.h"

namespace kiln::cli {

using ojson = nlohmann::ordered_json;

namespace {

const char* hf_architecture_class(const std::string& a) {
  if (a == "llama") return "LlamaForCausalLM";
  if (a == "qwen2") return "Qwen2ForCausalLM";
  if (a == "qwen3") return "Qwen3ForCausalLM";
  if (a == "qwen3_moe") return "Qwen3MoeForCausalLM";
  if (a == "mixtral") return "MixtralForCausalLM";
  if (a == "olmoe") return "OlmoeForCausalLM";
  throw NotImplementedError("[convert] architecture '" + a + "' has no Hugging Face config mapping");
}

}  // namespace

ojson hf_config_from_model_config(const io::ModelConfig& c) {
  ojson j;
  j["architectures"] = {hf_architecture_class(c.architecture)};
  j["model_type"] = c.architecture;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  if (!c.rope_scaling.type.empty()) {
    const auto& r = c.rope_scaling;
    ojson rs{{"rope_type", r.type}, {"factor", r.factor}};
    if (r.type == "llama3") {
      rs["low_freq_factor"] = r.low_freq_factor;
      rs["high_freq_factor"] = r.high_freq_factor;
    }
    if (r.type == "yarn") {
      rs["beta_fast"] = r.beta_fast;
      rs["beta_slow"] = r.beta_slow;
    }
    if (r.original_max_position_embeddings > 0)
      rs["original_max_position_embeddings"] = r.original_max_position_embeddings;
    j["rope_scaling"] = rs;
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["attention_bias"] = c.attention_bias;
  j["hidden_act"] = c.hidden_act;
  if (c.sliding_window) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = *c.sliding_window;
  }
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_ids.size() == 1)
    j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty())
    j["eos_token_id"] = c.eos_token_ids;
  if (c.is_moe()) {
    j[c.architecture == "mixtral" ? "num_local_experts" : "num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["router_aux_loss_coef"] = c.router_aux_loss_coef;
    if (c.architecture == "qwen3_moe") {
      j["moe_intermediate_size"] = c.moe_intermediate_size;
      j["decoder_sparse_step"] = c.decoder_sparse_step;
      j["mlp_only_layers"] = c.mlp_only_layers;
    }
  }
  return j;
}

ojson fp8_block_quantization_config(const std::vector<std::string>& ignore, int64_t block_n, int64_t block_k) {
  return ojson{{"quant_method", "fp8"},
               {"fmt", "e4m3"},
               {"activation_scheme", "dynamic"},
               {"weight_block_size", {block_n, block_k}},
               {"modules_to_not_convert", ignore}};
}

ojson fp8_channel_quantization_config(const std::vector<std::string>& ignore, const char* strategy) {
  const ojson weights{
      {"num_bits", 8}, {"type", "float"}, {"strategy", strategy}, {"symmetric", true}, {"dynamic", false}};
  const ojson acts{
      {"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"symmetric", true}, {"dynamic", true}};
  return ojson{{"quant_method", "compressed-tensors"},
               {"format", "float-quantized"},
               {"quantization_status", "compressed"},
               {"ignore", ignore},
               {"config_groups",
                {{"group_0", {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", acts}}}}}};
}

TokenizerFiles tokenizer_files_from_gguf(const io::GGUFFile& f) {
  const std::vector<std::string>* tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (tokens == nullptr) throw ValueError("[convert] the GGUF file has no tokenizer (tokenizer.ggml.tokens)");
  const std::string model = f.get_string("tokenizer.ggml.model").value_or("gpt2");
  if (model != "gpt2")
    throw NotImplementedError("[convert] GGUF tokenizer model '" + model + "' (only byte-level BPE, 'gpt2')");
  const std::string pre = f.get_string("tokenizer.ggml.pre").value_or("default");
  const std::vector<int64_t>* types = f.get_int_array("tokenizer.ggml.token_type");

  // The pre-tokenizers of tokenizers' own tokenizer.json files for these families.
  const ojson byte_level_regex{
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const ojson byte_level_plain{
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  auto split = [&](const char* pattern) {
    return ojson{{"type", "Sequence"},
                 {"pretokenizers",
                  {ojson{{"type", "Split"},
                         {"pattern", {{"Regex", pattern}}},
                         {"behavior", "Isolated"},
                         {"invert", false}},
                   byte_level_plain}}};
  };
  static const char* const kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static const char* const kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  ojson pre_tokenizer, normalizer = nullptr;
  if (pre == "default" || pre == "gpt2" || pre == "gpt-2" || pre == "olmo" || pre == "mpt") {
    pre_tokenizer = byte_level_regex;
  } else if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "llama4") {
    pre_tokenizer = split(kLlama3);
  } else if (pre == "qwen2" || pre == "qwen3" || pre == "deepseek-r1-qwen" || pre == "qwen35") {
    pre_tokenizer = split(kQwen2);
    normalizer = ojson{{"type", "NFC"}};
  } else if (pre == "smollm" || pre == "starcoder" || pre == "refact") {
    pre_tokenizer =
        ojson{{"type", "Sequence"},
              {"pretokenizers", {ojson{{"type", "Digits"}, {"individual_digits", true}}, byte_level_regex}}};
  } else {
    throw NotImplementedError("[convert] GGUF pre-tokenizer '" + pre + "' has no tokenizer.json form here");
  }

  ojson vocab = ojson::object();
  ojson added = ojson::array();
  std::unordered_set<std::string> seen;
  for (size_t id = 0; id < tokens->size(); ++id) {
    const std::string& t = (*tokens)[id];
    if (seen.insert(t).second) vocab[t] = id;
    const int64_t type = types != nullptr && id < types->size() ? (*types)[id] : 1;
    if (type == 3 || type == 4)  // control (special) and user-defined tokens are matched in raw text
      added.push_back(ojson{{"id", id},
                            {"content", t},
                            {"single_word", false},
                            {"lstrip", false},
                            {"rstrip", false},
                            {"normalized", type == 4},
                            {"special", type == 3}});
  }
  ojson merges = ojson::array();
  if (const auto* m = f.get_string_array("tokenizer.ggml.merges"))
    for (const auto& s : *m) merges.push_back(s);

  ojson tj;
  tj["version"] = "1.0";
  tj["truncation"] = nullptr;
  tj["padding"] = nullptr;
  tj["added_tokens"] = added;
  tj["normalizer"] = normalizer;
  tj["pre_tokenizer"] = pre_tokenizer;
  tj["post_processor"] =
      ojson{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  tj["decoder"] =
      ojson{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  tj["model"] = ojson{{"type", "BPE"},
                      {"dropout", nullptr},
                      {"unk_token", nullptr},
                      {"continuing_subword_prefix", nullptr},
                      {"end_of_word_suffix", nullptr},
                      {"fuse_unk", false},
                      {"byte_fallback", false},
                      {"ignore_merges", false},
                      {"vocab", vocab},
                      {"merges", merges}};

  ojson cfg;
  auto token_of = [&](const char* key) -> ojson {
    const auto id = f.get_int(key);
    if (!id || *id < 0 || size_t(*id) >= tokens->size()) return nullptr;
    return (*tokens)[size_t(*id)];
  };
  cfg["add_bos_token"] = f.get_bool("tokenizer.ggml.add_bos_token").value_or(false);
  cfg["add_eos_token"] = f.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  cfg["bos_token"] = token_of("tokenizer.ggml.bos_token_id");
  cfg["eos_token"] = token_of("tokenizer.ggml.eos_token_id");
  cfg["pad_token"] = token_of("tokenizer.ggml.padding_token_id");
  if (const auto t = f.get_string("tokenizer.chat_template")) cfg["chat_template"] = *t;
  cfg["tokenizer_class"] = "PreTrainedTokenizerFast";

  auto dump = [](const ojson& j) { return j.dump(2, ' ', false, ojson::error_handler_t::strict) + "\n"; };
  return {dump(tj), dump(cfg)};
}

}  // namespace kiln::cli
