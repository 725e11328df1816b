// Filters, tests, globals and Python methods for chat templates, with Jinja2's
// and Python's semantics for the cases chat templates reach.
#include "io/chat_template/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace kiln::jinja {
namespace {

using K = Value::Kind;

bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  auto drop = [&](char c) {
    if (!chars || chars->is_none()) return is_py_space(c);
    return chars->s.find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && drop(s[b])) ++b;
  if (right)
    while (e > b && drop(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s, const Value* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty pieces
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_py_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
        out.push_back(s.substr(i));
        break;
      }
      size_t e = i;
      while (e < s.size() && !is_py_space(s[e])) ++e;
      out.push_back(s.substr(i, e - i));
      i = e;
    }
    return out;
  }
  const std::string& d = sep->s;
  if (d.empty()) throw TemplateError("[chat_template] split: empty separator");
  size_t i = 0;
  while (true) {
    const size_t j = s.find(d, i);
    if (j == std::string::npos || (maxsplit >= 0 && int64_t(out.size()) == maxsplit)) {
      out.push_back(s.substr(i));
      return out;
    }
    out.push_back(s.substr(i, j - i));
    i = j + d.size();
  }
}

std::string replace_all(std::string s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  size_t i = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    i = s.find(from, i);
    if (i == std::string::npos) break;
    s.replace(i, from.size(), to);
    i += to.size();
  }
  return s;
}

std::string case_map(const std::string& s, int mode) {  // 0 lower, 1 upper, 2 capitalize, 3 title (ASCII)
  std::string out = s;
  bool start = true;
  for (size_t k = 0; k < out.size(); ++k) {
    char& c = out[k];
    const bool alpha = std::isalpha(uint8_t(c));
    if (mode == 0 || (mode == 2 && k > 0) || (mode == 3 && !start)) c = char(std::tolower(uint8_t(c)));
    else if (mode == 1 || (mode == 2 && k == 0) || (mode == 3 && start)) c = char(std::toupper(uint8_t(c)));
    start = !alpha;
  }
  return out;
}

List as_list(const Node& at, const Value& v) {
  if (v.kind == K::list) return *v.list;
  List l;
  if (v.kind == K::dict)
    for (const auto& kv : v.dict->items) l.push_back(Value(kv.first));
  else if (v.kind == K::string)
    for (const std::string& c : code_points(v.s)) l.push_back(Value(c));
  else if (!v.is_undefined())
    fail_at(at, "'" + v.str() + "' is not iterable");
  return l;
}

bool starts_or_ends(const Value& s, const Value& arg, bool start) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.s.size()) return false;
    return start ? s.s.compare(0, p.size(), p) == 0 : s.s.compare(s.s.size() - p.size(), p.size(), p) == 0;
  };
  if (arg.kind == K::list) {
    for (const Value& p : *arg.list)
      if (one(p.s)) return true;
    return false;
  }
  return one(arg.s);
}

Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t j = std::min(path.find('.', i), path.size());
    const std::string part = path.substr(i, j - i);
    cur = (!part.empty() && std::isdigit(uint8_t(part[0]))) ? get_item(cur, Value(int64_t(std::stoll(part))))
                                                             : get_attr(cur, part);
    i = j + 1;
  }
  return cur;
}

}  // namespace

std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = uint8_t(s[i]);
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

double num(const Value& v) {
  if (v.kind == K::integer) return double(v.i);
  if (v.kind == K::floating) return v.f;
  if (v.kind == K::boolean) return v.b;
  return 0;
}

bool equal(const Value& a, const Value& b) {
  const bool an = a.is_number() || a.kind == K::boolean, bn = b.is_number() || b.kind == K::boolean;
  if (an && bn) return num(a) == num(b);
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::undefined:
    case K::none: return true;
    case K::string: return a.s == b.s;
    case K::list:
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case K::dict:
      if (a.dict == b.dict) return true;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& kv : a.dict->items) {
        const Value* o = b.dict->find(kv.first);
        if (!o || !equal(kv.second, *o)) return false;
      }
      return true;
    default: return false;
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.kind == K::dict)
    if (const Value* v = obj.dict->find(name)) return *v;
  return Value();
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.kind == K::list && key.kind == K::integer) {
    int64_t i = key.i;
    if (i < 0) i += int64_t(obj.list->size());
    if (i < 0 || i >= int64_t(obj.list->size())) return Value();
    return (*obj.list)[size_t(i)];
  }
  if (obj.kind == K::dict) {
    if (const Value* v = obj.dict->find(key.str())) return *v;
    return Value();
  }
  if (obj.kind == K::string && key.kind == K::integer) {
    const auto cps = code_points(obj.s);
    int64_t i = key.i;
    if (i < 0) i += int64_t(cps.size());
    if (i < 0 || i >= int64_t(cps.size())) return Value();
    return Value(cps[size_t(i)]);
  }
  return Value();
}

