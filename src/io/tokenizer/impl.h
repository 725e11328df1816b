// The tokenizer's internal state, shared by the files in src/io/tokenizer.
// Tokens are kept in two forms: the vocabulary form as written in the file
// ("Ġthe") and the raw bytes it stands for (" the"). BPE runs on raw bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/error.h"
#include "kiln/tokenizer.h"

namespace kiln::tok {

// ---- byte-level / UTF-8 helpers (byte_level.cc) ----------------------------------
// GPT-2's byte -> printable code point map and back (-1: not a byte-level char).
uint32_t byte_to_codepoint(uint8_t b);
int byte_from_codepoint(uint32_t cp);
// Vocabulary form -> bytes: every char mapped back; a token with any char
// outside the map stands for its own UTF-8 bytes (as HF's ByteLevel decoder).
std::string bytes_from_vocab_form(std::string_view token, bool* all_mapped = nullptr);
std::string vocab_form_from_bytes(std::string_view bytes);
void append_utf8(std::string& out, uint32_t cp);
// Length of the longest valid UTF-8 prefix of s.
size_t valid_utf8_prefix(std::string_view s);
// Lossy UTF-8: each maximal invalid subpart becomes U+FFFD (Rust's from_utf8_lossy).
std::string utf8_lossy(std::string_view s);
// Bytes at the end of s that could still become a valid character (0-3).
size_t incomplete_utf8_tail(std::string_view s);

// ---- merges: (left id, right id) -> (rank, merged id), open addressing ------------
class MergeTable {
 public:
  void reserve(size_t n);
  void insert(int32_t a, int32_t b, int32_t rank, int32_t merged);
  // false when the pair has no merge.
  bool find(int32_t a, int32_t b, int32_t* rank, int32_t* merged) const {
    if (slots_.empty()) return false;
    const uint64_t key = pack(a, b);
    size_t i = hash(key) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == kEmpty) return false;
      if (s.key == key) {
        *rank = s.rank;
        *merged = s.merged;
        return true;
      }
      i = (i + 1) & mask_;
    }
  }
  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0, merged = 0;
  };
  static uint64_t pack(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return size_t(k);
  }
  void grow();
  std::vector<Slot> slots_;
  size_t mask_ = 0, count_ = 0;
};

// ---- string -> id over strings kept in a vector, open addressing -------------------
// (a node-based unordered_map made loading the 151k-token vocabularies slow)
class StringIndex {
 public:
  explicit StringIndex(const std::vector<std::string>* keys) : keys_(keys) {}
  void reserve(size_t n);
  void insert(int32_t id);  // keys[id]; an existing equal key keeps its id
  void assign(int32_t id);  // keys[id]; an existing equal key now maps to id
  int32_t find(std::string_view s) const {  // -1 if absent
    if (slots_.empty()) return -1;
    const uint64_t h = std::hash<std::string_view>{}(s);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& x = slots_[i];
      if (x.id < 0) return -1;
      if (x.tag == uint32_t(h >> 32) && (*keys_)[size_t(x.id)] == s) return x.id;
    }
  }
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint32_t tag = 0;
    int32_t id = -1;
  };
  void put(int32_t id, bool overwrite);
  const std::vector<std::string>* keys_;
  std::vector<Slot> slots_;
  size_t mask_ = 0, count_ = 0;
};

// ---- pre-tokenizer steps ------------------------------------------------------
enum class SplitBehavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };

class Regex;  // PCRE2 pattern, JIT-compiled (pretokenize.cc)
std::shared_ptr<Regex> compile_regex(const std::string& pattern, bool literal);

struct PreStep {
  enum Kind { split, byte_level } kind = split;
  std::shared_ptr<Regex> regex;  // split; byte_level with use_regex (GPT-2 pattern)
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;
  bool add_prefix_space = false;  // byte_level
};

enum class Normalization { none, nfc, nfd, nfkc, nfkd };
std::string normalize(Normalization n, std::string_view s);
// false (out untouched) when s is already normal.
bool normalize(Normalization n, std::string_view s, std::string& out);

// Splits text by the steps into pre-tokens (views into text or into arena,
// which holds pieces given a prefix space).
void pre_tokenize(const std::vector<PreStep>& steps, std::string_view text, std::vector<std::string_view>& pieces,
                  std::deque<std::string>& arena);

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// The regex HF's ByteLevel pre-tokenizer uses with use_regex: true.
extern const char* const kGpt2Pattern;
// GGUF tokenizer.ggml.pre -> the pre-tokenizer steps HF's tokenizer.json uses.
std::vector<PreStep> pre_steps_for_gguf(const std::string& pre);

struct Impl {
  // vocabulary form (id -> "Ġthe") and raw bytes (id -> " the")
  std::vector<std::string> id_to_vocab;
  std::vector<std::string> id_to_bytes;
  std::vector<uint8_t> special;                     // id -> 1 if special added token
  std::vector<uint8_t> in_model;                    // id -> 1 if a BPE-model token (not an added one)
  std::vector<uint8_t> present;                     // id -> 1 if the id has a token
  StringIndex vocab{&id_to_vocab};                  // vocabulary form -> id (incl. added)
  StringIndex bpe_vocab{&id_to_bytes};              // raw bytes -> id (model vocab only)
  int32_t byte_ids[256];                            // single byte -> id, -1 if absent
  MergeTable merges;
  bool ignore_merges = false;
  // Ids are dense in real files; a file naming id 2^30 must not make us allocate for it.
  int64_t max_id = 0;

  Normalization normalization = Normalization::none;
  std::vector<PreStep> pre_steps;

  std::vector<AddedToken> added;
  // first byte -> indices into added, longest content first
  std::vector<std::vector<uint32_t>> added_by_byte = std::vector<std::vector<uint32_t>>(256);

  // post-processor (add_special_tokens): ids before and after the sequence
  std::vector<int32_t> prefix_ids, suffix_ids;

  std::optional<int32_t> bos, eos, pad;
  std::string chat_template;

  // word (raw bytes) -> ids
  mutable std::shared_mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;
  static constexpr size_t kCacheCap = 1 << 17;

  // setup helpers (tokenizer.cc)
  // Loading order: add_vocab_token for every token (in_model set for model
  // ones), build_bpe_tables, add_merge in rank order, fill added, finish.
  int32_t add_vocab_token(const std::string& form, int32_t id);
  void build_bpe_tables();
  void add_merge(std::string_view a, std::string_view b, int32_t rank);
  void finish();

  // encode pieces
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;  // no added tokens
  void bpe_word(std::string_view word, std::vector<int32_t>& out) const;
  void encode_text(std::string_view text, std::vector<int32_t>& out) const;   // with added tokens
  std::string decode_bytes(std::span<const int32_t> ids, bool skip_special) const;
};

// tokenizer.json (and tokenizer_config.json) -> Impl (load_json.cc)
std::shared_ptr<Impl> load_tokenizer_json(std::string_view json, std::string_view config_json);

}  // namespace kiln::tok
