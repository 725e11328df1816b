// A LoRA adapter directory in PEFT's layout (adapter_config.json +
// adapter_model.safetensors) run on its base model: each adapted weight is
// merged at load, W' = W + scaling * B @ A, so the runtime's kernels see one
// ordinary weight and decoding costs what the base model costs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "kiln/tensor.h"
#include "llm/weights.h"

namespace kiln::llm::detail {

struct LoraAdapter {
  std::string dir;
  std::string base_model;  // base_model_name_or_path as written (may be empty)
  double scaling = 1.0;    // lora_alpha / r (rsLoRA: lora_alpha / sqrt(r))
  // "<module>.weight" -> (A [r, K], B [N, r]), float32.
  std::map<std::string, std::pair<Tensor, Tensor>> factors;
};

// True when `dir` is a directory holding adapter_config.json.
bool is_lora_adapter_dir(const std::string& dir);

// Reads and validates the adapter (ValueError / NotImplementedError naming the
// file and field: a non-LoRA PEFT type, DoRA, per-layer rank or alpha
// patterns, fan_in_fan_out, a tensor without its partner or with the wrong rank).
LoraAdapter load_lora_adapter(const std::string& dir);

// The base model's path the adapter names: base_model_name_or_path as an
// absolute path, or relative to the adapter directory. ValueError when it is
// not a local path.
std::string lora_base_model_path(const LoraAdapter& adapter);

// `base` with the adapter merged into the weights it adapts (checked against
// the base's shapes: ValueError naming the tensor).
std::unique_ptr<TensorSource> lora_source(std::unique_ptr<TensorSource> base, LoraAdapter adapter);

}  // namespace kiln::llm::detail