bool apply_test(const Node& at, const std::string& name, const Value& v, const Args& a) {
  const Value* x = a.get(0, "value");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::integer;
  if (name == "float") return v.kind == K::floating;
  if (name == "boolean") return v.kind == K::boolean;
  if (name == "true") return v.kind == K::boolean && v.b;
  if (name == "false") return v.kind == K::boolean && !v.b;
  if (name == "mapping") return v.kind == K::dict;
  if (name == "iterable") return v.kind == K::list || v.kind == K::dict || v.kind == K::string;
  if (name == "sequence") return v.kind == K::list || v.kind == K::dict || v.kind == K::string;
  if (name == "callable") return false;
  if (name == "odd") return v.kind == K::integer && (v.i % 2 != 0);
  if (name == "even") return v.kind == K::integer && (v.i % 2 == 0);
  if (name == "lower") return v.is_string() && case_map(v.s, 0) == v.s;
  if (name == "upper") return v.is_string() && case_map(v.s, 1) == v.s;
  if (!x) fail_at(at, "test '" + name + "' needs an argument");
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") return equal(v, *x);
  if (name == "ne" || name == "!=") return !equal(v, *x);
  if (name == "lt" || name == "gt" || name == "le" || name == "ge") {
    const double p = num(v), q = num(*x);
    return name == "lt" ? p < q : name == "gt" ? p > q : name == "le" ? p <= q : p >= q;
  }
  if (name == "divisibleby") return x->i != 0 && v.i % x->i == 0;
  if (name == "in") {
    if (x->is_string()) return v.is_string() && x->s.find(v.s) != std::string::npos;
    for (const Value& e : as_list(at, *x))
      if (equal(e, v)) return true;
    return false;
  }
  fail_at(at, "unknown test '" + name + "'");
}

