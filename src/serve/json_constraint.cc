// JSON Schema (subset) -> byte-level matcher; see json_constraint.h.
#include "serve/json_constraint.h"

#include <stdexcept>

namespace kiln::serve {

using json = nlohmann::json;

namespace {

// Frame types and their states.
enum : uint8_t { kRoot, kObject, kArray, kString, kNumber, kLiteral, kKey };
// root: 0 before the value, 1 after it
// object: 0 after '{', 1 in a key (kKey frame above, or a free key string), 2 before ':', 3 before the value,
//         4 after a value, 5 after ','
enum : uint8_t { kObjStart, kObjKey, kObjColon, kObjValue, kObjAfter, kObjComma };
// array: 0 after '[', 1 after an item, 2 after ','
enum : uint8_t { kArrStart, kArrAfter, kArrComma };
// string: 0 in text, 1 after '\', 2..5 in \uXXXX
// number: 0 start, 1 after '-', 2 after a leading 0, 3 in the integer part, 4 after '.', 5 in the fraction,
//         6 after e/E, 7 after its sign, 8 in the exponent
enum : uint8_t { kNumStart, kNumMinus, kNumZero, kNumInt, kNumDot, kNumFrac, kNumE, kNumESign, kNumExp };

constexpr int kMaxWhitespaceRun = 16;
constexpr int kMaxNumberDigits = 24;
constexpr int kMaxSchemaNodes = 4096;

bool is_ws(unsigned char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument(what); }

}  // namespace

std::shared_ptr<const JsonSchema> JsonSchema::compile(const json& schema) {
  auto s = std::make_shared<JsonSchema>();
  s->root_ = s->add(schema, 0);
  return s;
}

std::shared_ptr<const JsonSchema> JsonSchema::any_object() {
  auto s = std::make_shared<JsonSchema>();
  Node n;
  n.kind = Kind::Object;
  n.open = true;
  s->nodes_.push_back(n);
  s->root_ = 0;
  return s;
}

int JsonSchema::add(const json& s, int depth) {
  if (depth > 32) refuse("the schema nests deeper than 32 levels");
  if (int(nodes_.size()) >= kMaxSchemaNodes) refuse("the schema has more than 4096 nodes");
  if (s.is_boolean() && s.get<bool>()) {  // `true`: anything
    nodes_.emplace_back();
    return int(nodes_.size()) - 1;
  }
  if (!s.is_object()) refuse("a schema must be an object");
  static const char* ignored[] = {"title",  "description", "default",  "examples",  "$schema",   "$id",
                                  "strict", "$comment",    "readOnly", "writeOnly", "deprecated"};
  static const char* handled[] = {"type",  "properties", "required", "additionalProperties",
                                  "items", "minItems",   "maxItems", "enum",
                                  "const"};
  for (const auto& [k, v] : s.items()) {
    bool known = false;
    for (const char* i : ignored) known |= k == i;
    for (const char* h : handled) known |= k == h;
    if (!known) refuse("the schema keyword '" + k + "' is not supported by this server");
  }
  const int id = int(nodes_.size());
  nodes_.emplace_back();
  auto literals = [&](const json& values) {
    Node n;
    n.kind = Kind::Literals;
    for (const auto& v : values) n.literals.push_back(v.dump());
    if (n.literals.empty()) refuse("'enum' must list at least one value");
    if (n.literals.size() > 64) refuse("'enum' may list at most 64 values here");
    return n;
  };
  if (s.contains("const")) {
    nodes_[size_t(id)] = literals(json::array({s["const"]}));
    return id;
  }
  if (s.contains("enum")) {
    if (!s["enum"].is_array()) refuse("'enum' must be a list");
    nodes_[size_t(id)] = literals(s["enum"]);
    return id;
  }
  if (!s.contains("type")) return id;  // Any
  const json& t = s["type"];
  if (t.is_array()) {
    Node n;
    n.kind = Kind::Union;
    bool number = false;
    for (const auto& one : t) {
      if (!one.is_string()) refuse("'type' must be a string or a list of strings");
      if (one == "integer" && number) continue;  // number already covers integers
      json sub = s;
      sub["type"] = one;
      number |= one == "number" || one == "integer";
      n.values.push_back(add(sub, depth + 1));
    }
    if (n.values.empty()) refuse("'type' lists no types");
    nodes_[size_t(id)] = n;
    return id;
  }
  if (!t.is_string()) refuse("'type' must be a string or a list of strings");
  const std::string type = t.get<std::string>();
  Node n;
  if (type == "object") {
    n.kind = Kind::Object;
    const json props = s.value("properties", json::object());
    if (!props.is_object()) refuse("'properties' must be an object");
    const json addl = s.value("additionalProperties", json(false));
    if (props.empty()) {
      n.open = !(addl.is_boolean() && !addl.get<bool>()) || !s.contains("additionalProperties");
    } else if (!(addl.is_boolean() && !addl.get<bool>())) {
      refuse("'additionalProperties' must be false (or absent) when 'properties' are listed");
    }
    if (props.size() > 64) refuse("an object may list at most 64 properties here");
    for (const auto& [k, v] : props.items()) {
      for (unsigned char c : k)
        if (c == '"' || c == '\\' || c < 0x20)
          refuse("property names needing JSON escapes are not supported");
      n.keys.push_back(k);
    }
    if (s.contains("required")) {
      if (!s["required"].is_array()) refuse("'required' must be a list");
      for (const auto& r : s["required"]) {
        size_t i = 0;
        while (i < n.keys.size() && !(r.is_string() && n.keys[i] == r.get<std::string>())) ++i;
        if (i == n.keys.size()) refuse("'required' names " + r.dump() + ", which 'properties' does not list");
        n.required |= uint64_t(1) << i;
      }
    }
    nodes_[size_t(id)] = n;  // before the children: add() may grow nodes_
    std::vector<int> values;
    for (const auto& [k, v] : props.items()) values.push_back(add(v, depth + 1));
    nodes_[size_t(id)].values = std::move(values);
    return id;
  }
  if (type == "array") {
    n.kind = Kind::Array;
    auto count = [&](const char* key, int64_t dflt) {
      if (!s.contains(key)) return dflt;
      if (!s[key].is_number_integer() || s[key].get<int64_t>() < 0)
        refuse(std::string("'") + key + "' must be a non-negative integer");
      return s[key].get<int64_t>();
    };
    n.min_items = count("minItems", 0);
    n.max_items = count("maxItems", INT64_MAX);
    if (n.min_items > n.max_items) refuse("'minItems' is more than 'maxItems'");
    nodes_[size_t(id)] = n;
    const int items = s.contains("items") ? add(s["items"], depth + 1) : -1;
    nodes_[size_t(id)].items = items;
    return id;
  }
  if (type == "string")
    n.kind = Kind::String;
  else if (type == "number")
    n.kind = Kind::Number;
  else if (type == "integer")
    n.kind = Kind::Integer;
  else if (type == "boolean")
    n.kind = Kind::Literals, n.literals = {"true", "false"};
  else if (type == "null")
    n.kind = Kind::Literals, n.literals = {"null"};
  else
    refuse("unknown type '" + type + "'");
  nodes_[size_t(id)] = n;
  return id;
}

// ---- the matcher ------------------------------------------------------------------------

JsonMatcher::JsonMatcher(const JsonSchema& schema) : schema_(&schema) {
  Frame root;
  root.type = kRoot;
  root.node = schema.root();
  stack_[0] = root;
  depth_ = 1;
}

bool JsonMatcher::push(const Frame& f) {
  if (depth_ >= kMaxDepth) return false;
  stack_[size_t(depth_++)] = f;
  return true;
}

// A value of schema node `node` (-1: any) starting with c.
bool JsonMatcher::start_value(int node, unsigned char c) {
  using K = JsonSchema::Kind;
  const JsonSchema::Node* n = node >= 0 ? &schema_->nodes()[size_t(node)] : nullptr;
  const K kind = n ? n->kind : K::Any;
  Frame f;
  f.node = node;
  if (kind == K::Union) {
    for (int m : n->values)
      if (JsonMatcher probe = *this; probe.start_value(m, c)) {
        *this = probe;
        return true;
      }
    return false;
  }
  if (c == '{' && (kind == K::Any || kind == K::Object)) {
    f.type = kObject;
    f.state = kObjStart;
    if (kind == K::Any) f.node = -1;
    return push(f);
  }
  if (c == '[' && (kind == K::Any || kind == K::Array)) {
    f.type = kArray;
    f.state = kArrStart;
    if (kind == K::Any) f.node = -1;
    return push(f);
  }
  if (c == '"' && (kind == K::Any || kind == K::String)) {
    f.type = kString;
    return push(f);
  }
  if ((c == '-' || is_digit(c)) && (kind == K::Any || kind == K::Number || kind == K::Integer)) {
    f.type = kNumber;
    f.integer = kind == K::Integer;
    return push(f) && step(c);
  }
  if (kind == K::Literals || (kind == K::Any && (c == 't' || c == 'f' || c == 'n'))) {
    static const JsonSchema::Node kAnyLiterals = [] {
      JsonSchema::Node l;
      l.kind = JsonSchema::Kind::Literals;
      l.literals = {"true", "false", "null"};
      return l;
    }();
    const auto& lits = kind == K::Literals ? n->literals : kAnyLiterals.literals;
    f.type = kLiteral;
    f.node = kind == K::Literals ? node : -2;  // -2: true/false/null
    f.mask = lits.size() >= 64 ? ~uint64_t(0) : (uint64_t(1) << lits.size()) - 1;
    return push(f) && step(c);
  }
  return false;
}

bool JsonMatcher::advance(std::string_view bytes) {
  for (unsigned char c : bytes)
    if (!step(c)) return false;
  return true;
}

bool JsonMatcher::step(unsigned char c) {
  if (depth_ == 0) return false;
  Frame& f = stack_[size_t(depth_ - 1)];
  const auto& nodes = schema_->nodes();
  // Whitespace between tokens of structure, bounded (a model could pad forever).
  auto ws = [&] {
    if (++ws_run_ > kMaxWhitespaceRun) return false;
    return true;
  };
  const bool structural = f.type == kRoot || f.type == kObject || f.type == kArray;
  if (structural && is_ws(c)) return ws();
  if (structural) ws_run_ = 0;
  switch (f.type) {
    case kRoot:
      if (f.state != 0) return false;  // one value, then the end
      f.state = 1;
      return start_value(f.node, c);
    case kObject: {
      const JsonSchema::Node* n = f.node >= 0 ? &nodes[size_t(f.node)] : nullptr;
      const bool open = !n || n->open;
      const size_t nkeys = n ? n->keys.size() : 0;
      const uint64_t all = nkeys >= 64 ? ~uint64_t(0) : (uint64_t(1) << nkeys) - 1;
      auto can_close = [&] { return !n || (n->required & ~f.used) == 0; };
      auto start_key = [&] {
        f.state = kObjKey;
        Frame k;
        if (open) {
          k.type = kString;  // any key
          k.state = 0;
        } else {
          k.type = kKey;
          k.node = f.node;
          k.mask = all & ~f.used;
          if (k.mask == 0) return false;
        }
        return push(k);
      };
      switch (f.state) {
        case kObjStart:
          if (c == '}') return can_close() && (--depth_, true);
          if (c == '"') return start_key();
          return false;
        case kObjComma:
          return c == '"' && start_key();
        case kObjColon:
          if (c != ':') return false;
          f.state = kObjValue;
          return true;
        case kObjValue:
          f.state = kObjAfter;
          return start_value(open || f.prop < 0 ? -1 : n->values[size_t(f.prop)], c);
        case kObjAfter:
          if (c == ',') {
            if (!open && (all & ~f.used) == 0) return false;  // no property left to give
            f.state = kObjComma;
            return true;
          }
          if (c == '}') return can_close() && (--depth_, true);
          return false;
        default:
          return false;
      }
    }
    case kArray: {
      const JsonSchema::Node* n = f.node >= 0 ? &nodes[size_t(f.node)] : nullptr;
      const int64_t lo = n ? n->min_items : 0, hi = n ? n->max_items : INT64_MAX;
      const int items = n ? n->items : -1;
      switch (f.state) {
        case kArrStart:
          if (c == ']') return lo == 0 && (--depth_, true);
          if (hi == 0) return false;
          f.state = kArrAfter;
          ++f.count;
          return start_value(items, c);
        case kArrComma:
          f.state = kArrAfter;
          ++f.count;
          return start_value(items, c);
        case kArrAfter:
          if (c == ',') {
            if (f.count >= hi) return false;
            f.state = kArrComma;
            return true;
          }
          if (c == ']') return f.count >= lo && (--depth_, true);
          return false;
        default:
          return false;
      }
    }
    case kString:
      // pos: UTF-8 continuation bytes still due (used: the first one's range,
      // lo | hi << 8, where Unicode narrows it); count: 1 after a high
      // surrogate escape, whose low half must follow; mask: \uXXXX's value.
      if (f.state == 0) {
        if (f.pos > 0) {
          unsigned lo = 0x80, hi = 0xBF;
          if (f.used) lo = unsigned(f.used & 0xFF), hi = unsigned(f.used >> 8), f.used = 0;
          if (c < lo || c > hi) return false;
          --f.pos;
          return true;
        }
        if (f.count == 1 && c != '\\') return false;
        if (c == '"') {
          --depth_;
          Frame& parent = stack_[size_t(depth_ - 1)];
          if (parent.type == kObject && parent.state == kObjKey) parent.state = kObjColon, parent.prop = -1;
          return true;
        }
        if (c == '\\') return f.state = 1, true;
        if (c < 0x80) return c >= 0x20;
        // A UTF-8 lead byte (Unicode's well-formed table: no overlong forms,
        // surrogates or values past U+10FFFF).
        if (c >= 0xC2 && c <= 0xDF) return f.pos = 1, true;
        if (c >= 0xE0 && c <= 0xEF) {
          f.pos = 2;
          f.used = c == 0xE0 ? (0xA0 | 0xBF << 8) : c == 0xED ? (0x80 | 0x9F << 8) : 0;
          return true;
        }
        if (c >= 0xF0 && c <= 0xF4) {
          f.pos = 3;
          f.used = c == 0xF0 ? (0x90 | 0xBF << 8) : c == 0xF4 ? (0x80 | 0x8F << 8) : 0;
          return true;
        }
        return false;
      }
      if (f.state == 1) {
        if (c == 'u') return f.state = 2, f.mask = 0, true;
        if (f.count == 1) return false;
        if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't')
          return f.state = 0, true;
        return false;
      }
      if (!is_hex(c)) return false;
      f.mask = f.mask * 16 + uint64_t(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
      if (f.state < 5) return ++f.state, true;
      f.state = 0;
      if (f.count == 1) {  // the low half of a surrogate pair
        f.count = 0;
        return f.mask >= 0xDC00 && f.mask <= 0xDFFF;
      }
      if (f.mask >= 0xD800 && f.mask <= 0xDBFF) return f.count = 1, true;
      return !(f.mask >= 0xDC00 && f.mask <= 0xDFFF);
    case kKey: {
      // A closed object's key: the bytes must follow one of the properties not given yet.
      const auto& keys = nodes[size_t(f.node)].keys;
      if (c == '"') {
        for (size_t i = 0; i < keys.size(); ++i)
          if ((f.mask >> i & 1) && int32_t(keys[i].size()) == f.pos) {
            --depth_;
            Frame& parent = stack_[size_t(depth_ - 1)];
            parent.state = kObjColon;
            parent.prop = int32_t(i);
            parent.used |= uint64_t(1) << i;
            return true;
          }
        return false;
      }
      uint64_t m = 0;
      for (size_t i = 0; i < keys.size(); ++i)
        if ((f.mask >> i & 1) && int32_t(keys[i].size()) > f.pos &&
            (unsigned char)keys[i][size_t(f.pos)] == c)
          m |= uint64_t(1) << i;
      if (m == 0) return false;
      f.mask = m;
      ++f.pos;
      return true;
    }
    case kNumber: {
      auto digit = [&](uint8_t next) {
        if (++f.pos > kMaxNumberDigits) return false;
        f.state = next;
        return true;
      };
      const bool can_end =
          f.state == kNumZero || f.state == kNumInt || f.state == kNumFrac || f.state == kNumExp;
      switch (f.state) {
        case kNumStart:
          if (c == '-') return f.state = kNumMinus, true;
          [[fallthrough]];
        case kNumMinus:
          if (c == '0') return digit(kNumZero);
          if (is_digit(c)) return digit(kNumInt);
          return false;
        case kNumInt:
          if (is_digit(c)) return digit(kNumInt);
          [[fallthrough]];
        case kNumZero:
          if (c == '.' && !f.integer) return f.state = kNumDot, true;
          if ((c == 'e' || c == 'E') && !f.integer) return f.state = kNumE, true;
          break;
        case kNumDot:
          return is_digit(c) && digit(kNumFrac);
        case kNumFrac:
          if (is_digit(c)) return digit(kNumFrac);
          if (c == 'e' || c == 'E') return f.state = kNumE, true;
          break;
        case kNumE:
          if (c == '+' || c == '-') return f.state = kNumESign, true;
          [[fallthrough]];
        case kNumESign:
          return is_digit(c) && digit(kNumExp);
        case kNumExp:
          if (is_digit(c)) return digit(kNumExp);
          break;
        default:
          return false;
      }
      // The number ended before c: c belongs to the enclosing value.
      if (!can_end) return false;
      --depth_;
      return step(c);
    }
    case kLiteral: {
      static const std::vector<std::string> kAny = {"true", "false", "null"};
      const auto& lits = f.node == -2 ? kAny : nodes[size_t(f.node)].literals;
      uint64_t m = 0;
      bool complete = false;
      for (size_t i = 0; i < lits.size(); ++i) {
        if (!(f.mask >> i & 1)) continue;
        if (int32_t(lits[i].size()) > f.pos && (unsigned char)lits[i][size_t(f.pos)] == c)
          m |= uint64_t(1) << i;
        if (int32_t(lits[i].size()) == f.pos) complete = true;
      }
      if (m != 0) {
        f.mask = m;
        ++f.pos;
        return true;
      }
      if (!complete) return false;
      --depth_;  // the literal ended before c
      return step(c);
    }
    default:
      return false;
  }
}

bool JsonMatcher::can_end() const {
  if (done()) return true;
  if (depth_ != 2 || stack_[0].state != 1) return false;
  // A top-level number or literal that could stop here.
  const Frame& f = stack_[1];
  if (f.type == kNumber)
    return f.state == kNumZero || f.state == kNumInt || f.state == kNumFrac || f.state == kNumExp;
  if (f.type == kLiteral) {
    static const std::vector<std::string> kAny = {"true", "false", "null"};
    const auto& lits = f.node == -2 ? kAny : schema_->nodes()[size_t(f.node)].literals;
    for (size_t i = 0; i < lits.size(); ++i)
      if ((f.mask >> i & 1) && int32_t(lits[i].size()) == f.pos) return true;
  }
  return false;
}

}  // namespace kiln::serve
