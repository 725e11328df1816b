// Template values: Python's str()/repr() and json.dumps() spellings, JSON input.
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "io/chat_template/builtins.h"
#include "io/chat_template/limits.h"

namespace kiln::jinja {

// Lookups scan the items: a dict literal of many keys costs steps per lookup.
const Value* Dict::find(std::string_view key) const {
  charge_steps(1 + items.size() / 8);
  for (const auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}
Value* Dict::find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Dict*>(this)->find(key));
}
void Dict::set(std::string key, Value v) {
  if (Value* x = find(key)) {
    *x = std::move(v);
    return;
  }
  items.emplace_back(std::move(key), std::move(v));
}

Value::Value(std::string x) : kind(Kind::string), s(std::move(x)) { charge_bytes(s.size()); }

namespace {
void nest_over(const Value& v, uint16_t& depth, bool& holds_namespace) {
  depth = std::max<uint16_t>(depth, uint16_t(v.depth + 1));
  holds_namespace |= v.holds_namespace;
}
void check_depth(const Value& v) {
  if (v.depth > kMaxNesting)
    limit_error("values nested too deeply (over " + std::to_string(kMaxNesting) + " levels)");
}
}  // namespace

Value::Value(List l) : kind(Kind::list), depth(1), list(std::make_shared<List>(std::move(l))) {
  charge_steps(list->size());
  charge_bytes(list->size() * sizeof(Value));
  for (const Value& v : *list) nest_over(v, depth, holds_namespace);
  check_depth(*this);
}

Value::Value(Dict d) : kind(Kind::dict), depth(1), dict(std::make_shared<Dict>(std::move(d))) {
  holds_namespace = dict->is_namespace;
  charge_steps(dict->items.size());
  charge_bytes(dict->items.size() * sizeof(dict->items[0]));
  for (const auto& kv : dict->items) nest_over(kv.second, depth, holds_namespace);
  check_depth(*this);
}

Value::Value(const Value& o)
    : kind(o.kind),
      b(o.b),
      depth(o.depth),
      holds_namespace(o.holds_namespace),
      i(o.i),
      f(o.f),
      list(o.list),
      dict(o.dict) {
  if (Budget* budget = Budget::active()) {
    budget->step();
    budget->alloc(o.s.size());
  }
  s = o.s;
}

Value& Value::operator=(const Value& o) {
  if (this != &o) *this = Value(o);
  return *this;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return b;
    case Kind::integer: return i != 0;
    case Kind::floating: return f != 0;
    case Kind::string: return !s.empty();
    case Kind::list: return !list->empty();
    case Kind::dict: return dict->is_namespace || !dict->items.empty();
  }
  return false;
}

namespace {

// Python's float repr: shortest round-trip digits, scientific below 1e-4 and from 1e16.
std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // d.ddde[+-]XX
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(1, '.').append(digits, 1, std::string::npos);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out.assign("0.").append(size_t(-exp - 1), '0').append(digits);
  } else {
    if (digits.size() <= size_t(exp) + 1) {
      out = digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
  }
  if (neg) out.insert(out.begin(), '-');
  return out;
}

