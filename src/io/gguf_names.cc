// GGUF -> Hugging Face tensor names (llama.cpp's gguf-py tensor_mapping, restated
// for the supported architectures).
#include "kiln/io/gguf_names.h"

#include <cstdlib>

namespace kiln::io {
namespace {

struct Pair {
  const char* gguf;
  const char* hf;
};

// Per-layer names, after "blk.N." -> "model.layers.N.".
constexpr Pair kLayer[] = {
    {"attn_norm", "input_layernorm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_gate_inp", "mlp.gate"},
    {"ffn_gate_exps", "mlp.experts.gate_proj"},
    {"ffn_up_exps", "mlp.experts.up_proj"},
    {"ffn_down_exps", "mlp.experts.down_proj"},
};
constexpr Pair kMixtral[] = {
    {"ffn_gate_inp", "block_sparse_moe.gate"},
    {"ffn_gate_exps", "block_sparse_moe.experts.w1"},
    {"ffn_up_exps", "block_sparse_moe.experts.w3"},
    {"ffn_down_exps", "block_sparse_moe.experts.w2"},
};

// "PREFIX<N>.<base>.weight|bias" split into N, base and suffix; false for any other name.
struct LayerName {
  std::string layer;
  std::string_view base, suffix;
};
bool split_layer_name(std::string_view n, std::string_view prefix, LayerName& out) {
  if (n.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = n.substr(prefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 6) return false;
  for (char c : rest.substr(0, dot))
    if (c < '0' || c > '9') return false;
  out.layer = std::string(rest.substr(0, dot));
  rest = rest.substr(dot + 1);
  const size_t dot2 = rest.rfind('.');
  if (dot2 == std::string_view::npos) return false;
  out.base = rest.substr(0, dot2);
  out.suffix = rest.substr(dot2);
  return out.suffix == ".weight" || out.suffix == ".bias";
}

}  // namespace

std::string gguf_to_hf_name(std::string_view n, std::string_view arch) {
  if (n == "token_embd.weight") return "model.embed_tokens.weight";
  if (n == "output_norm.weight") return "model.norm.weight";
  if (n == "output.weight") return "lm_head.weight";
  LayerName l;
  if (!split_layer_name(n, "blk.", l)) return "";
  if (arch == "mixtral")
    for (const auto& p : kMixtral)
      if (l.base == p.gguf) return "model.layers." + l.layer + "." + p.hf + std::string(l.suffix);
  for (const auto& p : kLayer)
    if (l.base == p.gguf) return "model.layers." + l.layer + "." + p.hf + std::string(l.suffix);
  return "";
}

std::string hf_to_gguf_name(std::string_view n, std::string_view arch) {
  if (n == "model.embed_tokens.weight") return "token_embd.weight";
  if (n == "model.norm.weight") return "output_norm.weight";
  if (n == "lm_head.weight") return "output.weight";
  LayerName l;
  if (!split_layer_name(n, "model.layers.", l)) return "";
  if (arch == "mixtral")
    for (const auto& p : kMixtral)
      if (l.base == p.hf) return "blk." + l.layer + "." + p.gguf + std::string(l.suffix);
  for (const auto& p : kLayer)
    if (l.base == p.hf) return "blk." + l.layer + "." + p.gguf + std::string(l.suffix);
  return "";
}

}  // namespace kiln::io
