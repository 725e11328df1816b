// The chat-template built-ins: filters, tests, globals, and the Python
// methods of str, dict and list values (builtins.cc).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/chat_template/ast.h"

namespace kiln::jinja {

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // Argument i by position, else by keyword name; nullptr when absent.
  const Value* get(size_t i, const char* name) const {
    if (i < pos.size()) return &pos[i];
    for (const auto& kv : kw)
      if (kv.first == name) return &kv.second;
    return nullptr;
  }
};

[[noreturn]] void fail_at(const Node& n, const std::string& msg);
bool equal(const Value& a, const Value& b);  // Python's ==
// The items for iterating v: a list itself, a dict's keys, a string's code
// points, nothing for an undefined value. Hold the pointer while iterating:
// `for (x : *iterate(...))` frees a new list before the loop body runs.
std::shared_ptr<const List> iterate(const Node& at, const Value& v);
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value apply_filter(const Node& at, const std::string& name, const Value& v, const Args& a);
bool apply_test(const Node& at, const std::string& name, const Value& v, const Args& a);
Value call_method(const Node& at, const Value& obj, const std::string& name, const Args& a);
Value call_global(const Node& at, const std::string& name, const Args& a);
// json.dumps(v, indent=indent) (indent < 0: one line), bounded by the active budget.
std::string to_json_text(const Value& v, int64_t indent, int64_t level = 0);

}  // namespace kiln::jinja
