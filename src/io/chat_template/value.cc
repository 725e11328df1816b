// Template values: Python's str()/repr() and json.dumps() spellings, JSON input.
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "kiln/chat_template.h"

namespace kiln::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}
Value* Dict::find(std::string_view key) {
  for (auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}
void Dict::set(std::string key, Value v) {
  if (Value* x = find(key)) {
    *x = std::move(v);
    return;
  }
  items.emplace_back(std::move(key), std::move(v));
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

std::string py_repr_str(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c == uint8_t(q)) out += std::string("\\") + char(q);
    else if (c < 0x20 || c == 0x7F) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else out += char(c);
  }
  return out + q;
}

std::string repr(const Value& v) { return v.is_string() ? py_repr_str(v.s) : v.str(); }

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
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
  return out + "\"";
}

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
  switch (kind) {
    case Kind::undefined: return "";
    case Kind::none: return "None";
    case Kind::boolean: return b ? "True" : "False";
    case Kind::integer: return std::to_string(i);
    case Kind::floating: return float_repr(f);
    case Kind::string: return s;
    case Kind::list: {
      std::string out = "[";
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) out += ", ";
        out += repr((*list)[k]);
      }
      return out + "]";
    }
    case Kind::dict: {
      if (dict->is_namespace) return "<Namespace>";
      std::string out = "{";
      for (size_t k = 0; k < dict->items.size(); ++k) {
        if (k) out += ", ";
        out += py_repr_str(dict->items[k].first);
        out += ": ";
        out += repr(dict->items[k].second);
      }
      return out + "}";
    }
  }
  return "";
}

std::string Value::to_json(int indent, int depth) const {
  std::string nl, close;
  if (indent >= 0) {
    nl.assign(1, '\n').append(size_t(indent) * size_t(depth + 1), ' ');
    close.assign(1, '\n').append(size_t(indent) * size_t(depth), ' ');
  }
  const char* sep = indent >= 0 ? "," : ", ";
  switch (kind) {
    case Kind::undefined: throw TemplateError("[chat_template] tojson: an undefined value is not JSON serializable");
    case Kind::none: return "null";
    case Kind::boolean: return b ? "true" : "false";
    case Kind::integer: return std::to_string(i);
    case Kind::floating:
      if (std::isnan(f)) return "NaN";
      if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
      return float_repr(f);
    case Kind::string: return json_str(s);
    case Kind::list: {
      if (list->empty()) return "[]";
      std::string out = "[";
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) out += sep;
        out += nl;
        out += (*list)[k].to_json(indent, depth + 1);
      }
      return out + close + "]";
    }
    case Kind::dict: {
      if (dict->items.empty()) return "{}";
      std::string out = "{";
      for (size_t k = 0; k < dict->items.size(); ++k) {
        if (k) out += sep;
        out += nl;
        out += json_str(dict->items[k].first);
        out += ": ";
        out += dict->items[k].second.to_json(indent, depth + 1);
      }
      return out + close + "}";
    }
  }
  return "null";
}

Value Value::parse_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const auto err = parser.parse(simdjson::padded_string(json)).get(root);
  if (err) throw ValueError(std::string("[chat_template] invalid JSON: ") + simdjson::error_message(err));
  return from_dom(root);
}

}  // namespace kiln::jinja
