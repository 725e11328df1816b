// Tensor names: llama.cpp's GGUF names <-> Hugging Face checkpoint names, for the
// architectures kiln runs, so one loader can read either file kind.
#pragma once

#include <string>
#include <string_view>

namespace kiln::io {

// The Hugging Face name of a GGUF tensor ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"), or "" when it has none. `arch` is
// the HF model_type ("llama", "qwen2", "qwen3", "qwen3_moe", "mixtral", "olmoe").
// GGUF stores the experts of a layer stacked ([E, N, K] as "blk.N.ffn_up_exps");
// those map to "model.layers.N.mlp.experts.up_proj.weight" (kiln's stacked name;
// mixtral: "block_sparse_moe.experts.w3.weight" with w1 gate, w2 down, w3 up).
std::string gguf_to_hf_name(std::string_view gguf_name, std::string_view arch);
// The inverse for a dense model's per-tensor names ("model.layers.3.mlp.up_proj.bias"
// -> "blk.3.ffn_up.bias"), or "" when it has none (per-expert tensors included).
std::string hf_to_gguf_name(std::string_view hf_name, std::string_view arch);

}  // namespace kiln::io
