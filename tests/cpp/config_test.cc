// Model configs from config.json: fields, MoE, FP8 schemes, refusals by name.
#include <gtest/gtest.h>

#include "kiln/error.h"
#include "kiln/io/model_config.h"

using namespace kiln;
using namespace kiln::io;

TEST(Config, Qwen3MoeFp8Block) {
  const char* text = R"({"model_type": "qwen3_moe", "vocab_size": 151936, "hidden_size": 2048,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 48,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128,
    "num_experts_per_tok": 8, "norm_topk_prob": true, "rope_theta": 1000000.0,
    "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                            "weight_block_size": [128, 128]}})";
  ModelConfig c = parse_hf_config(text);
  EXPECT_EQ(c.architecture, "qwen3_moe");
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_TRUE(c.layer_is_moe(0));
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.quant.scheme, QuantScheme::Fp8Block);
  EXPECT_EQ(c.quant.block_n, 128);
  EXPECT_EQ(c.quant.scale_name, "weight_scale_inv");
}

TEST(Config, RefusesByName) {
  try {
    parse_hf_config(R"({"model_type": "phi3"})");
    ADD_FAILURE();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'phi3'"), std::string::npos);
  }
  const char* gptq = R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
    "num_hidden_layers": 1, "num_attention_heads": 2, "quantization_config": {"quant_method": "gptq"}})";
  try {
    parse_hf_config(gptq);
    ADD_FAILURE();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'gptq'"), std::string::npos);
  }
  EXPECT_THROW(parse_hf_config("[1]"), ValueError);
  EXPECT_THROW(parse_hf_config("{\"model_type\": \"llama\"}"), ValueError);  // missing fields
}
