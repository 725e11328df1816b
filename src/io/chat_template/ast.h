// The chat-template syntax tree, shared by the parser and the evaluator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/chat_template.h"

namespace kiln::jinja {

struct Node;
using NodeP = std::shared_ptr<Node>;

struct Node {
  enum Kind {
    // statements
    Body,      // kids: statements
    Text,      // value.s
    Output,    // kids[0]: expression
    If,        // kids: cond, body, cond, body, ..., [else body]
    For,       // targets; kids: iterable, body, else body (or null), filter (or null)
    Set,       // targets (one name, or name + attribute for ns.x); kids[0]: value
    Break,
    Continue,
    // expressions
    Literal,   // value
    Name,      // name
    Attr,      // kids[0].name
    Index,     // kids[0][kids[1]]
    Slice,     // kids[0][kids[1]:kids[2]:kids[3]], null parts omitted
    Call,      // kids[0](kids[1..]); the last kw_names.size() args are keywords
    Filter,    // kids[0] | name(kids[1..])
    Test,      // kids[0] is [not] name(kids[1..]); negated
    Unary,     // name kids[0]  (not, -, +)
    Binary,    // kids[0] name kids[1]
    Cond,      // kids[0] if kids[1] else kids[2] (or null)
    ListLit,
    TupleLit,
    DictLit,   // kids: key, value, key, value ...
  };
  Kind kind;
  std::string name;
  std::vector<std::string> targets;
  std::vector<std::string> kw_names;
  std::vector<NodeP> kids;
  Value value;
  bool negated = false;
  int line = 0;
  int height = 1;  // of the expression tree below this node (the parser bounds it)
  explicit Node(Kind k) : kind(k) {}
};

NodeP parse_template(std::string_view source);

}  // namespace kiln::jinja
