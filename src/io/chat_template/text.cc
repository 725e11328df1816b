// Python str operations for chat templates: linear-time search (glibc's
// memmem uses the two-way algorithm), per-code-point strip and replace.
#include "io/chat_template/text.h"

#include <string.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_set>

#include "io/chat_template/limits.h"

namespace kiln::jinja::text {

int64_t count_cps(std::string_view s) {
  charge_scan(s.size());
  int64_t n = !s.empty() && is_cont(s[0]);
  for (char c : s) n += !is_cont(c);
  return n;
}

std::vector<size_t> cp_offsets(std::string_view s) {
  charge_scan(s.size());
  std::vector<size_t> off;
  size_t i = 0;
  for (; i < s.size(); i = cp_end(s, i)) {
    charge_bytes(sizeof(size_t));
    off.push_back(i);
  }
  off.push_back(s.size());
  return off;
}

size_t cp_offset(std::string_view s, int64_t k) {
  size_t i = 0;
  for (; k > 0 && i < s.size(); --k) i = cp_end(s, i);
  charge_scan(i);
  return std::min(i, s.size());
}

size_t find(std::string_view hay, std::string_view needle, size_t from) {
  if (from > hay.size()) return std::string::npos;
  if (needle.empty()) return from;
  // memmem over windows that double from a few needle lengths, so that the
  // work to the next match is linear in its distance even where memmem checks
  // its whole haystack first (AddressSanitizer's does): one call over the rest
  // of a long text per match would make split or count quadratic there.
  const size_t m = needle.size();
  size_t pos = from, window = std::max<size_t>(4 * m, 256);
  while (true) {
    const size_t len = std::min(window, hay.size() - pos);
    const void* p = len < m ? nullptr : memmem(hay.data() + pos, len, needle.data(), m);
    if (p) {
      const size_t at = size_t(static_cast<const char*>(p) - hay.data());
      charge_scan(at + m - from);
      return at;
    }
    if (pos + len == hay.size()) {
      charge_scan(hay.size() - from);
      return std::string::npos;
    }
    pos += len - (m - 1);  // a match may straddle the window's end
    window *= 2;
  }
}

size_t rfind(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return std::string::npos;
  // The leftmost match in the reversed text is the rightmost one in the text.
  const std::string rh(hay.rbegin(), hay.rend()), rn(needle.rbegin(), needle.rend());
  const size_t at = text::find(rh, rn);
  return at == std::string::npos ? at : hay.size() - at - needle.size();
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  charge_scan(s.size());
  size_t b = 0, e = s.size();
  const bool ws = !chars || chars->is_none();
  const std::string set = ws ? std::string() : chars->str();
  charge_scan(set.size());
  if (ws || std::all_of(set.begin(), set.end(), [](char c) { return uint8_t(c) < 0x80; })) {
    // ASCII bytes never occur inside a multi-byte code point: strip bytes.
    std::array<bool, 256> drop{};
    if (ws) {
      for (char c : std::string(" \t\n\r\f\v")) drop[uint8_t(c)] = true;
    } else {
      for (char c : set) drop[uint8_t(c)] = true;
    }
    if (left)
      while (b < e && drop[uint8_t(s[b])]) ++b;
    if (right)
      while (e > b && drop[uint8_t(s[e - 1])]) --e;
    return s.substr(b, e - b);
  }
  std::unordered_set<std::string_view> cps;
  for (size_t i = 0; i < set.size(); i = cp_end(set, i))
    cps.insert(std::string_view(set).substr(i, cp_end(set, i) - i));
  const std::vector<size_t> off = cp_offsets(s);
  size_t lo = 0, hi = off.size() - 1;  // code points [lo, hi)
  auto cp = [&](size_t k) { return std::string_view(s).substr(off[k], off[k + 1] - off[k]); };
  if (left)
    while (lo < hi && cps.count(cp(lo))) ++lo;
  if (right)
    while (hi > lo && cps.count(cp(hi - 1))) --hi;
  return s.substr(off[lo], off[hi] - off[lo]);
}

namespace {

List split_forward(const std::string& s, const Value* sep, int64_t maxsplit) {
  List out;
  auto piece = [&](size_t at, size_t n) {
    charge_bytes(sizeof(Value));  // a text of separators is a list of empty strings
    out.push_back(Value(s.substr(at, n)));
  };
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty pieces
    charge_scan(s.size());
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        piece(i, s.size() - i);  // Python keeps the rest's trailing whitespace
        break;
      }
      size_t e = i;
      while (e < s.size() && !is_space(s[e])) ++e;
      piece(i, e - i);
      i = e;
    }
    return out;
  }
  if (!sep->is_string()) throw TemplateError("[chat_template] split: the separator must be a string");
  const std::string& d = sep->s;
  if (d.empty()) throw TemplateError("[chat_template] split: empty separator");
  size_t i = 0;
  while (true) {
    const size_t j =
        (maxsplit >= 0 && int64_t(out.size()) == maxsplit) ? std::string::npos : text::find(s, d, i);
    if (j == std::string::npos) {
      piece(i, s.size() - i);
      return out;
    }
    piece(i, j - i);
    i = j + d.size();
  }
}

}  // namespace

List split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  if (!from_right || maxsplit < 0) return split_forward(s, sep, maxsplit);
  // rsplit with a limit: split the reversed text, reverse the pieces back.
  charge_bytes(s.size());
  const std::string rs(s.rbegin(), s.rend());
  Value rsep;
  if (sep && sep->is_string()) rsep = Value(std::string(sep->s.rbegin(), sep->s.rend()));
  List out = split_forward(rs, sep && sep->is_string() ? &rsep : sep, maxsplit);
  std::reverse(out.begin(), out.end());
  for (Value& p : out) std::reverse(p.s.begin(), p.s.end());
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  auto add = [&](std::string_view t) {
    charge_bytes(t.size());
    out += t;
  };
  int64_t done = 0;
  if (from.empty()) {  // Python: `to` before each code point and at the end
    charge_scan(s.size());
    size_t i = 0;
    for (; i < s.size() && (count < 0 || done < count); ++done) {
      const size_t n = cp_end(s, i) - i;
      add(to);
      add(std::string_view(s).substr(i, n));
      i += n;
    }
    add(std::string_view(s).substr(i));
    if (i == s.size() && (count < 0 || done < count)) add(to);
    return out;
  }
  size_t i = 0;
  for (; count < 0 || done < count; ++done) {
    const size_t j = text::find(s, from, i);
    if (j == std::string::npos) break;
    add(std::string_view(s).substr(i, j - i));
    add(to);
    i = j + from.size();
  }
  add(std::string_view(s).substr(i));
  return out;
}

std::string case_map(const std::string& s, int mode) {
  charge_scan(s.size());
  std::string out = s;
  bool start = true;
  for (size_t k = 0; k < out.size(); ++k) {
    char& c = out[k];
    const bool alpha = std::isalpha(uint8_t(c));
    if (mode == 0 || (mode == 2 && k > 0) || (mode == 3 && !start))
      c = char(std::tolower(uint8_t(c)));
    else if (mode == 1 || (mode == 2 && k == 0) || (mode == 3 && start))
      c = char(std::toupper(uint8_t(c)));
    start = !alpha;
  }
  return out;
}

}  // namespace kiln::jinja::text
