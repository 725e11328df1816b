// Weight sources and weight preparation for the LLM runtime: a checkpoint is
// read tensor by tensor under Hugging Face names (from a GGUF file, a
// safetensors checkpoint or tensors in memory) and each linear weight is turned
// into the dtype the model runs with, one tensor at a time (sources.cc holds the
// sources, weights.cc the preparation).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/block_quant.h"
#include "kiln/io/model_config.h"
#include "kiln/llm/model.h"
#include "kiln/quantize.h"
#include "kiln/tensor.h"

namespace kiln::llm::detail {

// A named tensor store under Hugging Face names.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual bool contains(const std::string& name) const = 0;
  // The tensor as stored (a zero-copy view where possible; GGUF: dequantized
  // to float32 in Hugging Face layout). ValueError naming the tensor when absent.
  virtual Tensor get(const std::string& name) const = 0;
  // get(name).select(0, index) without materializing the rest (GGUF: only
  // that slice is dequantized): one expert of a stacked [E, N, K] tensor.
  virtual Tensor get_slice(const std::string& name, int64_t index) const {
    return get(name).select(0, index);
  }
  // Rows [r0, r0 + n) of a 2-D tensor, without materializing the rest (GGUF:
  // only those rows are dequantized).
  virtual Tensor get_rows(const std::string& name, int64_t r0, int64_t n) const {
    return get(name).narrow(0, r0, n);
  }
  // get(name).sizes() without reading the data.
  virtual Shape shape_of(const std::string& name) const { return get(name).sizes(); }
  // True when get() builds a new float32 tensor on every call (GGUF) rather
  // than viewing stored bytes: converting such a tensor goes by get_rows, so
  // a float32 copy of a whole table is never held beside its result.
  virtual bool dequantizes() const { return false; }
  // The block type `name` is stored in, when the source can hand out its
  // blocks as they are (GGUF); nullopt otherwise.
  virtual std::optional<BlockType> block_type(const std::string& name) const {
    (void)name;
    return std::nullopt;
  }
  // A tensor's blocks, uint8 [N, row bytes] (a stack of experts: [E, N, row
  // bytes]), in Hugging Face row order (zero-copy unless rows had to move);
  // only where block_type(name) is set.
  virtual Tensor blocks(const std::string& name) const;
  // The source's bytes for `name` (for progress), 0 when absent.
  virtual int64_t stored_bytes(const std::string& name) const = 0;
  virtual int64_t total_bytes() const = 0;
  // Drops the pages backing `name` from memory once it has been converted
  // (madvise DONTNEED on a mapped file); a no-op for in-memory sources.
  virtual void release(const std::string& name) const { (void)name; }
  virtual std::string describe() const = 0;
};

std::unique_ptr<TensorSource> gguf_source(const std::string& path);
std::unique_ptr<TensorSource> safetensors_source(const std::string& path);
std::unique_ptr<TensorSource> memory_source(std::vector<std::pair<std::string, Tensor>> tensors);

// A linear layer as held: y = x @ (w * scale)^T + bias.
// w: [N, K] f32 / bf16 / FP8, or ggml blocks; scale: undefined, [N, 1] per row, [] per tensor
// or [ceil(N/128), ceil(K/128)] per block (float32); bias: [N] float32 or undefined.
struct Linear {
  Tensor w, scale, bias;
  bool owned = false;  // converted at load (not a view of the source's bytes)
  Fp8Codes codes = Fp8Codes::Unchecked;  // NoNan: an owned e4m3 weight scanned at load
  std::shared_ptr<const Fp8Subnormals> subnormals;  // of an owned e4m3 weight, listed at load
  // Set when w holds ggml blocks as stored (uint8 [N, row bytes], see
  // kiln/block_quant.h) rather than a float or FP8 matrix.
  std::optional<BlockType> blocks;
  int64_t bytes() const;
  // K: W's columns (for blocks, the elements its rows hold).
  int64_t in_features() const {
    return blocks ? w.size(1) / block_type_info(*blocks).block_bytes * block_type_info(*blocks).block_size
                  : w.size(1);
  }
  // out = x @ W^T + bias, by the kernel for how W is held.
  void apply(const Tensor& x, const Tensor& out) const;
  bool defined() const { return w.defined(); }
};

