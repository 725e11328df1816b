// GPT-2's byte-level alphabet and the UTF-8 helpers the tokenizer needs.
#include <array>

#include "io/tokenizer/impl.h"

namespace kiln::tok {
namespace {

// Printable bytes map to themselves; the other 68 (controls, space, DEL,
// NBSP, soft hyphen ...) to U+0100.. in byte order, so every byte is a
// visible character in vocab files.
struct ByteTables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> from_cp{};  // code points < 324 only
  ByteTables() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      to_cp[b] = printable ? uint32_t(b) : next++;
      from_cp[to_cp[b]] = int16_t(b);
    }
  }
};
const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

// Decodes one UTF-8 character of a valid string; returns its length.
size_t next_cp(std::string_view s, size_t i, uint32_t* cp) {
  const uint8_t c = uint8_t(s[i]);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  if (i + n > s.size()) n = s.size() - i;
  uint32_t v = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) v = (v << 6) | (uint8_t(s[i + k]) & 0x3F);
  *cp = v;
  return n;
}

// Length of the valid UTF-8 sequence at s[i], 0 if invalid; *maximal gets the
// length of the maximal subpart (prefix of a valid sequence) when invalid.
size_t utf8_seq(std::string_view s, size_t i, size_t* maximal) {
  const uint8_t c = uint8_t(s[i]);
  *maximal = 1;
  if (c < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) return 0;
    const uint8_t d = uint8_t(s[i + k]);
    const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (d < l || d > h) return 0;
    *maximal = k + 1;
  }
  return n;
}

}  // namespace

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

uint32_t byte_to_codepoint(uint8_t b) { return tables().to_cp[b]; }

int byte_from_codepoint(uint32_t cp) { return cp < 324 ? tables().from_cp[cp] : -1; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string bytes_from_vocab_form(std::string_view token, bool* all_mapped) {
  std::string out;
  out.reserve(token.size());
  if (valid_utf8_prefix(token) != token.size()) {
    if (all_mapped) *all_mapped = false;
    return std::string(token);
  }
  for (size_t i = 0; i < token.size();) {
    uint32_t cp;
    i += next_cp(token, i, &cp);
    const int b = byte_from_codepoint(cp);
    if (b < 0) {
      if (all_mapped) *all_mapped = false;
      return std::string(token);
    }
    out += char(b);
  }
  if (all_mapped) *all_mapped = true;
  return out;
}

std::string vocab_form_from_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_codepoint(uint8_t(c)));
  return out;
}

size_t valid_utf8_prefix(std::string_view s) {
  size_t i = 0, maximal;
  while (i < s.size()) {
    // ASCII runs 8 bytes at a time
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const size_t n = utf8_seq(s, i, &maximal);
    if (n == 0) return i;
    i += n;
  }
  return i;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0, maximal;
  while (i < s.size()) {
    const size_t n = utf8_seq(s, i, &maximal);
    if (n) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += maximal;
    }
  }
  return out;
}

size_t incomplete_utf8_tail(std::string_view s) {
  // A tail of 1-3 bytes that is a proper prefix of some valid sequence.
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const size_t i = s.size() - k;
    const uint8_t c = uint8_t(s[i]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    if (c < 0xC2 || c > 0xF4) return 0;
    size_t maximal;
    const size_t n = utf8_seq(s, i, &maximal);
    return (n == 0 && maximal == k) ? k : 0;
  }
  return 0;
}

}  // namespace kiln::tok
