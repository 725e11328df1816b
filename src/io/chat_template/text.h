// Python's str operations over UTF-8 text for chat templates, in time linear
// in the text (a hostile template may search a 100 MB string for a 50 MB one)
// and charged to the active render's budget.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/chat_template.h"

namespace kiln::jinja::text {

// Code points: a code point starts at each byte that is not a UTF-8
// continuation byte (and at the first byte), so that counting them is one
// pass over the bytes; on valid UTF-8 these are exactly its code points.
inline bool is_cont(char c) { return (uint8_t(c) & 0xC0) == 0x80; }
// The end of the code point that starts at s[i].
inline size_t cp_end(std::string_view s, size_t i) {
  for (++i; i < s.size() && is_cont(s[i]);) ++i;
  return i;
}
int64_t count_cps(std::string_view s);
// Byte offset of each code point and, last, s.size().
std::vector<size_t> cp_offsets(std::string_view s);
// Byte offset of code point k (0 <= k <= count_cps(s)).
size_t cp_offset(std::string_view s, int64_t k);

// Byte position of `needle` in `hay` at or after `from` (or before `before` for
// rfind); npos when absent.
size_t find(std::string_view hay, std::string_view needle, size_t from = 0);
size_t rfind(std::string_view hay, std::string_view needle);

bool is_space(char c);
// str.strip/lstrip/rstrip; chars: the code points to drop (nullptr or None: whitespace).
std::string strip(const std::string& s, const Value* chars, bool left, bool right);
// str.split/rsplit; sep nullptr or None: runs of whitespace; maxsplit < 0: no limit.
List split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right);
// str.replace; count < 0: every occurrence. An empty `from` inserts `to` around each code point.
std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);
// 0 lower, 1 upper, 2 capitalize, 3 title (ASCII letters).
std::string case_map(const std::string& s, int mode);

}  // namespace kiln::jinja::text
