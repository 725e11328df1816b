// A loaded language model: config, tokenizer, weights prepared for decoding,
// a KV cache (reserved once, committed as it fills) and scratch buffers
// allocated once. The token loop calls forward(); nothing is allocated per token.
//
//   auto m = kiln::llm::Model::load("model.gguf");          // FP8 linear weights
//   std::vector<int32_t> ids = m->tokenizer().encode("Hello");
//   kiln::Tensor logits = m->forward(ids);                    // [1, V] of the last token
//
// Threads: a model owns its KV cache and scratch, so it runs one caller at a
// time. forward() and reset() serialise themselves: a call from a second thread
// waits until the running one returns (as a llama.cpp context, a model is not
// for concurrent use; unlike one, it cannot be corrupted by it). A sequence of
// calls that must not interleave with another thread's (reset + forward +
// reading the logits view, a whole generation) holds the model with a Use:
//
//   { kiln::llm::Model::Use use(*m, "[my_op]"); m->reset(); copy(m->forward(ids)); }
//
// The holding thread's own calls pass; other threads wait for the Use to end.
// A callback that kiln runs while it holds the model (generate()'s on_piece)
// may not use that model: its calls throw Error instead of deadlocking or
// running inside the generation. Parallel work wants one model per thread.
//
// Architectures: llama, qwen2, qwen3 (q/k norms), qwen3_moe, mixtral, olmoe.
// Sources: a GGUF file, a Hugging Face directory (config.json, *.safetensors or
// model.safetensors.index.json, tokenizer.json), including native FP8
// checkpoints (block and channel scales), or a directory `kiln convert` wrote.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kiln/io/model_config.h"
#include "kiln/tensor.h"
#include "kiln/tokenizer.h"

namespace kiln::llm {

// The dtype linear-layer weights are held in while running.
//   fp8:  per-output-row float8_e4m3fn quantization at load (native FP8
//         checkpoints are used as they are); the default.
//   native: a GGUF file's block-quantized weights (Q4_K, Q8_0, ...) run as
//         stored (kiln/block_quant.h), exact to the file's dequantization,
//         the embedding table's too; other weights as fp8. Not yet the
//         default: its kernels read ~0.3-0.6 of the memory roof, and fp8
//         decodes the default model ~1.6x faster.
//   bf16, f32: widened/narrowed at load.
// Embeddings (but under native a GGUF's block-quantized table), norms and
// routers stay in a safe dtype (bf16 or f32); under native, MoE expert
// stacks of a GGUF file are converted to fp8.
enum class WeightFormat { Native, FP8, BF16, F32 };
WeightFormat weight_format_from_name(
    const std::string& name);  // "native" | "fp8" | "bf16" | "f32"; ValueError
const char* weight_format_name(WeightFormat f);

struct LoadOptions {
  WeightFormat weights = WeightFormat::FP8;
  // KV-cache positions; 0: the length the model was trained for
  // (config.max_position_embeddings, 4096 when the config does not say),
  // lowered to what fits in the memory available. A context whose KV cache
  // cannot fit in the memory available is refused (ValueError naming the
  // bytes needed) before anything is loaded. The cache commits memory only as
  // positions fill, so a long context costs nothing until it is used.
  int64_t max_context = 0;
  DType kv_dtype = DType::BFloat16;
  // Called as weights are prepared: (bytes done, bytes in all). May be empty.
  std::function<void(int64_t, int64_t)> progress;
  // A LoRA adapter directory in PEFT's layout (adapter_config.json +
  // adapter_model.safetensors, as kiln finetune writes it), merged into the
  // weights it adapts at load (W + lora_alpha / r * B @ A). Empty: none.
  std::string adapter;
};

// The base model a LoRA adapter directory names (base_model_name_or_path, as
// a path; ValueError when it is not a local one), or "" when `dir` is not an
// adapter directory (no adapter_config.json, or a config.json beside it).
std::string lora_adapter_base(const std::string& dir);

class Model {
 public:
  // Loads PATH (a .gguf file, a model directory, or a LoRA adapter directory,
  // which loads the base model it names with the adapter merged). Errors are
  // kiln exceptions with one-line messages naming the file ("[llm] ...").
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& options = {});
  // Builds a model from a config and tensors under Hugging Face names (as a
  // checkpoint would hold them, or as named_weights() gives them), without
  // files: for synthetic and derived models. The tensors are prepared as
  // options say; tensors already in the held form are used without a copy.
  // Experts may be given per expert ("model.layers.N.mlp.experts.E.gate_proj.weight")
  // or stacked as named_weights() gives them:
  //   "model.layers.N.mlp.experts.gate_up_proj.weight" [E, 2I, H] (gate rows first),
  //   "model.layers.N.mlp.experts.down_proj.weight"    [E, H, I],
  // FP8 with "<name>_scale" [E, N, 1] float32 (e.g. random FP8 bytes and scales
  // for a synthetic model of a large model's widths, with no float copy).
  static std::unique_ptr<Model> from_tensors(const io::ModelConfig& config,
                                             std::vector<std::pair<std::string, Tensor>> tensors,
                                             const LoadOptions& options = {},
                                             std::optional<Tokenizer> tokenizer = std::nullopt);
  virtual ~Model() = default;