Value apply_filter(const Node& at, const std::string& name, const Value& v, const Args& a) {
  if (name == "length" || name == "count") {
    if (v.kind == K::string) return Value(int64_t(code_points(v.s).size()));
    return Value(int64_t(as_list(at, v).size()));
  }
  if (name == "safe") return v;
  if (name == "string") return Value(v.str());
  if (name == "trim") return Value(strip(v.str(), a.get(0, "chars"), true, true));
  if (name == "upper") return Value(case_map(v.str(), 1));
  if (name == "lower") return Value(case_map(v.str(), 0));
  if (name == "capitalize") return Value(case_map(v.str(), 2));
  if (name == "title") return Value(case_map(v.str(), 3));
  if (name == "tojson") {
    const Value* ind = a.get(0, "indent");
    return Value(v.to_json(ind && ind->kind == K::integer ? int(ind->i) : -1));
  }
  if (name == "default" || name == "d") {
    const Value* dflt = a.get(0, "default_value");
    const Value* boolean = a.get(1, "boolean");
    const bool use = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    return use ? (dflt ? *dflt : Value("")) : v;
  }
  if (name == "join") {
    const Value* sep = a.get(0, "d");
    const Value* attr = a.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& e : as_list(at, v)) {
      if (!first && sep) out += sep->str();
      first = false;
      out += attr ? attr_path(e, attr->str()).str() : e.str();
    }
    return Value(out);
  }
  if (name == "first" || name == "last") {
    const List l = as_list(at, v);
    if (l.empty()) return Value();
    return name == "first" ? l.front() : l.back();
  }
  if (name == "list") return Value(as_list(at, v));
  if (name == "reverse") {
    if (v.is_string()) {
      auto cps = code_points(v.s);
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value(out);
    }
    List l = as_list(at, v);
    std::reverse(l.begin(), l.end());
    return Value(std::move(l));
  }
  if (name == "items") {
    List l;
    if (v.kind == K::dict)
      for (const auto& kv : v.dict->items) l.push_back(Value(List{Value(kv.first), kv.second}));
    return Value(std::move(l));
  }
  if (name == "unique") {
    List out;
    for (const Value& e : as_list(at, v))
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return equal(o, e); })) out.push_back(e);
    return Value(std::move(out));
  }
  if (name == "int") {
    if (v.kind == K::floating) return Value(int64_t(v.f));
    if (v.kind == K::boolean) return Value(int64_t(v.b));
    if (v.kind == K::string) {
      try {
        return Value(int64_t(std::stoll(strip(v.s, nullptr, true, true))));
      } catch (...) {
        return Value(int64_t(0));
      }
    }
    return v.kind == K::integer ? v : Value(int64_t(0));
  }
  if (name == "float") {
    if (v.kind == K::string) {
      try {
        return Value(std::stod(v.s));
      } catch (...) {
        return Value(0.0);
      }
    }
    return Value(num(v));
  }
  if (name == "abs") return v.kind == K::integer ? Value(v.i < 0 ? -v.i : v.i) : Value(std::fabs(num(v)));
  if (name == "replace") {
    const Value* from = a.get(0, "old");
    const Value* to = a.get(1, "new");
    const Value* count = a.get(2, "count");
    if (!from || !to) fail_at(at, "replace needs two arguments");
    return Value(replace_all(v.str(), from->str(), to->str(), count && !count->is_none() ? count->i : -1));
  }
  if (name == "e" || name == "escape") {
    std::string out;
    for (char c : v.str()) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value(out);
  }
  if (name == "map") {
    List out;
    const Value* attr = a.get(99, "attribute");
    for (const Value& e : as_list(at, v)) {
      if (attr) {
        out.push_back(attr_path(e, attr->str()));
      } else if (!a.pos.empty()) {
        Args rest;
        rest.pos.assign(a.pos.begin() + 1, a.pos.end());
        out.push_back(apply_filter(at, a.pos[0].str(), e, rest));
      }
    }
    return Value(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep_true = name == "select" || name == "selectattr";
    size_t k = 0;
    std::string attr;
    if (by_attr) {
      if (a.pos.empty()) fail_at(at, name + " needs an attribute name");
      attr = a.pos[k++].str();
    }
    std::string test;
    if (k < a.pos.size()) test = a.pos[k++].str();
    Args rest;
    rest.pos.assign(a.pos.begin() + std::min(k, a.pos.size()), a.pos.end());
    List out;
    for (const Value& e : as_list(at, v)) {
      const Value subject = by_attr ? attr_path(e, attr) : e;
      const bool r = test.empty() ? subject.truthy() : apply_test(at, test, subject, rest);
      if (r == keep_true) out.push_back(e);
    }
    return Value(std::move(out));
  }
  if (name == "sort") {
    List l = as_list(at, v);
    const Value* rev = a.get(0, "reverse");
    const Value* attr = a.get(2, "attribute");
    auto key = [&](const Value& e) { return attr ? attr_path(e, attr->str()) : e; };
    std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
      const Value p = key(x), q = key(y);
      if (p.is_string() && q.is_string()) return case_map(p.s, 0) < case_map(q.s, 0);
      return num(p) < num(q);
    });
    if (rev && rev->truthy()) std::reverse(l.begin(), l.end());
    return Value(std::move(l));
  }
  if (name == "round") {
    const Value* prec = a.get(0, "precision");
    const double p = std::pow(10.0, prec ? num(*prec) : 0);
    return Value(std::nearbyint(num(v) * p) / p);
  }
  fail_at(at, "unknown filter '" + name + "'");
}

