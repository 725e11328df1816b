// The public Tokenizer: table building shared by both loaders, the GGUF-parts
// constructor, encode/decode, and the streaming decoder.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "io/config_json.h"
#include "io/tokenizer/impl.h"

namespace kiln {
namespace tok {

int32_t Impl::add_vocab_token(const std::string& form, int32_t id) {
  if (id < 0 || id > max_id)
    throw ValueError("[tokenizer] token id " + std::to_string(id) + " out of range (at most " + std::to_string(max_id) +
                     " for this many tokens)");
  if (size_t(id) >= id_to_vocab.size()) {
    id_to_vocab.resize(size_t(id) + 1);
    in_model.resize(size_t(id) + 1, 0);
    present.resize(size_t(id) + 1, 0);
  }
  id_to_vocab[size_t(id)] = form;
  present[size_t(id)] = 1;
  vocab.assign(id);
  return id;
}

void Impl::build_bpe_tables() {
  id_to_bytes.resize(id_to_vocab.size());
  bpe_vocab.reserve(id_to_vocab.size());
  std::fill(std::begin(byte_ids), std::end(byte_ids), -1);
  for (size_t id = 0; id < id_to_vocab.size(); ++id) {
    if (!present[id]) continue;
    bool mapped = false;
    id_to_bytes[id] = bytes_from_vocab_form(id_to_vocab[id], &mapped);
    // Only byte-level tokens can come out of BPE on byte-level pre-tokens.
    if (mapped && in_model[id]) bpe_vocab.insert(int32_t(id));
  }
  for (int b = 0; b < 256; ++b) {
    const char c = char(b);
    byte_ids[b] = bpe_vocab.find(std::string_view(&c, 1));
  }
}

void Impl::add_merge(std::string_view a, std::string_view b, int32_t rank) {
  auto find = [&](std::string_view s) {
    const int32_t id = vocab.find(s);
    if (id < 0)
      throw ValueError("[tokenizer] merge " + std::to_string(rank) + " ('" + std::string(a) + "', '" +
                       std::string(b) + "') uses '" + std::string(s) + "', which is not in the vocabulary");
    return id;
  };
  const int32_t ia = find(a), ib = find(b);
  thread_local std::string ab;
  ab.assign(a).append(b);
  merges.insert(ia, ib, rank, find(ab));
}

void Impl::finish() {
  special.assign(id_to_vocab.size(), 0);
  for (auto& v : added_by_byte) v.clear();
  for (size_t k = 0; k < added.size(); ++k) {
    const AddedToken& t = added[k];
    if (t.special) special[size_t(t.id)] = 1;
    if (!t.content.empty()) added_by_byte[uint8_t(t.content[0])].push_back(uint32_t(k));
  }
  for (auto& v : added_by_byte)
    std::stable_sort(v.begin(), v.end(),
                     [&](uint32_t x, uint32_t y) { return added[x].content.size() > added[y].content.size(); });
}

std::string Impl::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  out.reserve(ids.size() * 4);
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= id_to_bytes.size() || !present[size_t(id)]) continue;  // HF skips unknown ids
    if (skip_special && special[size_t(id)]) continue;
    out += id_to_bytes[size_t(id)];
  }
  return out;
}

}  // namespace tok

Tokenizer Tokenizer::from_file(const std::string& path) {
  // A missing or unreadable tokenizer.json is an OSError with errno (FileNotFoundError,
  // IsADirectoryError ... in Python); tokenizer_config.json is optional.
  const std::string json = io::read_text_file(path, "tokenizer", size_t(1) << 30);
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  std::string config;
  if (std::ifstream f(dir + "tokenizer_config.json", std::ios::binary); f) {
    std::ostringstream ss;
    ss << f.rdbuf();
    config = ss.str();
  }
  return from_json(json, config);
}

Tokenizer Tokenizer::from_json(std::string_view json, std::string_view config_json) {
  return Tokenizer(tok::load_tokenizer_json(json, config_json));
}

