// Chat-template lexer: text and tags with Jinja2's whitespace rules as
// transformers configures them (trim_blocks, lstrip_blocks, "-" and "+"
// markers); tag contents as name, number, string and operator tokens.
#include "io/chat_template/lexer.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

namespace kiln::jinja {

[[noreturn]] void fail(int line, const std::string& msg) {
  throw TemplateError("[chat_template] line " + std::to_string(line) + ": " + msg);
}

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Tokens of a tag's inside, from src[pos] to the closing `close` ("}}"/"%}").
// Returns the position after the closing delimiter; *strip_after: "-" before it.
size_t lex_tag(std::string_view src, size_t pos, const char* close, int line, std::vector<Tok>& out,
               bool* strip_after) {
  int depth = 0;  // open brackets: "}}" inside {{ {'a': {}} }} does not close the tag
  while (true) {
    while (pos < src.size() && is_ws(src[pos])) ++pos;
    if (pos >= src.size()) fail(line, std::string("missing '") + close + "'");
    if (depth == 0 && src[pos] == '-' && src.compare(pos + 1, 2, close) == 0) {
      *strip_after = true;
      return pos + 3;
    }
    if (depth == 0 && src.compare(pos, 2, close) == 0) {
      *strip_after = false;
      return pos + 2;
    }
    const char c = src[pos];
    Tok t;
    if (std::isalpha(uint8_t(c)) || c == '_') {
      size_t e = pos;
      while (e < src.size() && (std::isalnum(uint8_t(src[e])) || src[e] == '_')) ++e;
      t.t = Tok::Name;
      t.s = std::string(src.substr(pos, e - pos));
      pos = e;
    } else if (std::isdigit(uint8_t(c))) {
      size_t e = pos;
      while (e < src.size() && (std::isdigit(uint8_t(src[e])) || src[e] == '_')) ++e;
      bool is_float = false;
      if (e + 1 < src.size() && src[e] == '.' && std::isdigit(uint8_t(src[e + 1]))) {
        is_float = true;
        ++e;
        while (e < src.size() && std::isdigit(uint8_t(src[e]))) ++e;
      }
      if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
        size_t x = e + 1;
        if (x < src.size() && (src[x] == '+' || src[x] == '-')) ++x;
        if (x < src.size() && std::isdigit(uint8_t(src[x]))) {
          is_float = true;
          e = x;
          while (e < src.size() && std::isdigit(uint8_t(src[e]))) ++e;
        }
      }
      std::string num;
      for (char d : src.substr(pos, e - pos))
        if (d != '_') num += d;
      if (is_float) {
        t.t = Tok::Float;
        t.f = std::strtod(num.c_str(), nullptr);  // 1e400 is inf, 1e-320 a subnormal, as in Python
      } else {
        t.t = Tok::Int;
        for (char d : num)
          if (__builtin_mul_overflow(t.i, int64_t(10), &t.i) ||
              __builtin_add_overflow(t.i, int64_t(d - '0'), &t.i))
            fail(line, "integer literal " + num.substr(0, 40) + " is outside int64 (kiln's ints are 64-bit)");
      }
      pos = e;
    } else if (c == '\'' || c == '"') {
      t.t = Tok::Str;
      size_t e = pos + 1;
      while (true) {
        if (e >= src.size()) fail(line, "unterminated string");
        const char d = src[e];
        if (d == c) break;
        if (d == '\\' && e + 1 < src.size()) {
          const char n = src[++e];
          switch (n) {
            case 'n': t.s += '\n'; break;
            case 't': t.s += '\t'; break;
            case 'r': t.s += '\r'; break;
            case '\\': t.s += '\\'; break;
            case '\'': t.s += '\''; break;
            case '"': t.s += '"'; break;
            default: t.s += '\\'; t.s += n;
          }
        } else {
          t.s += d;
        }
        ++e;
      }
      pos = e + 1;
    } else {
      static const char* const two[] = {"==", "!=", "<=", ">=", "//", "**"};
      t.t = Tok::Op;
      for (const char* op : two)
        if (src.compare(pos, 2, op) == 0) t.s = op;
      if (t.s.empty()) {
        if (!std::strchr("+-*/%~|.,:()[]{}<>=!", c)) fail(line, std::string("unexpected character '") + c + "'");
        t.s = std::string(1, c);
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      }
      pos += t.s.size();
    }
    out.push_back(std::move(t));
  }
}