// Appends Python's str()/repr() or json.dumps() text of values to one string,
// charging the active budget per value and per byte: a value that shares its
// parts ([x, x] nested sixty times) is small, its text is not.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void put(std::string_view t) {
    charge_bytes(t.size());
    out_ += t;
  }

  void str(const Value& v) {
    charge_steps(1);
    switch (v.kind) {
      case Value::Kind::undefined:
        return;
      case Value::Kind::none:
        return put("None");
      case Value::Kind::boolean:
        return put(v.b ? "True" : "False");
      case Value::Kind::integer:
        return put(std::to_string(v.i));
      case Value::Kind::floating:
        return put(float_repr(v.f));
      case Value::Kind::string:
        return put(v.s);
      case Value::Kind::list:
        put("[");
        for (size_t k = 0; k < v.list->size(); ++k) {
          if (k) put(", ");
          repr((*v.list)[k]);
        }
        return put("]");
      case Value::Kind::dict:
        if (v.dict->is_namespace) return put("<Namespace>");
        put("{");
        for (size_t k = 0; k < v.dict->items.size(); ++k) {
          if (k) put(", ");
          repr_str(v.dict->items[k].first);
          put(": ");
          repr(v.dict->items[k].second);
        }
        return put("}");
    }
  }

  // Python's repr of a str: quotes chosen as Python chooses them.
  void repr_str(const std::string& s) {
    charge_scan(s.size());
    const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = dq ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
      if (c == '\\')
        out += "\\\\";
      else if (c == '\n')
        out += "\\n";
      else if (c == '\r')
        out += "\\r";
      else if (c == '\t')
        out += "\\t";
      else if (c == uint8_t(q))
        out += std::string("\\") + char(q);
      else if (c < 0x20 || c == 0x7F) {
        char b[8];
        std::snprintf(b, sizeof b, "\\x%02x", c);
        out += b;
      } else
        out += char(c);
    }
    out += q;
    put(out);
  }

  void repr(const Value& v) {
    if (v.is_string())
      repr_str(v.s);
    else
      str(v);
  }

  // indent < 0: one line with ", " and ": " separators.
  void json(const Value& v, int64_t indent, int64_t level) {
    charge_steps(1);
    switch (v.kind) {
      case Value::Kind::undefined:
        throw TemplateError("[chat_template] tojson: an undefined value is not JSON serializable");
      case Value::Kind::none:
        return put("null");
      case Value::Kind::boolean:
        return put(v.b ? "true" : "false");
      case Value::Kind::integer:
        return put(std::to_string(v.i));
      case Value::Kind::floating:
        if (std::isnan(v.f)) return put("NaN");
        if (std::isinf(v.f)) return put(v.f > 0 ? "Infinity" : "-Infinity");
        return put(float_repr(v.f));
      case Value::Kind::string:
        return json_str(v.s);
      case Value::Kind::list:
        if (v.list->empty()) return put("[]");
        put("[");
        for (size_t k = 0; k < v.list->size(); ++k) {
          if (k) put(indent >= 0 ? "," : ", ");
          newline(indent, level + 1);
          json((*v.list)[k], indent, level + 1);
        }
        newline(indent, level);
        return put("]");
      case Value::Kind::dict:
        if (v.dict->is_namespace)
          throw TemplateError("[chat_template] tojson: Object of type Namespace is not JSON serializable");
        if (v.dict->items.empty()) return put("{}");
        put("{");
        for (size_t k = 0; k < v.dict->items.size(); ++k) {
          if (k) put(indent >= 0 ? "," : ", ");
          newline(indent, level + 1);
          json_str(v.dict->items[k].first);
          put(": ");
          json(v.dict->items[k].second, indent, level + 1);
        }
        newline(indent, level);
        return put("}");
    }
  }

 private:
  std::string& out_;

  void newline(int64_t indent, int64_t level) {
    if (indent < 0) return;
    // Charged before it is built: indent may be any int the template passed.
    uint64_t n;
    if (__builtin_mul_overflow(uint64_t(indent), uint64_t(level), &n) || n > kMaxBytes) n = kMaxBytes + 1;
    charge_bytes(n + 1);
    out_ += '\n';
    out_.append(size_t(n), ' ');
  }

  void json_str(const std::string& s) {
    charge_scan(s.size());
    std::string out = "\"";
    for (unsigned char c : s) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            out += b;
          } else {
            out += char(c);
          }
      }
    }
    out += '"';
    put(out);
  }
};

Value from_dom(simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      List l;
      const simdjson::dom::array arr = e.get_array().value_unsafe();
      for (auto x : arr) l.push_back(from_dom(x));
      return Value(std::move(l));
    }
    case T::OBJECT: {
      Dict d;
      const simdjson::dom::object obj = e.get_object().value_unsafe();
      for (auto kv : obj) d.items.emplace_back(std::string(kv.key), from_dom(kv.value));
      return Value(std::move(d));
    }
    case T::INT64: return Value(e.get_int64().value_unsafe());
    case T::UINT64: return Value(double(e.get_uint64().value_unsafe()));
    case T::DOUBLE: return Value(e.get_double().value_unsafe());
    case T::STRING: return Value(std::string(e.get_string().value_unsafe()));
    case T::BOOL: return Value(e.get_bool().value_unsafe());
    case T::NULL_VALUE: return Value::none();
  }
  return Value();
}

}  // namespace

std::string Value::str() const {
  if (kind == Kind::string) return s;
  std::string out;
  Writer(out).str(*this);
  return out;
}

std::string Value::to_json(int indent, int level) const { return to_json_text(*this, indent, level); }

std::string to_json_text(const Value& v, int64_t indent, int64_t level) {
  std::string out;
  Writer(out).json(v, indent, level);
  return out;
}

Value Value::parse_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const auto err = parser.parse(simdjson::padded_string(json)).get(root);
  if (err) throw ValueError(std::string("[chat_template] invalid JSON: ") + simdjson::error_message(err));
  return from_dom(root);
}

}  // namespace kiln::jinja
