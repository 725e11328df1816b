// The non-weight files `kiln convert` writes: config.json (from a source
// config.json, or rebuilt from a ModelConfig for a GGUF source) and, for a GGUF
// source, the embedded tokenizer as a Hugging Face tokenizer.json +
// tokenizer_config.json that both kiln and the `tokenizers` library read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/io/gguf.h"
#include "kiln/io/model_config.h"

namespace kiln::cli {

// A Hugging Face config.json object describing `c` (no quantization_config).
nlohmann::ordered_json hf_config_from_model_config(const io::ModelConfig& c);

// The compressed-tensors float8 "channel" quantization_config: per-output-row
// float32 weight_scale [N, 1], dynamic per-token activations; `ignore` lists
// the Linear modules left unquantized (lm_head, MoE routers).
nlohmann::ordered_json fp8_channel_quantization_config(const std::vector<std::string>& ignore);

// tokenizer.json and tokenizer_config.json texts for the tokenizer a GGUF file
// embeds (tokenizer.ggml.*). NotImplementedError for a tokenizer model or
// pre-tokenizer kiln cannot express.
struct TokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
};
TokenizerFiles tokenizer_files_from_gguf(const io::GGUFFile& f);

}  // namespace kiln::cli