// The text of a raw block from src[pos] (after "{% raw %}") to its
// "{% endraw %}", whose own "-" markers and lstrip_blocks apply. Returns the
// position after the end tag; *strip_after: it ended with "-%}".
size_t lex_raw(std::string_view src, size_t pos, bool strip_start, int& line, std::vector<Part>& parts,
               bool* strip_after) {
  size_t tag = pos, close = 0;
  char marker = 0;
  for (;; tag += 2) {
    tag = src.find("{%", tag);
    if (tag == std::string_view::npos) fail(line, "missing end of raw block ({% endraw %})");
    size_t q = tag + 2;
    marker = q < src.size() && (src[q] == '-' || src[q] == '+') ? src[q++] : 0;
    while (q < src.size() && is_ws(src[q])) ++q;
    if (src.compare(q, 6, "endraw") != 0) continue;
    q += 6;
    while (q < src.size() && is_ws(src[q])) ++q;
    *strip_after = q < src.size() && src[q] == '-';
    if (*strip_after) ++q;
    if (src.compare(q, 2, "%}") == 0) {
      close = q + 2;
      break;
    }
  }
  std::string text(src.substr(pos, tag - pos));
  if (strip_start) {
    size_t k = 0;
    while (k < text.size() && is_ws(text[k])) ++k;
    text.erase(0, k);
  }
  if (marker == '-') {
    while (!text.empty() && is_ws(text.back())) text.pop_back();
  } else if (marker != '+') {  // lstrip_blocks: the end tag alone at the start of a line
    const size_t nl = text.rfind('\n');
    if (nl != std::string::npos && text.find_first_not_of(" \t", nl + 1) == std::string::npos)
      text.erase(nl + 1);
  }
  parts.push_back({Part::Text, text, {}, line});
  for (char c : src.substr(pos, close - pos)) line += c == '\n';
  return close;
}

}  // namespace

std::vector<Part> lex(std::string_view src) {
  std::vector<Part> parts;
  size_t pos = 0;
  int line = 1;
  bool strip_next = false;     // the previous tag ended with "-"
  bool line_starting = true;   // the text about to be read starts a line
  while (pos <= src.size()) {
    size_t open = pos;
    while (true) {
      open = src.find('{', open);
      if (open == std::string_view::npos || open + 1 >= src.size()) {
        open = std::string_view::npos;
        break;
      }
      const char n = src[open + 1];
      if (n == '{' || n == '%' || n == '#') break;
      ++open;
    }
    std::string text(src.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && is_ws(text[k])) ++k;
      text.erase(0, k);
    }
    for (char c : src.substr(pos, open == std::string_view::npos ? src.size() - pos : open - pos)) line += c == '\n';
    if (open == std::string_view::npos) {
      if (!text.empty()) parts.push_back({Part::Text, text, {}, line});
      break;
    }
    const char kind = src[open + 1];
    size_t p = open + 2;
    const char marker = p < src.size() ? src[p] : 0;
    if (marker == '-') {
      while (!text.empty() && is_ws(text.back())) text.pop_back();
      ++p;
    } else if (marker == '+') {
      ++p;
    } else if (kind != '{') {  // lstrip_blocks: a block or comment tag alone at the start of a line
      const size_t nl = text.rfind('\n');
      const size_t l = nl == std::string::npos ? 0 : nl + 1;
      if (nl != std::string::npos || line_starting) {
        bool blank = true;
        for (size_t k = l; k < text.size(); ++k) blank &= text[k] == ' ' || text[k] == '\t';
        if (blank) text.erase(l);
      }
    }
    if (!text.empty()) parts.push_back({Part::Text, text, {}, line});
    bool strip_after = false;
    if (kind == '#') {
      const size_t e = src.find("#}", p);
      if (e == std::string_view::npos) fail(line, "unterminated comment");
      strip_after = e > p && src[e - 1] == '-';
      for (char c : src.substr(p, e - p)) line += c == '\n';
      pos = e + 2;
    } else {
      Part part{kind == '{' ? Part::Var : Part::Block, {}, {}, line};
      pos = lex_tag(src, p, kind == '{' ? "}}" : "%}", line, part.toks, &strip_after);
      for (char c : src.substr(p, pos - p)) line += c == '\n';
      // {% raw %} ... {% endraw %}: the text in between is kept as it is
      if (part.k == Part::Block && part.toks.size() == 1 && part.toks[0].s == "raw") {
        pos = lex_raw(src, pos, strip_after, line, parts, &strip_after);
      } else {
        parts.push_back(std::move(part));
      }
    }
    strip_next = strip_after;
    line_starting = false;
    if (!strip_after && kind != '{' && pos < src.size() && src[pos] == '\n') {  // trim_blocks
      ++pos;
      ++line;
      line_starting = true;
    }
    if (pos > 0 && src[pos - 1] == '\n') line_starting = true;
  }
  return parts;
}

}  // namespace kiln::jinja
