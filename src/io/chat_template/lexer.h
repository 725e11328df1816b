// Chat-template lexer: the template as text and tag parts, tags as tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/chat_template/ast.h"

namespace kiln::jinja {

[[noreturn]] void fail(int line, const std::string& msg);

struct Tok {
  enum T { Name, Int, Float, Str, Op, End } t = End;
  std::string s;
  int64_t i = 0;
  double f = 0;
};

// One piece of the template: text, {{ expression }} or {% statement %}.
struct Part {
  enum K { Text, Var, Block } k;
  std::string text;
  std::vector<Tok> toks;
  int line;
};

// Splits a template into text and tags, applying Jinja2's whitespace rules as
// transformers configures them (trim_blocks, lstrip_blocks, "-" and "+").
std::vector<Part> lex(std::string_view src);

}  // namespace kiln::jinja