Tokenizer Tokenizer::from_parts(const TokenizerParts& p) {
  if (p.model != "gpt2")
    throw NotImplementedError("[tokenizer] GGUF tokenizer model '" + p.model +
                              "' is not supported (only byte-level BPE, 'gpt2')");
  if (!p.token_types.empty() && p.token_types.size() != p.tokens.size())
    throw ValueError("[tokenizer] " + std::to_string(p.token_types.size()) + " token types for " +
                     std::to_string(p.tokens.size()) + " tokens");
  auto impl = std::make_shared<tok::Impl>();
  impl->max_id = int64_t(p.tokens.size());
  impl->pre_steps = tok::pre_steps_for_gguf(p.pre);
  // GGUF does not record the normalizer; Qwen2/Qwen3's tokenizer.json has NFC.
  if (p.pre == "qwen2" || p.pre == "qwen3" || p.pre == "deepseek-r1-qwen" || p.pre == "qwen35")
    impl->normalization = tok::Normalization::nfc;
  for (size_t id = 0; id < p.tokens.size(); ++id) {
    impl->add_vocab_token(p.tokens[id], int32_t(id));
    const auto type = p.token_types.empty() ? TokenType::normal : TokenType(p.token_types[id]);
    if (type == TokenType::control || type == TokenType::user_defined) {
      tok::AddedToken t;
      t.content = p.tokens[id];
      t.id = int32_t(id);
      t.special = type == TokenType::control;
      impl->added.push_back(std::move(t));
    } else {
      impl->in_model[id] = 1;
    }
  }
  impl->build_bpe_tables();
  impl->merges.reserve(p.merges.size());
  for (size_t r = 0; r < p.merges.size(); ++r) {
    const std::string& m = p.merges[r];
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) throw ValueError("[tokenizer] merge " + std::to_string(r) + " '" + m + "' has no space");
    impl->add_merge(std::string_view(m).substr(0, sp), std::string_view(m).substr(sp + 1), int32_t(r));
  }
  auto check_id = [&](int32_t id) -> std::optional<int32_t> {
    if (id < 0) return std::nullopt;
    if (size_t(id) >= p.tokens.size()) throw ValueError("[tokenizer] special token id " + std::to_string(id) + " out of range");
    return id;
  };
  impl->bos = check_id(p.bos_id);
  impl->eos = check_id(p.eos_id);
  impl->pad = check_id(p.pad_id);
  if (p.add_bos && impl->bos) impl->prefix_ids.push_back(*impl->bos);
  if (p.add_eos && impl->eos) impl->suffix_ids.push_back(*impl->eos);
  impl->chat_template = p.chat_template;
  impl->finish();
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (tok::valid_utf8_prefix(text) != text.size())
    throw ValueError("[tokenizer] the text is not valid UTF-8 (at byte " +
                     std::to_string(tok::valid_utf8_prefix(text)) + ")");
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special_tokens) out.insert(out.end(), impl_->prefix_ids.begin(), impl_->prefix_ids.end());
  impl_->encode_text(text, out);
  if (add_special_tokens) out.insert(out.end(), impl_->suffix_ids.begin(), impl_->suffix_ids.end());
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes = impl_->decode_bytes(ids, skip_special_tokens);
  if (tok::valid_utf8_prefix(bytes) == bytes.size()) return bytes;
  return tok::utf8_lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const int32_t id = impl_->vocab.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= impl_->id_to_vocab.size() || !impl_->present[size_t(id)]) return std::nullopt;
  return impl_->id_to_vocab[size_t(id)];
}

int32_t Tokenizer::vocab_size() const { return int32_t(impl_->id_to_vocab.size()); }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && size_t(id) < impl_->special.size() && impl_->special[size_t(id)];
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }
std::optional<std::string> Tokenizer::bos_token() const { return impl_->bos ? id_to_token(*impl_->bos) : std::nullopt; }
std::optional<std::string> Tokenizer::eos_token() const { return impl_->eos ? id_to_token(*impl_->eos) : std::nullopt; }

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special_tokens)
    : tokenizer_(std::move(tokenizer)), skip_special_(skip_special_tokens) {}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_.impl().decode_bytes(std::span<const int32_t>(&id, 1), skip_special_);
  // Hold back only a tail that may still become a character; everything before
  // it decodes the same now as it will at the end.
  const size_t keep = tok::incomplete_utf8_tail(pending_);
  std::string out = tok::utf8_lossy(std::string_view(pending_).substr(0, pending_.size() - keep));
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = tok::utf8_lossy(pending_);
  pending_.clear();
  return out;
}

size_t utf8_valid_prefix(std::string_view s) { return tok::valid_utf8_prefix(s); }

}  // namespace kiln
