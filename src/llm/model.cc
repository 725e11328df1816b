// Model::load: picks the source (GGUF file, Hugging Face / kiln directory,
// safetensors file) and tokenizer, then builds the transformer from it.
#include "kiln/llm/model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kiln/error.h"
#include "kiln/io/gguf.h"
#include "kiln/io/gguf_tokenizer.h"
#include "llm/lora_adapter.h"
#include "llm/transformer.h"

namespace kiln::llm {

namespace fs = std::filesystem;

WeightFormat weight_format_from_name(const std::string& name) {
  if (name == "native") return WeightFormat::Native;
  if (name == "fp8" || name == "float8_e4m3fn") return WeightFormat::FP8;
  if (name == "bf16" || name == "bfloat16") return WeightFormat::BF16;
  if (name == "f32" || name == "float32") return WeightFormat::F32;
  KILN_CHECK(false, ValueError, "[llm] unknown weight dtype '" << name << "' (native, fp8, bf16 or f32)");
  return WeightFormat::FP8;
}

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::Native:
      return "native";
    case WeightFormat::FP8:
      return "fp8";
    case WeightFormat::BF16:
      return "bf16";
    case WeightFormat::F32:
      return "f32";
  }
  return "?";
}

Model::Use::Use(Model& model, const char* op) : model_(model) {
  if (model.user_.load(std::memory_order_acquire) == std::this_thread::get_id()) {
    // Only this thread sets user_ to its own id: the model is held by this thread.
    KILN_CHECK(
        !model.calling_out_, Error,
        op << " the model is in use by this thread: a callback that runs while the model generates "
              "(on_piece) cannot call the same model; use another model or call it after the generation");
    return;
  }
  model.use_mu_.lock();
  model.user_.store(std::this_thread::get_id(), std::memory_order_release);
  outer_ = true;
}

Model::Use::~Use() {
  if (!outer_) return;
  model_.user_.store(std::thread::id(), std::memory_order_release);
  model_.use_mu_.unlock();
}

Model::CallOut::CallOut(Use& use) : model_(use.model_), before_(use.model_.calling_out_) {
  model_.calling_out_ = true;
}

Model::CallOut::~CallOut() { model_.calling_out_ = before_; }

Tensor Model::forward(std::span<const int32_t> tokens, bool all_logits) {
  const Use use(*this, "[LanguageModel.forward]");
  return run_forward(tokens, all_logits);
}

void Model::reset(int64_t position) {
  const Use use(*this, "[LanguageModel.reset]");
  run_reset(position);
}

Model::Sequence& Model::sequence(SequenceId id) const {
  for (const auto& [i, s] : sequences_)
    if (i == id) return *s;
  KILN_CHECK(false, ValueError, "[llm] sequence " << id << " is not open");
  throw;  // unreachable
}

Model::SequenceId Model::open_sequence() {
  const Use use(*this, "[LanguageModel.open_sequence]");
  sequences_.emplace_back(next_sequence_, new_sequence());
  return next_sequence_++;
}

void Model::close_sequence(SequenceId id) {
  const Use use(*this, "[LanguageModel.close_sequence]");
  (void)sequence(id);
  std::erase_if(sequences_, [&](const auto& p) { return p.first == id; });
}

int64_t Model::open_sequences() const { return int64_t(sequences_.size()); }

int64_t Model::sequence_position(SequenceId id) const { return sequence(id).position; }

void Model::truncate_sequence(SequenceId id, int64_t position) {
  const Use use(*this, "[LanguageModel.truncate_sequence]");
  Sequence& s = sequence(id);
  KILN_CHECK(position >= 0 && position <= s.position, ValueError,
             "[llm] truncate position " << position << " outside [0, " << s.position << "]");
  s.truncate(position);
}

void Model::copy_sequence(SequenceId src, SequenceId dst, int64_t positions) {
  const Use use(*this, "[LanguageModel.copy_sequence]");
  const Sequence& s = sequence(src);
  Sequence& d = sequence(dst);
  KILN_CHECK(src != dst && positions >= 0 && positions <= s.position, ValueError,
             "[llm] cannot copy " << positions << " positions of sequence " << src << " (" << s.position
                                  << " filled) into sequence " << dst);
  d.copy_prefix(s, positions);
}

Tensor Model::forward_batch(std::span<const BatchItem> items) {
  const Use use(*this, "[LanguageModel.forward_batch]");
  KILN_CHECK(!items.empty(), ValueError, "[llm] forward_batch needs at least one item");
  std::vector<Sequence*> seqs;
  int64_t rows = 0;
  for (const auto& it : items) {
    Sequence* s = &sequence(it.sequence);
    KILN_CHECK(std::find(seqs.begin(), seqs.end(), s) == seqs.end(), ValueError,
               "[llm] sequence " << it.sequence << " appears twice in one forward_batch");
    KILN_CHECK(!it.tokens.empty(), ValueError, "[llm] sequence " << it.sequence << " has no tokens");
    KILN_CHECK(s->position + int64_t(it.tokens.size()) <= max_context(), ValueError,
               "[llm] " << it.tokens.size() << " tokens at position " << s->position << " of sequence "
                        << it.sequence << " do not fit the context of " << max_context() << " tokens");
    seqs.push_back(s);
    rows += int64_t(it.tokens.size());
  }
  KILN_CHECK(rows <= max_batch_tokens(), ValueError,
             "[llm] forward_batch of " << rows << " tokens; at most " << max_batch_tokens() << " per call");
  return run_forward_batch(seqs, items);
}