  class CallOut;
  // Holds the model for the calling thread (see the header comment): waits
  // while another thread holds it; nests on the thread that holds it. `op`
  // ("[generate]") starts the message of the Error thrown when this thread is
  // inside a callback that a hold of this model runs (CallOut).
  class Use {
   public:
    Use(Model& model, const char* op);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    friend class CallOut;
    Model& model_;
    bool outer_ = false;  // this Use took the lock (else it nests in one of this thread's)
  };
  // While alive, the thread holding `use` runs user code (a callback): that
  // code's calls on the model throw Error rather than run inside the hold.
  class CallOut {
   public:
    explicit CallOut(Use& use);
    ~CallOut();
    CallOut(const CallOut&) = delete;
    CallOut& operator=(const CallOut&) = delete;

   private:
    Model& model_;
    bool before_;
  };

  virtual const io::ModelConfig& config() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual WeightFormat weight_format() const = 0;
  virtual int64_t max_context() const = 0;

  // Tokens in the KV cache (the position the next token gets). This,
  // resets() and bytes_read_last_forward() read what forward() writes: from
  // another thread than the one running the model, read them under a Use.
  virtual int64_t position() const = 0;
  // Forgets cached positions from `position` on (0: an empty cache).
  void reset(int64_t position = 0);
  // How many times reset() has run: with position(), how a generation knows
  // that nothing else used the cache between two of its steps.
  uint64_t resets() const { return resets_; }

  // Runs `tokens` at positions [position(), position() + n), appending them to
  // the KV cache. Returns float32 logits [n, V] when all_logits, else [1, V] for
  // the last token; the tensor is a view of scratch that the next call
  // overwrites. n = 1 takes the matrix-vector path, n > 1 the GEMM path.
  // ValueError when the tokens do not fit in max_context() or an id is out of range.
  // Another thread reading the view needs a Use over forward() and the read.
  Tensor forward(std::span<const int32_t> tokens, bool all_logits = false);

  // ---- Several sequences at once (a server's concurrent streams) ----
  // A sequence is a KV cache of its own beside the one forward() uses,
  // reserved as address space and committed as its positions fill (closing it
  // returns its memory). forward_batch runs one step over several sequences:
  // every linear layer is one matrix product over all their tokens, attention
  // runs per sequence on its own cache. Its logits are those forward() gives
  // for the same tokens up to rounding (a batch takes the GEMM path, which may
  // round x to bf16 where one token's matrix-vector path does not).
  using SequenceId = int64_t;
  struct BatchItem {
    SequenceId sequence = 0;
    std::span<const int32_t> tokens;  // at least one; appended at the sequence's position
  };
  SequenceId open_sequence();
  void close_sequence(SequenceId id);  // ValueError for an id not open
  int64_t sequence_position(SequenceId id) const;
  // Forgets the sequence's positions from `position` on.
  void truncate_sequence(SequenceId id, int64_t position);
  // dst's cache becomes src's first `positions` positions (a shared prompt
  // prefix, computed once); dst's own positions are replaced.
  void copy_sequence(SequenceId src, SequenceId dst, int64_t positions);
  // Float32 logits [items.size(), V] of each item's last token, a view of
  // scratch that the next call overwrites. The items' tokens together are at
  // most max_batch_tokens(); each sequence appears once. ValueError when a
  // sequence's tokens do not fit max_context() or an id is out of range.
  Tensor forward_batch(std::span<const BatchItem> items);
  virtual int64_t max_batch_tokens() const = 0;
  int64_t open_sequences() const;
  // A sequence's state, as an implementation keeps it.
  struct Sequence {
    virtual ~Sequence() = default;
    int64_t position = 0;  // tokens in its cache
    virtual void truncate(int64_t position) = 0;
    virtual void copy_prefix(const Sequence& src, int64_t positions) = 0;  // src: same model's
  };

  // Bytes of weights as held (embedding counted once when tied).
  virtual int64_t weight_bytes() const = 0;
  // Weight bytes the last forward() read (MoE: only the experts selected), the
  // numerator of the decode bandwidth bound.
  virtual int64_t bytes_read_last_forward() const = 0;
  // Bytes of the KV cache at max_context() positions (what a full cache commits).
  virtual int64_t kv_cache_bytes() const = 0;

  // The weights as held, under Hugging Face names. An FP8 linear weight
  // "X.weight" [N, K] float8_e4m3fn comes with "X.weight_scale" [N, 1] float32
  // (compressed-tensors channel layout), so these tensors written to
  // safetensors with a matching config load back without conversion. A
  // weight held as ggml blocks (native) is "X.weight" uint8 [N, row bytes]
  // with "X.weight_block_type", an int64 scalar (kiln::BlockType); no
  // checkpoint format holds those, and from_tensors does not take them.
  virtual std::vector<std::pair<std::string, Tensor>> named_weights() const = 0;

 protected:
  // The work of forward() and reset(), run while the calling thread holds the model.
  virtual Tensor run_forward(std::span<const int32_t> tokens, bool all_logits) = 0;
  virtual void run_reset(int64_t position) = 0;
  // The per-sequence work behind the public calls, run with the model held.
  virtual std::unique_ptr<Sequence> new_sequence() = 0;
  virtual Tensor run_forward_batch(std::span<Sequence* const> seqs, std::span<const BatchItem> items) = 0;
  Sequence& sequence(SequenceId id) const;
  std::vector<std::pair<SequenceId, std::unique_ptr<Sequence>>> sequences_;
  SequenceId next_sequence_ = 1;
  uint64_t resets_ = 0;  // reset() implementations count themselves here

 private:
  std::mutex use_mu_;                    // held by the thread using the model
  std::atomic<std::thread::id> user_{};  // that thread (id() when none)
  bool calling_out_ = false;             // user_ runs a callback (CallOut); user_'s alone
};

}  // namespace kiln::llm
