// Normalizers (utf8proc) and the regex Split / ByteLevel pre-tokenizers (PCRE2 JIT).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "io/tokenizer/impl.h"

namespace kiln::tok {

class Regex {
 public:
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Regex() {
    if (code) pcre2_code_free(code);
  }
};

namespace {

// Oniguruma's \s (what HF's regexes are written against) is the Unicode
// White_Space property; PCRE2's also takes U+180E. Spell it out.
constexpr const char* kWhiteSpace =
    R"(\t\n\x0B\f\r\x20\x85\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string onig_to_pcre2(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (n == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (n == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ] first
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

std::shared_ptr<Regex> compile_regex(const std::string& source, bool literal) {
  const std::string pattern = literal ? source : onig_to_pcre2(source);
  int err = 0;
  PCRE2_SIZE offset = 0;
  // UCP: \s, \d, \w and the POSIX classes follow Unicode as Oniguruma's do in HF.
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK;
  if (literal) options |= PCRE2_LITERAL;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                                   &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw ValueError("[tokenizer] cannot compile the pre-tokenizer regex at offset " + std::to_string(offset) +
                     ": " + reinterpret_cast<const char*>(msg) + " (pattern " + source + ")");
  }
  auto r = std::make_shared<Regex>();
  r->code = code;
  r->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return r;
}

namespace {

struct MatchData {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  ~MatchData() { pcre2_match_data_free(md); }
};

// Non-empty matches of re in s as [begin, end) offsets.
void find_matches(const Regex& re, std::string_view s, std::vector<std::pair<size_t, size_t>>& out) {
  thread_local MatchData data;
  out.clear();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t start = 0;
  while (start <= s.size()) {
    const int rc = re.jit ? pcre2_jit_match(re.code, subject, s.size(), start, 0, data.md, nullptr)
                          : pcre2_match(re.code, subject, s.size(), start, PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw ValueError("[tokenizer] regex match failed with PCRE2 error " + std::to_string(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      start = e;
    } else {  // empty match: step over one character
      start = b + 1;
      while (start < s.size() && (uint8_t(s[start]) & 0xC0) == 0x80) ++start;
    }
  }
}

struct Seg {
  size_t b, e;
  bool match;
};

void split_piece(const PreStep& step, std::string_view s, std::vector<std::string_view>& out) {
  thread_local std::vector<std::pair<size_t, size_t>> m;
  thread_local std::vector<Seg> segs;
  find_matches(*step.regex, s, m);
  segs.clear();
  size_t pos = 0;
  for (auto [b, e] : m) {
    if (b > pos) segs.push_back({pos, b, false});
    segs.push_back({b, e, true});
    pos = e;
  }
  if (pos < s.size()) segs.push_back({pos, s.size(), false});
  if (step.invert)
    for (Seg& g : segs) g.match = !g.match;
  auto piece = [&](size_t b, size_t e) {
    if (e > b) out.push_back(s.substr(b, e - b));
  };
  switch (step.behavior) {
    case SplitBehavior::isolated:
      for (const Seg& g : segs) piece(g.b, g.e);
      break;
    case SplitBehavior::removed:
      for (const Seg& g : segs)
        if (!g.match) piece(g.b, g.e);
      break;
    case SplitBehavior::merged_with_previous: {
      size_t b = 0;
      bool open = false;
      for (const Seg& g : segs) {
        if (g.match) {
          piece(open ? b : g.b, g.e);
          open = false;
        } else {
          if (open) piece(b, g.b);
          b = g.b;
          open = true;
        }
      }
      if (open) piece(b, s.size());
      break;
    }
    case SplitBehavior::merged_with_next: {
      size_t b = 0;
      bool open = false;
      for (const Seg& g : segs) {
        if (g.match) {
          if (open) piece(b, g.b);
          b = g.b;
          open = true;
        } else if (!open) {
          piece(g.b, g.e);
        }
      }
      if (open) piece(b, s.size());
      break;
    }
    case SplitBehavior::contiguous: {
      for (size_t i = 0; i < segs.size();) {
        size_t j = i + 1;
        if (segs[i].match)
          while (j < segs.size() && segs[j].match) ++j;
        piece(segs[i].b, segs[j - 1].e);
        i = j;
      }
      break;
    }
  }
}

}  // namespace

void pre_tokenize(const std::vector<PreStep>& steps, std::string_view text, std::vector<std::string_view>& pieces,
                  std::deque<std::string>& arena) {
  pieces.clear();
  if (!text.empty()) pieces.push_back(text);
  thread_local std::vector<std::string_view> next;
  for (const PreStep& step : steps) {
    next.clear();
    for (std::string_view p : pieces) {
      if (step.kind == PreStep::byte_level && step.add_prefix_space && p.front() != ' ') {
        arena.push_back(" " + std::string(p));
        p = arena.back();
      }
      if (step.regex)
        split_piece(step, p, next);
      else
        next.push_back(p);
    }
    pieces.swap(next);
  }
}

namespace {

// NFC leaves text alone when no character in it can change or combine. A
// character is "quiet" when it is its own NFC, has combining class 0 and is
// not in a block whose class-0 characters compose with what precedes them
// (Indic vowel signs, Hangul jamo, kana voicing marks, ...). Answers are
// computed once per code point.
class NfcQuiet {
 public:
  bool operator()(uint32_t cp) {
    if (cp < 0x300) return true;
    if (cp >= 0x110000) return false;
    uint8_t v = table_[cp].load(std::memory_order_relaxed);
    if (v == 0) {
      v = compute(cp) ? 1 : 2;
      table_[cp].store(v, std::memory_order_relaxed);
    }
    return v == 1;
  }

 private:
  static bool compute(uint32_t cp) {
    if ((cp >= 0x900 && cp <= 0xDFF) || (cp >= 0x1000 && cp <= 0x109F) || (cp >= 0x1100 && cp <= 0x11FF) ||
        (cp >= 0x1B00 && cp <= 0x1B7F) || (cp >= 0x3099 && cp <= 0x309A) || (cp >= 0x11000 && cp <= 0x11FFF))
      return false;
    if (utf8proc_get_property(utf8proc_int32_t(cp))->combining_class != 0) return false;
    utf8proc_uint8_t buf[8];
    const utf8proc_ssize_t n = utf8proc_encode_char(utf8proc_int32_t(cp), buf);
    utf8proc_uint8_t* dst = nullptr;
    const utf8proc_ssize_t m =
        utf8proc_map(buf, n, &dst, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    const bool same = m == n && std::memcmp(dst, buf, size_t(n)) == 0;
    std::free(dst);
    return same;
  }
  std::unique_ptr<std::atomic<uint8_t>[]> table_{new std::atomic<uint8_t>[0x110000]()};
};

utf8proc_ssize_t next_char(std::string_view s, size_t i, uint32_t* cp) {
  const uint8_t c = uint8_t(s[i]);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  utf8proc_int32_t v;
  const utf8proc_ssize_t n =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), utf8proc_ssize_t(s.size() - i), &v);
  *cp = uint32_t(v);
  return n;
}

std::string utf8proc_form(std::string_view s, int options) {
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                            utf8proc_ssize_t(s.size()), &dst, utf8proc_option_t(options));
  if (len < 0) throw ValueError(std::string("[tokenizer] cannot normalize the text: ") + utf8proc_errmsg(len));
  std::string out(reinterpret_cast<const char*>(dst), size_t(len));
  std::free(dst);
  return out;
}

// NFC one region at a time: a quiet character is a boundary NFC never moves or
// merges across, so only the runs of other characters (with the quiet
// character before them, which they may compose with) go through utf8proc.
bool nfc_by_regions(std::string_view s, std::string& out) {
  static NfcQuiet quiet;
  bool changed = false;
  size_t copied = 0;      // s[0, copied) is accounted for in out
  size_t prev_start = 0;  // start of the previous character
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const utf8proc_ssize_t n = next_char(s, i, &cp);
    if (n <= 0) throw ValueError("[tokenizer] cannot normalize the text: invalid UTF-8");
    if (quiet(cp)) {
      prev_start = i;
      i += size_t(n);
      continue;
    }
    const size_t b = std::max(copied, i == 0 ? 0 : prev_start);
    size_t e = i + size_t(n);
    while (e < s.size()) {
      const utf8proc_ssize_t m = next_char(s, e, &cp);
      if (m <= 0) throw ValueError("[tokenizer] cannot normalize the text: invalid UTF-8");
      if (quiet(cp)) break;
      e += size_t(m);
    }
    const std::string part = utf8proc_form(s.substr(b, e - b), UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (!changed && part == s.substr(b, e - b)) {  // nothing changed yet: keep reading in place
      i = e;
      prev_start = e;
      continue;
    }
    if (!changed) {
      out.assign(s.substr(0, b));
      changed = true;
    } else {
      out.append(s.substr(copied, b - copied));
    }
    out += part;
    copied = e;
    i = e;
    prev_start = e;
  }
  if (changed) out.append(s.substr(copied));
  return changed;
}

}  // namespace

bool normalize(Normalization n, std::string_view s, std::string& out) {
  if (n == Normalization::none) return false;
  bool ascii = true;
  for (unsigned char c : s) ascii &= c < 0x80;
  if (ascii) return false;  // ASCII is stable under every form
  if (n == Normalization::nfc) return nfc_by_regions(s, out);
  int options = UTF8PROC_STABLE;
  if (n == Normalization::nfc || n == Normalization::nfkc) options |= UTF8PROC_COMPOSE;
  else options |= UTF8PROC_DECOMPOSE;
  if (n == Normalization::nfkc || n == Normalization::nfkd) options |= UTF8PROC_COMPAT;
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                            utf8proc_ssize_t(s.size()), &dst, utf8proc_option_t(options));
  if (len < 0) throw ValueError(std::string("[tokenizer] cannot normalize the text: ") + utf8proc_errmsg(len));
  out.assign(reinterpret_cast<const char*>(dst), size_t(len));
  std::free(dst);
  return true;
}