namespace {

bool has_gguf_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char m[4] = {};
  return f.read(m, 4) && std::memcmp(m, "GGUF", 4) == 0;
}

// Runs fn, turning any kiln error that does not already start "[llm]" into one
// that does and names the path (same exception type).
template <typename F>
auto with_context(const std::string& path, F&& fn) {
  auto msg = [&](const std::exception& e) {
    const std::string w = e.what();
    return w.rfind("[llm]", 0) == 0 ? w : "[llm] cannot load " + path + ": " + w;
  };
  try {
    return fn();
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(msg(e));
  } catch (const TypeError& e) {
    throw TypeError(msg(e));
  } catch (const IndexError& e) {
    throw ValueError(msg(e));
  } catch (const ValueError& e) {
    throw ValueError(msg(e));
  } catch (const Error& e) {
    throw Error(msg(e));
  }
}

}  // namespace

namespace {

// The base model's tensors, with the adapter (when one is given) merged in.
std::unique_ptr<detail::TensorSource> with_adapter(std::unique_ptr<detail::TensorSource> src,
                                                   const LoadOptions& options) {
  if (options.adapter.empty()) return src;
  return detail::lora_source(std::move(src), detail::load_lora_adapter(options.adapter));
}

}  // namespace

std::string lora_adapter_base(const std::string& dir) {
  std::error_code ec;
  if (!detail::is_lora_adapter_dir(dir) || fs::exists(fs::path(dir) / "config.json", ec)) return {};
  return detail::lora_base_model_path(detail::load_lora_adapter(dir));
}

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  KILN_CHECK(fs::exists(path, ec), ValueError, "[llm] model path " << path << " does not exist");
  if (!options.adapter.empty())
    KILN_CHECK(detail::is_lora_adapter_dir(options.adapter), ValueError,
               "[llm] adapter " << options.adapter << " is not a directory holding adapter_config.json");
  if (const std::string base = lora_adapter_base(path); !base.empty()) {
    // An adapter directory alone: the base model it names, with it merged.
    KILN_CHECK(options.adapter.empty(), ValueError,
               "[llm] " << path << " is an adapter directory; give its base model as MODEL to add --adapter "
                        << options.adapter);
    LoadOptions o = options;
    o.adapter = path;
    return load(base, o);
  }
  return with_context(path, [&]() -> std::unique_ptr<Model> {
    if (fs::is_regular_file(path, ec) && has_gguf_magic(path)) {
      const io::GGUFFile g = io::GGUFFile::open(path);
      const io::ModelConfig cfg = io::config_from_gguf(g);
      std::optional<Tokenizer> tok;
      try {
        tok = io::load_gguf_tokenizer(g);
      } catch (const Error&) {
        // A GGUF without a (supported) tokenizer still runs on token ids.
      }
      auto src = with_adapter(detail::gguf_source(path), options);
      return std::make_unique<detail::Transformer>(cfg, *src, options, std::move(tok), path);
    }
    KILN_CHECK(!fs::is_regular_file(path, ec) || fs::path(path).extension() == ".safetensors" ||
                   fs::path(path).filename() == "model.safetensors.index.json",
               ValueError, "[llm] " << path << " is neither a GGUF file nor a model directory");
    const fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
    KILN_CHECK(fs::exists(dir / "config.json", ec), ValueError,
               "[llm] " << path
                        << " holds no config.json (expected a Hugging Face model directory or a .gguf file)");
    const io::ModelConfig cfg = io::load_hf_config(dir.string());
    std::optional<Tokenizer> tok;
    if (fs::exists(dir / "tokenizer.json", ec)) tok = Tokenizer::from_file((dir / "tokenizer.json").string());
    auto src = with_adapter(detail::safetensors_source(path), options);
    return std::make_unique<detail::Transformer>(cfg, *src, options, std::move(tok), path);
  });
}

std::unique_ptr<Model> Model::from_tensors(const io::ModelConfig& config,
                                           std::vector<std::pair<std::string, Tensor>> tensors,
                                           const LoadOptions& options, std::optional<Tokenizer> tokenizer) {
  auto src = detail::memory_source(std::move(tensors));
  return std::make_unique<detail::Transformer>(config, *src, options, std::move(tokenizer), "<tensors>");
}

}  // namespace kiln::llm
