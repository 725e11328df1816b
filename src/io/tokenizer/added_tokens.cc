// Added and special tokens ("<|im_start|>") are found in the raw text before
// normalization and pre-tokenization: at the leftmost position where any
// matches, the longest wins (HF's leftmost-longest Aho-Corasick).
#include <algorithm>
#include <cctype>

#include "io/tokenizer/impl.h"

namespace kiln::tok {
namespace {

bool is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
bool is_word_byte(unsigned char c) { return c >= 0x80 || std::isalnum(c) || c == '_'; }

}  // namespace

void Impl::encode_text(std::string_view text, std::vector<int32_t>& out) const {
  if (added.empty()) {
    encode_plain(text, out);
    return;
  }
  size_t seg = 0;  // start of the text not yet encoded
  size_t i = 0;
  while (i < text.size()) {
    const auto& cands = added_by_byte[uint8_t(text[i])];
    const AddedToken* hit = nullptr;
    for (uint32_t k : cands) {
      const AddedToken& t = added[k];
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        const size_t e = i + t.content.size();
        if ((i > 0 && is_word_byte(text[i - 1])) || (e < text.size() && is_word_byte(text[e]))) continue;
      }
      hit = &t;
      break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t before_end = i;
    if (hit->lstrip)
      while (before_end > seg && is_space(text[before_end - 1])) --before_end;
    encode_plain(text.substr(seg, before_end - seg), out);
    out.push_back(hit->id);
    i += hit->content.size();
    if (hit->rstrip)
      while (i < text.size() && is_space(text[i])) ++i;
    seg = i;
  }
  encode_plain(text.substr(seg), out);
}

}  // namespace kiln::tok
