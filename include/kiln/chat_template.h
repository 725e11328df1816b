// Chat templates: the subset of Jinja2 that the chat_template strings of the
// supported model families use (Qwen2/Qwen3, Llama 3.x, SmolLM2, Mixtral,
// OLMoE), rendered as transformers renders them (trim_blocks, lstrip_blocks,
// loop controls, tojson without ASCII escaping, raise_exception, strftime_now).
// Templates are untrusted input: a render is bounded in steps, memory and
// nesting, and ints are int64 with overflow reported as an error (Jinja's are
// Python's unbounded ints; no chat template leaves int64).
//
//   kiln::jinja::Template t(tok.chat_template());
//   std::string prompt = t.render(kiln::jinja::Value::parse_json(R"({"messages": [...],
//                                  "add_generation_prompt": true})"));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/error.h"

namespace kiln::jinja {

struct Value;
using List = std::vector<Value>;
struct Dict {
  std::vector<std::pair<std::string, Value>> items;  // insertion order, as Python dicts
  bool is_namespace = false;                          // namespace(): attributes may be set
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value v);
};

struct Value {
  enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, list, dict };
  Kind kind = Kind::undefined;
  bool b = false;
  // Kept by the constructors: the lists/dicts nested in this value (1 for [1])
  // and whether a namespace() is among them; they bound recursion over values.
  uint16_t depth = 0;
  bool holds_namespace = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;

  Value() = default;
  static Value none() { Value v; v.kind = Kind::none; return v; }
  Value(bool x) : kind(Kind::boolean), b(x) {}
  Value(int x) : kind(Kind::integer), i(x) {}
  Value(int64_t x) : kind(Kind::integer), i(x) {}
  Value(double x) : kind(Kind::floating), f(x) {}
  // Strings, lists, dicts and copies count toward the limits of the render
  // that makes them (src/io/chat_template/limits.h); outside a render they are free.
  Value(std::string x);
  Value(const char* x) : Value(std::string(x)) {}
  Value(List l);
  Value(Dict d);
  Value(const Value& o);
  Value(Value&&) noexcept = default;
  Value& operator=(const Value& o);
  Value& operator=(Value&&) noexcept = default;
  ~Value() = default;

  bool is_undefined() const { return kind == Kind::undefined; }
  bool is_none() const { return kind == Kind::none; }
  bool is_string() const { return kind == Kind::string; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating; }
  bool truthy() const;
  std::string str() const;  // Python str(): True, None, ['a', 1], {'k': 'v'}
  // JSON as Python's json.dumps(ensure_ascii=False) writes it; indent < 0: one line.
  std::string to_json(int indent = -1, int level = 0) const;
  static Value parse_json(std::string_view json);  // throws ValueError
};

class TemplateError : public ValueError {
 public:
  using ValueError::ValueError;
};

// What one render used of its limits: evaluation steps and bytes built.
struct RenderStats {
  uint64_t steps = 0;
  uint64_t bytes = 0;
};

struct Node;
class Template {
 public:
  explicit Template(std::string_view source);  // throws TemplateError on a syntax error
  // `context` is a dict of the template's variables. A template that passes
  // the step, memory or nesting limits throws TemplateError.
  std::string render(const Value& context) const;
  std::string render(const Value& context, RenderStats* stats) const;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace kiln::jinja

namespace kiln {
class Tokenizer;

// Renders the tokenizer's chat template as transformers' apply_chat_template
// does: the variables are messages, add_generation_prompt, the special tokens
// the tokenizer knows (bos_token, eos_token, pad_token), then `extra` (a dict:
// tools, enable_thinking, ...). Throws ValueError when there is no template.
std::string apply_chat_template(const Tokenizer& tokenizer, const jinja::Value& messages,
                                bool add_generation_prompt = false, const jinja::Value& extra = {});
}  // namespace kiln
