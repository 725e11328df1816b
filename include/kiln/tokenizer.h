// Byte-level BPE tokenizers as Hugging Face's tokenizer.json and GGUF files
// describe them (Qwen2/Qwen3, Llama 3, SmolLM2, GPT-2 families).
//
//   auto tok = kiln::Tokenizer::from_file("tokenizer.json");
//   std::vector<int32_t> ids = tok.encode("Hello, world!");
//   std::string text = tok.decode(ids);
//
// encode() = added/special tokens matched in the raw text, then per remaining
// piece: normalizer (NFC ...), pre-tokenizer (regex splits, ByteLevel), BPE.
// decode() = byte-level decoding; invalid UTF-8 becomes U+FFFD as in HF.
// A Tokenizer is an immutable, cheaply copied handle; encode/decode are
// thread-safe and run in parallel (the word cache behind encode takes a
// shared lock to read, an exclusive one only to add a word). A StreamDecoder
// holds one stream's pending bytes: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

namespace tok {
struct Impl;
}

// GGUF's tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

// The tokenizer as a GGUF file stores it (tokenizer.ggml.*), so a GGUF reader
// can build a Tokenizer in a few lines. Tokens and merges are in the byte-level
// form ("Ġthe", "Ġ t"); control and user-defined tokens become added tokens
// matched in text (control ones are special).
struct TokenizerParts {
  std::string model = "gpt2";              // tokenizer.ggml.model; only "gpt2" (byte-level BPE)
  std::string pre = "default";             // tokenizer.ggml.pre: "qwen2", "llama-bpe", "smollm", "gpt2", ...
  std::vector<std::string> tokens;         // tokenizer.ggml.tokens
  std::vector<std::string> merges;         // tokenizer.ggml.merges, "a b"
  std::vector<int32_t> token_types;        // tokenizer.ggml.token_type (TokenType values); may be empty
  int32_t bos_id = -1, eos_id = -1, pad_id = -1;
  bool add_bos = false, add_eos = false;
  std::string chat_template;               // tokenizer.chat_template
};

class Tokenizer {
 public:
  // tokenizer.json, and tokenizer_config.json beside it when present (chat
  // template, bos/eos tokens, add_bos_token).
  static Tokenizer from_file(const std::string& path);
  // tokenizer.json text; config_json is tokenizer_config.json text or empty.
  static Tokenizer from_json(std::string_view json, std::string_view config_json = {});
  static Tokenizer from_parts(const TokenizerParts& parts);

  // add_special_tokens: apply the post-processor (e.g. Llama 3's
  // <|begin_of_text|>), as HF's encode(add_special_tokens=True).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;  // vocabulary form
  std::optional<std::string> id_to_token(int32_t id) const;
  int32_t vocab_size() const;  // highest id + 1, added tokens included
  bool is_special(int32_t id) const;

  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  const std::string& chat_template() const;  // empty when none is known
  std::optional<std::string> bos_token() const;
  std::optional<std::string> eos_token() const;

  const tok::Impl& impl() const { return *impl_; }

 private:
  explicit Tokenizer(std::shared_ptr<const tok::Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const tok::Impl> impl_;
};

// Incremental detokenization for streaming: push ids as they are generated and
// get back text that is always whole UTF-8 characters; bytes of a character
// split across tokens are held until it completes. The concatenation of every
// push() and the final flush() equals decode() of all the ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(Tokenizer tokenizer, bool skip_special_tokens = false);
  std::string push(int32_t id);
  std::string flush();  // the held bytes, invalid ones as U+FFFD
  size_t pending_bytes() const { return pending_.size(); }

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::string pending_;
};

// Length of the longest valid UTF-8 prefix of s (Unicode's well-formed table:
// no overlong forms, surrogates or values past U+10FFFF); s.size() when all of
// s is valid.
size_t utf8_valid_prefix(std::string_view s);

}  // namespace kiln
