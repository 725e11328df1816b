// The decoder-only transformer behind every supported architecture (llama,
// qwen2, qwen3, qwen3_moe, mixtral, olmoe): plain structs of weights, a KV
// cache (reserved at load, committed as positions fill) and scratch buffers
// allocated once at load.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kv_cache.h"
#include "kiln/llm/model.h"
#include "llm/weights.h"

namespace kiln::llm::detail {

struct MoEWeights {
  int64_t E = 0, top_k = 0, I = 0;
  bool norm_topk_prob = false;
  Tensor router;                  // [E, H] float32
  Tensor gate_up, gate_up_scale;  // [E, 2I, H], [E, 2I] (FP8 only)
  Tensor down, down_scale;        // [E, H, I], [E, H] (FP8 only)
  // Native ggml blocks: gate_up uint8 [E, 2I, row bytes of H], down uint8
  // [E, H, row bytes of I], of these types (WeightLoader::Experts).
  std::optional<BlockType> gate_up_blocks, down_blocks;
  Fp8Codes codes = Fp8Codes::Unchecked;  // of both expert stacks (scanned_codes)
  std::shared_ptr<const Fp8Subnormals> gate_up_subnormals, down_subnormals;  // (scanned_subnormals)
  bool mixtral_names = false;
  std::string prefix;            // "model.layers.N.mlp" / "...block_sparse_moe"
  int64_t expert_bytes() const;  // one expert's gate_up + down bytes (scales included)
};

struct LayerWeights {
  Tensor attn_norm, mlp_norm;  // [H] float32
  Linear q, k, v, o;
  Tensor q_norm, k_norm;  // [D] per head (qwen3), [Hq*D]/[Hk*D] whole (olmoe), or undefined
  Linear gate, up, down;  // dense MLP
  Linear qkv, gate_up;    // q|k|v and gate|up stacked (q..up are then views), when fused
  std::unique_ptr<MoEWeights> moe;
};

// Activation buffers for up to `rows` tokens, float32, allocated once.
struct Scratch {
  int64_t rows = 0;
  Tensor x, xn, q, k, v, attn, tmp;  // [rows, H] / [rows, Hq*D] / [rows, Hk*D]
  int64_t fused_rows = 0;            // steps of at most this many rows run q|k|v and gate|up fused
  Tensor qkv1, gate_up1;             // [fused_rows, (Hq+2Hk)*D], [fused_rows, 2I]: their outputs
  Tensor gate, up, act;              // [rows, I]
  Tensor last;                       // [1, H]
  Tensor logits1;                    // [1, V]
  Tensor cos, sin;                   // [rows, rotary_dim / 2] of the chunk's positions
  // MoE
  Tensor router_logits, route_w;  // [rows, E], [rows, k]
  Tensor route_ids, perm, offs;   // int32 [rows, k], [rows*k], [E]
  Tensor xp, h, mact, yp;         // [rows*k, H], [rows*k, 2I], [rows*k, I], [rows*k, H]
  Tensor ids;                     // int32 [rows] token ids of the chunk
  std::vector<float> probs;       // [rows, E] router probabilities
  std::vector<int32_t> order;     // [rows, E]
  std::vector<int32_t> inv;       // [rows*k] slot -> row in expert order
  std::vector<int64_t> counts;    // [E + 1]
};

// A sequence's own KV cache (Model::open_sequence; forward() has its own).
struct KVSequence final : Model::Sequence {
  KVCache cache;
  void truncate(int64_t p) override {
    cache.truncate(p);
    position = p;
  }
  void copy_prefix(const Model::Sequence& src, int64_t positions) override;
};

// Rows [row0, row0 + T) of a forward step belong to `seq`, at its position.
struct Segment {
  KVSequence* seq = nullptr;
  int64_t row0 = 0, T = 0;
};

class Transformer final : public Model {
 public:
  // Builds from a weight source (weights prepared as options say).
  Transformer(io::ModelConfig cfg, const TensorSource& src, const LoadOptions& options,
              std::optional<Tokenizer> tokenizer, std::string name);

  const io::ModelConfig& config() const override { return cfg_; }
  const Tokenizer& tokenizer() const override;
  WeightFormat weight_format() const override { return format_; }
  int64_t max_context() const override { return max_ctx_; }
  int64_t position() const override { return main_.position; }
  int64_t max_batch_tokens() const override { return s_.rows; }
  int64_t weight_bytes() const override;
  int64_t bytes_read_last_forward() const override { return bytes_read_; }
  int64_t kv_cache_bytes() const override;
  std::vector<std::pair<std::string, Tensor>> named_weights() const override;

 private:
  void run_reset(int64_t position) override;
  Tensor run_forward(std::span<const int32_t> tokens, bool all_logits) override;
  std::unique_ptr<Sequence> new_sequence() override;
  Tensor run_forward_batch(std::span<Sequence* const> seqs, std::span<const BatchItem> items) override;
  // Runs rows [0, R) of ids through every layer (x [R, H] holds the result),
  // each segment at its sequence's position; advances the positions.
  void forward_rows(const int32_t* ids, int64_t R, std::span<const Segment> segs);
  void forward_chunk(const int32_t* ids, int64_t T, Tensor* logits_out);
  void attention(int64_t l, int64_t T, std::span<const Segment> segs);
  void mlp(int64_t l, int64_t T);
  void moe(int64_t l, int64_t T);
  void add_linear_bytes(const Linear& L) { bytes_read_ += L.bytes(); }
  // Construction steps (after the config and the KV cache).
  void load_layer(WeightLoader& ld, int64_t l);
  void allocate_scratch();

  io::ModelConfig cfg_;
  WeightFormat format_;
  std::optional<Tokenizer> tokenizer_;
  std::string name_;
  int64_t max_ctx_ = 0;
  int64_t H_ = 0, Hq_ = 0, Hk_ = 0, D_ = 0, V_ = 0;
  bool olmoe_qk_norm_ = false;
  Linear embed_;    // [V, H] bf16 or f32, or ggml blocks (native); the head when tied
  Linear lm_head_;  // untied only; tied uses embed_
  Tensor final_norm_;
  std::vector<LayerWeights> layers_;
  Tensor inv_freq_;  // [rotary_dim / 2] float32
  KVSequence main_;  // forward()'s cache
  Scratch s_;
  Tensor all_logits_;               // grown on demand for forward(all_logits)
  Tensor batch_logits_;             // [items, V] of forward_batch, grown on demand
  std::vector<int32_t> batch_ids_;  // the batch's tokens, item after item
  std::vector<Segment> batch_segs_;
  int64_t bytes_read_ = 0;
};

// Rows of one chunk of a prefill (scratch height).
inline constexpr int64_t kMaxChunk = 512;
// Steps of up to this many rows (decoding, a batch of decoding sequences) run
// the fused q|k|v and gate|up weights: one call each instead of three and two.
inline constexpr int64_t kMaxFusedRows = 64;
// The context of a model whose config does not give its trained length.
inline constexpr int64_t kFallbackContext = 4096;

}  // namespace kiln::llm::detail
