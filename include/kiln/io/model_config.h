// The model description the runtime builds from: one struct for every supported
// architecture, filled from a Hugging Face config.json or from GGUF metadata.
// Unknown architectures and quantization methods are refused by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::io {

class GGUFFile;

// rope_scaling (HF) / rope.scaling.* (GGUF). type "" means none.
struct RopeScaling {
  std::string type;  // "llama3", "linear", "yarn", "dynamic", ...
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 0;
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn
};

// How the checkpoint's linear weights are quantized.
enum class QuantScheme {
  None,
  Fp8Block,    // quant_method "fp8", weight_block_size [bn, bk], weight_scale_inv [N/bn, K/bk] (f32)
  Fp8Channel,  // compressed-tensors float8, strategy "channel": weight_scale [N, 1]
  Fp8Tensor,   // compressed-tensors float8, strategy "tensor":  weight_scale [] or [1]
  Gguf,        // a GGUF file: per-tensor ggml types
};
const char* quant_scheme_name(QuantScheme s);

struct QuantConfig {
  QuantScheme scheme = QuantScheme::None;
  std::string method;                // "fp8", "compressed-tensors", "gguf" or ""
  std::string fmt = "e4m3";          // fp8 format of the weights
  std::string activation_scheme;     // "dynamic" / "static" / "" (fp8 method)
  bool dynamic_activations = true;   // compressed-tensors input_activations.dynamic
  int64_t block_n = 0, block_k = 0;  // Fp8Block: [128, 128]
  std::string scale_name;            // "weight_scale_inv" or "weight_scale"
  std::vector<std::string> ignore;   // modules left unquantized (names or "re:" patterns)
};

struct ModelConfig {
  std::string architecture;  // "llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "olmoe"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / heads unless given
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (qwen2: true)
  bool qk_norm = false;         // RMSNorm on q and k (qwen3, qwen3_moe: per head; olmoe: whole)
  std::string hidden_act = "silu";
  std::optional<int64_t> sliding_window;  // set only when used
  std::string torch_dtype;                // "bfloat16", ...
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;

  // Mixture of experts (num_experts == 0: dense).
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;     // expert FFN width (qwen3_moe); = intermediate_size otherwise
  bool norm_topk_prob = false;           // renormalize the top-k router weights
  int64_t decoder_sparse_step = 1;       // qwen3_moe: every n-th layer is MoE
  std::vector<int64_t> mlp_only_layers;  // qwen3_moe: dense layers
  double router_aux_loss_coef = 0;

  QuantConfig quant;

  bool is_moe() const { return num_experts > 0; }
  // Whether layer `i` uses the MoE block.
  bool layer_is_moe(int64_t i) const;
  // Parameter count implied by the shapes (embeddings counted once when tied).
  int64_t parameter_count() const;
  std::string summary() const;  // one line
};

// The architectures kiln runs (HF model_type names).
const std::vector<std::string>& supported_architectures();

// Parses a config.json text. `name` appears in errors.
ModelConfig parse_hf_config(const std::string& json_text, const std::string& name = "config.json");
// Reads PATH/config.json (PATH a directory) or PATH itself.
ModelConfig load_hf_config(const std::string& path);
// The same struct from GGUF metadata ({arch}.block_count, ...).
ModelConfig config_from_gguf(const GGUFFile& f);

}  // namespace kiln::io