Value call_method(const Node& at, const Value& obj, const std::string& name, const Args& a) {
  const Value* x = a.get(0, "x");
  if (obj.kind == K::string) {
    const std::string& s = obj.s;
    if (name == "startswith" || name == "endswith") {
      if (!x) fail_at(at, name + " needs an argument");
      return Value(starts_or_ends(obj, *x, name == "startswith"));
    }
    if (name == "strip") return Value(strip(s, x, true, true));
    if (name == "lstrip") return Value(strip(s, x, true, false));
    if (name == "rstrip") return Value(strip(s, x, false, true));
    if (name == "split" || name == "rsplit") {
      const Value* maxsplit = a.get(1, "maxsplit");
      const Value* sep = a.get(0, "sep");
      List l;
      for (std::string& p : split(s, sep, maxsplit ? maxsplit->i : -1)) l.push_back(Value(std::move(p)));
      return Value(std::move(l));
    }
    if (name == "upper") return Value(case_map(s, 1));
    if (name == "lower") return Value(case_map(s, 0));
    if (name == "capitalize") return Value(case_map(s, 2));
    if (name == "title") return Value(case_map(s, 3));
    if (name == "replace") {
      const Value* to = a.get(1, "new");
      const Value* count = a.get(2, "count");
      if (!x || !to) fail_at(at, "replace needs two arguments");
      return Value(replace_all(s, x->str(), to->str(), count ? count->i : -1));
    }
    if (name == "find" || name == "rfind") {
      if (!x) fail_at(at, name + " needs an argument");
      const size_t p = name == "find" ? s.find(x->s) : s.rfind(x->s);
      return Value(p == std::string::npos ? int64_t(-1) : int64_t(code_points(s.substr(0, p)).size()));
    }
    if (name == "count") {
      if (!x || x->s.empty()) fail_at(at, "count needs a non-empty argument");
      int64_t n = 0;
      for (size_t p = s.find(x->s); p != std::string::npos; p = s.find(x->s, p + x->s.size())) ++n;
      return Value(n);
    }
    if (name == "join") {
      if (!x) fail_at(at, "join needs an argument");
      std::string out;
      bool first = true;
      for (const Value& e : as_list(at, *x)) {
        if (!first) out += s;
        first = false;
        out += e.str();
      }
      return Value(out);
    }
    if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
      if (s.empty()) return Value(false);
      for (unsigned char c : s) {
        const bool ok = name == "isdigit" ? std::isdigit(c) : name == "isspace" ? is_py_space(char(c))
                        : name == "isalpha" ? std::isalpha(c) : std::isalnum(c);
        if (!ok) return Value(false);
      }
      return Value(true);
    }
  }
  if (obj.kind == K::dict) {
    if (name == "items") return apply_filter(at, "items", obj, Args{});
    if (name == "keys") return apply_filter(at, "list", obj, Args{});
    if (name == "values") {
      List l;
      for (const auto& kv : obj.dict->items) l.push_back(kv.second);
      return Value(std::move(l));
    }
    if (name == "get") {
      if (!x) fail_at(at, "get needs a key");
      if (const Value* v = obj.dict->find(x->str())) return *v;
      const Value* dflt = a.get(1, "default");
      return dflt ? *dflt : Value::none();
    }
  }
  fail_at(at, "no method '" + name + "' on " + (obj.is_string() ? std::string("str") : obj.str()));
}

Value call_global(const Node& at, const std::string& name, const Args& a) {
  if (name == "raise_exception") {
    const Value* msg = a.get(0, "message");
    throw TemplateError("[chat_template] " + (msg ? msg->str() : std::string("raise_exception")));
  }
  if (name == "namespace" || name == "dict") {
    Dict d;
    d.is_namespace = name == "namespace";
    for (const auto& kv : a.kw) d.set(kv.first, kv.second);
    return Value(std::move(d));
  }
  if (name == "range") {
    int64_t start = 0, stop, step = 1;
    if (a.pos.size() == 1) {
      stop = a.pos[0].i;
    } else if (a.pos.size() >= 2) {
      start = a.pos[0].i;
      stop = a.pos[1].i;
      if (a.pos.size() >= 3) step = a.pos[2].i;
    } else {
      fail_at(at, "range needs arguments");
    }
    if (step == 0) fail_at(at, "range step cannot be zero");
    List l;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      l.push_back(Value(k));
      if (l.size() > 1'000'000) fail_at(at, "range over a million elements");
    }
    return Value(std::move(l));
  }
  if (name == "strftime_now") {
    const Value* fmt = a.get(0, "format");
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, fmt ? fmt->str().c_str() : "%Y-%m-%d", &tm);
    return Value(std::string(buf, n));
  }
  fail_at(at, "'" + name + "' is undefined");
}

}  // namespace kiln::jinja
