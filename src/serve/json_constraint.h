// Constrained decoding for response_format: a JSON Schema (the subset below)
// compiled into a byte-level matcher, so that generation can only produce
// text the schema accepts. The matcher is a pushdown automaton over bytes:
// a stack of frames (object, array, string, number, literal) of fixed size,
// trivially copied, so testing whether a token may come next is a copy and a
// few byte steps.
//
// The schema subset (what OpenAI's structured outputs in strict mode use):
// type (one or a list), properties + required (objects hold only the listed
// properties; additionalProperties may be false or absent, or true / a schema
// when there are no properties: any keys), items, minItems, maxItems, enum,
// const; annotations (title, description, default, examples, $schema, strict)
// are ignored. Anything else that constrains values (anyOf, $ref, pattern,
// minimum, ...) is refused with the keyword named, rather than ignored.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::serve {

class JsonSchema {
 public:
  // Throws std::invalid_argument naming the unsupported keyword or bad value.
  static std::shared_ptr<const JsonSchema> compile(const nlohmann::json& schema);
  // Any JSON object (response_format {"type": "json_object"}).
  static std::shared_ptr<const JsonSchema> any_object();

  enum class Kind : uint8_t { Any, Object, Array, String, Number, Integer, Literals, Union };
  struct Node {
    Kind kind = Kind::Any;
    std::vector<std::string> keys;  // Object: property names (raw JSON string bytes, no quotes)
    std::vector<int> values;        // Object: each property's node; Union: members
    uint64_t required = 0;          // Object: bit i = keys[i] is required
    bool open = false;              // Object: any keys, values Any (no properties listed)
    int items = -1;                 // Array: node of items (-1: Any)
    int64_t min_items = 0, max_items = INT64_MAX;
    std::vector<std::string> literals;  // Literals: the JSON texts allowed (at most 64)
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  int root() const { return root_; }

 private:
  int add(const nlohmann::json& s, int depth);
  std::vector<Node> nodes_;
  int root_ = 0;
};

class JsonMatcher {
 public:
  static constexpr int kMaxDepth = 48;
  // The schema must outlive the matcher (and its copies).
  explicit JsonMatcher(const JsonSchema& schema);
  JsonMatcher(const JsonMatcher& o) { *this = o; }
  JsonMatcher& operator=(const JsonMatcher& o) {  // copies only the frames in use
    schema_ = o.schema_;
    depth_ = o.depth_;
    ws_run_ = o.ws_run_;
    for (int i = 0; i < depth_; ++i) stack_[size_t(i)] = o.stack_[size_t(i)];
    return *this;
  }
  // Consumes bytes; false (and the matcher is then unusable) when they cannot
  // continue any text the schema accepts.
  bool advance(std::string_view bytes);
  // The text so far is a whole value the schema accepts (generation may end).
  bool can_end() const;
  // The value is closed: nothing but the end may follow.
  bool done() const { return depth_ == 1 && stack_[0].state == 1; }

  struct Frame {
    uint8_t type = 0, state = 0;
    bool integer = false;
    int32_t node = -1;  // schema node (-1: any value)
    int32_t prop = -1;  // object: the property whose value is being matched
    int32_t pos = 0;    // literal / key: bytes matched so far; number: digits
    uint64_t used = 0;  // object: properties given
    uint64_t mask = 0;  // literal / key: candidates still possible
    int64_t count = 0;  // array: items so far
  };

 private:
  bool step(unsigned char c);
  bool start_value(int node, unsigned char c);
  bool push(const Frame& f);
  const JsonSchema* schema_ = nullptr;
  std::array<Frame, kMaxDepth> stack_;
  int depth_ = 0;
  int ws_run_ = 0;  // whitespace bytes in a row between tokens
};

}  // namespace kiln::serve