std::string normalize(Normalization n, std::string_view s) {
  std::string out;
  return normalize(n, s, out) ? out : std::string(s);
}

std::vector<PreStep> pre_steps_for_gguf(const std::string& pre) {
  auto split = [](const char* pattern) {
    PreStep s;
    s.regex = compile_regex(pattern, false);
    return s;
  };
  auto byte_level = [](bool use_regex) {
    PreStep s;
    s.kind = PreStep::byte_level;
    if (use_regex) s.regex = compile_regex(kGpt2Pattern, false);
    return s;
  };
  static const char* const kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static const char* const kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "default" || pre == "gpt2" || pre == "gpt-2" || pre == "olmo" || pre == "mpt")
    return {byte_level(true)};
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "llama4")
    return {split(kLlama3), byte_level(false)};
  if (pre == "qwen2" || pre == "qwen3" || pre == "deepseek-r1-qwen" || pre == "qwen35")
    return {split(kQwen2), byte_level(false)};
  if (pre == "smollm" || pre == "starcoder" || pre == "refact")
    return {split(R"(\p{N})"), byte_level(true)};
  throw NotImplementedError("[tokenizer] unsupported GGUF pre-tokenizer '" + pre +
                            "' (supported: default, gpt2, olmo, llama-bpe, qwen2, smollm)");
}

}  // namespace kiln::tok