// What kiln knows of an FP8 weight's codes after load: an e4m3 weight
// converted at load (owned) is scanned once, while its pages are in memory, so
// the decode kernels can skip their per-step NaN test; a view of a
// checkpoint's own bytes stays Unchecked rather than be read whole at load.
Fp8Codes scanned_codes(const Tensor& w, bool owned);
// Likewise its subnormal codes (fp8_find_subnormals), which spare the decode
// kernels their per-step test on Intel; null for any other weight.
std::shared_ptr<const Fp8Subnormals> scanned_subnormals(const Tensor& w, bool owned);

// Several linears with one input (q/k/v, gate/up) stacked into one weight so a
// decode step makes one matrix-vector call; the parts become row views of it.
// Only for weights converted at load (a zero-copy source stays as it is) with
// per-row or no scales; returns an undefined Linear when they do not qualify.
Linear fuse_rows(std::vector<Linear*> parts);

// Loads weights from a source, preparing them for `format`, and reports progress.
class WeightLoader {
 public:
  WeightLoader(const TensorSource& src, const io::ModelConfig& cfg, const LoadOptions& opt);

  bool has(const std::string& name) const { return src_.contains(name); }
  // "X" -> X.weight (+ X.weight_scale(_inv), X.bias), prepared for the format.
  // Native FP8 weights (with their scales) are used as they are.
  Linear linear(const std::string& prefix);
  // A vector (norm weight, bias) or router as float32 contiguous.
  Tensor f32(const std::string& name);
  // The embedding table (also the head of a model with tied embeddings):
  // bfloat16, float32 when the format is f32, or under native a GGUF's
  // blocks as stored.
  Linear embedding(const std::string& name);
  // Experts of one MoE layer stacked for the grouped kernel:
  // gate_up [E, 2I, H] (gate rows first), down [E, H, I], with per-expert row
  // scales [E, 2I] / [E, H] when FP8. Under native, GGUF stacks in ggml block
  // types stay blocks: gate_up uint8 [E, 2I, row bytes of H], down uint8
  // [E, H, row bytes of I], their types in gate_up_blocks / down_blocks.
  // `prefix` is the layer's MoE module ("model.layers.3.mlp" or
  // "...block_sparse_moe").
  struct Experts {
    Tensor gate_up, gate_up_scale, down, down_scale;
    std::optional<BlockType> gate_up_blocks, down_blocks;
    Fp8Codes codes = Fp8Codes::Unchecked;  // of both (as Linear::codes)
    std::shared_ptr<const Fp8Subnormals> gate_up_subnormals, down_subnormals;  // as Linear::subnormals
  };
  Experts experts(const std::string& prefix, int64_t E, int64_t I, int64_t H, bool mixtral_names);
  // Reports the load complete (tensors the model does not use count as done).
  void finish();

 private:
  void done(const std::string& name, bool converted);
  // Under native, a block-quantized source tensor as stored (no bias); else nullopt.
  std::optional<Linear> native_blocks(const std::string& weight_name);
  // A 2-D tensor of a dequantizing source as `d` (float32 or bfloat16) or, for
  // float8_e4m3fn, quantized per row with the scales [N, 1] in *scale; a chunk
  // of rows at a time.
  Tensor convert_by_rows(const std::string& name, DType d, Tensor* scale);
  // experts() by checkpoint layout: kiln's own stacks (named_weights), GGUF's
  // stacks, transformers 5's fused stacks, one tensor per expert.
  Experts experts_kiln_layout(const std::string& prefix, int64_t E, int64_t I, int64_t H);
  void kiln_expert_stack(const std::string& wn, int64_t E, int64_t N, int64_t K, Tensor& w, Tensor& scale);
  Experts experts_stacked(const std::string& prefix, int64_t E, int64_t I, int64_t H, bool mixtral_names);
  std::optional<Experts> experts_native_blocks(const std::string& prefix, int64_t E, int64_t I, int64_t H,
                                               bool mixtral_names);
  Experts experts_fused(const std::string& prefix, int64_t E, int64_t I, int64_t H);
  Experts experts_per_expert(const std::string& prefix, int64_t E, int64_t I, int64_t H, bool mixtral_names);
  const TensorSource& src_;
  const io::ModelConfig& cfg_;
  LoadOptions opt_;
  int64_t done_bytes_ = 0, total_bytes_ = 0;
};

}  // namespace kiln::llm::detail
