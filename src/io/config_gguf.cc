// ModelConfig from GGUF metadata ({arch}.* keys as llama.cpp's converter writes them).
#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/model_config.h"

namespace kiln::io {

ModelConfig config_from_gguf(const GGUFFile& g) {
  const std::string& name = g.file()->path();
  const std::string ga = g.architecture();
  KILN_CHECK(!ga.empty(), ValueError, "[config] " << name << " has no general.architecture");
  const auto expert_count = g.get_int(ga + ".expert_count").value_or(0);
  ModelConfig c;
  if (ga == "llama")
    c.architecture = expert_count > 0 ? "mixtral" : "llama";
  else if (ga == "qwen2" || ga == "qwen3" || ga == "olmoe")
    c.architecture = ga;
  else if (ga == "qwen3moe")
    c.architecture = "qwen3_moe";
  else
    KILN_CHECK(false, ValueError,
               "[config] GGUF architecture '"
                   << ga << "' in " << name
                   << " is not supported (kiln runs llama, qwen2, qwen3, qwen3moe, olmoe)");
  auto need = [&](const std::string& key, int64_t min) {
    auto v = g.get_int(ga + "." + key);
    KILN_CHECK(v.has_value(), ValueError, "[config] " << name << " has no " << ga << "." << key);
    KILN_CHECK(*v >= min && *v <= (int64_t(1) << 40), ValueError,
               "[config] " << ga << "." << key << " = " << *v << " in " << name << " is out of range");
    return *v;
  };
  c.hidden_size = need("embedding_length", 1);
  c.num_hidden_layers = need("block_count", 1);
  KILN_CHECK(
      c.num_hidden_layers <= (1 << 16), ValueError,
      "[config] " << ga << ".block_count = " << c.num_hidden_layers << " in " << name << " is out of range");
  c.num_attention_heads = need("attention.head_count", 1);
  c.num_key_value_heads = g.contains(ga + ".attention.head_count_kv") ? need("attention.head_count_kv", 1)
                                                                      : c.num_attention_heads;
  KILN_CHECK(c.num_attention_heads % c.num_key_value_heads == 0, ValueError,
             "[config] " << name << ": head counts " << c.num_attention_heads << "/" << c.num_key_value_heads
                         << " do not group");
  c.head_dim = g.contains(ga + ".attention.key_length") ? need("attention.key_length", 1)
                                                        : c.hidden_size / c.num_attention_heads;
  c.intermediate_size = g.contains(ga + ".feed_forward_length") ? need("feed_forward_length", 0) : 0;
  c.max_position_embeddings = g.contains(ga + ".context_length") ? need("context_length", 1) : 4096;
  c.rms_norm_eps = g.get_float(ga + ".attention.layer_norm_rms_epsilon").value_or(1e-6);
  c.rope_theta = g.get_float(ga + ".rope.freq_base").value_or(10000.0);
  if (auto t = g.get_string(ga + ".rope.scaling.type"); t && *t != "none") {
    c.rope_scaling.type = *t;
    c.rope_scaling.factor = g.get_float(ga + ".rope.scaling.factor").value_or(1.0);
    c.rope_scaling.original_max_position_embeddings =
        g.get_int(ga + ".rope.scaling.original_context_length").value_or(0);
  }
  if (auto v = g.get_int(ga + ".vocab_size"))
    c.vocab_size = *v;
  else if (auto toks = g.get_string_array("tokenizer.ggml.tokens"))
    c.vocab_size = int64_t(toks->size());
  else if (auto* emb = g.find_tensor("token_embd.weight"))
    c.vocab_size = emb->shape[0];
  KILN_CHECK(c.vocab_size > 0, ValueError, "[config] " << name << " gives no vocabulary size");
  c.tie_word_embeddings = g.find_tensor("output.weight") == nullptr;
  c.attention_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = g.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  if (auto v = g.get_int("tokenizer.ggml.bos_token_id")) c.bos_token_id = *v;
  if (auto v = g.get_int("tokenizer.ggml.eos_token_id")) c.eos_token_ids.push_back(*v);
  if (auto v = g.get_int("tokenizer.ggml.eot_token_id");
      v && (c.eos_token_ids.empty() || *v != c.eos_token_ids[0]))
    c.eos_token_ids.push_back(*v);
  if (expert_count > 0) {
    c.num_experts = expert_count;
    c.num_experts_per_tok = need("expert_used_count", 1);
    KILN_CHECK(
        c.num_experts_per_tok <= c.num_experts, ValueError,
        "[config] " << name << " routes " << c.num_experts_per_tok << " of " << c.num_experts << " experts");
    c.moe_intermediate_size = g.contains(ga + ".expert_feed_forward_length")
                                  ? need("expert_feed_forward_length", 1)
                                  : c.intermediate_size;
    c.norm_topk_prob = g.get_bool(ga + ".expert_weights_norm").value_or(c.architecture != "olmoe");
  }
  c.quant.scheme = QuantScheme::Gguf;
  c.quant.method = "gguf";
  return c;
}

}  // namespace kiln::io
