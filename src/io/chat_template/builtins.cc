// Filters, tests, globals and Python methods for chat templates, with Jinja2's
// and Python's semantics for the cases chat templates reach.
#include "io/chat_template/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <optional>
#include <unordered_set>

#include "io/chat_template/arith.h"
#include "io/chat_template/limits.h"
#include "io/chat_template/text.h"

namespace kiln::jinja {
using K = Value::Kind;
using text::case_map;

std::shared_ptr<const List> iterate(const Node& at, const Value& v) {
  if (v.kind == K::list) return v.list;
  auto l = std::make_shared<List>();
  if (v.kind == K::dict) {
    for (const auto& kv : v.dict->items) {
      charge_bytes(sizeof(Value));
      l->push_back(Value(kv.first));
    }
  } else if (v.kind == K::string) {
    for (size_t i = 0, e; i < v.s.size(); i = e) {
      e = text::cp_end(v.s, i);
      charge_bytes(sizeof(Value));  // a Value per character: counted before it exists
      l->push_back(Value(v.s.substr(i, e - i)));
    }
  } else if (!v.is_undefined()) {
    fail_at(at, "'" + type_name(v) + "' object is not iterable");
  }
  return l;
}

namespace {

bool starts_or_ends(const Node& at, const Value& s, const Value& arg, bool start) {
  auto one = [&](const Value& p) {
    if (!p.is_string())
      fail_at(at, "startswith/endswith: expected a str or a tuple of str, not " + type_name(p));
    charge_scan(p.s.size());
    if (p.s.size() > s.s.size()) return false;
    return start ? s.s.compare(0, p.s.size(), p.s) == 0
                 : s.s.compare(s.s.size() - p.s.size(), p.s.size(), p.s) == 0;
  };
  if (arg.kind == K::list) {
    for (const Value& p : *arg.list)
      if (one(p)) return true;
    return false;
  }
  return one(arg);
}

// Jinja's attribute paths: "a.b.0" reads attribute a, then b, then item 0.
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t j = std::min(path.find('.', i), path.size());
    const std::string part = path.substr(i, j - i);
    const bool index =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (index) {
      int64_t k;
      bool over;
      if (!parse_int(part, &k, &over) || over) return Value();  // no list is that long
      cur = get_item(cur, Value(k));
    } else {
      cur = get_attr(cur, part);
    }
    i = j + 1;
  }
  return cur;
}

int64_t int_arg(const Node& at, const Value* v, int64_t dflt, const char* what) {
  if (!v || v->is_none()) return dflt;
  if (!is_int_like(*v)) fail_at(at, std::string(what) + " must be an int, not " + type_name(*v));
  return v->kind == K::boolean ? int64_t(v->b) : v->i;
}

// Jinja's |unique: hashing as Python's set does, where 1 == 1.0 == True and
// strings compare case-insensitively unless case_sensitive.
class Seen {
 public:
  Seen(const Node& at, bool case_sensitive) : at_(at), case_sensitive_(case_sensitive) {}
  bool insert(const Value& v) {
    charge_steps(1);
    switch (v.kind) {
      case K::boolean:
      case K::integer:
        return ints_.insert(v.kind == K::boolean ? int64_t(v.b) : v.i).second;
      case K::floating:
        if (std::isfinite(v.f) && v.f == std::trunc(v.f) && std::fabs(v.f) < 9.2e18)
          return ints_.insert(int64_t(v.f)).second;
        return others_.insert("f" + v.str()).second;
      case K::string: {
        charge_bytes(v.s.size());
        return others_.insert("s" + (case_sensitive_ ? v.s : case_map(v.s, 0))).second;
      }
      case K::none:
        return others_.insert("N").second;
      case K::undefined:
        return others_.insert("U").second;
      default:
        fail_at(at_, "unhashable type: '" + type_name(v) + "'");
    }
  }

 private:
  const Node& at_;
  bool case_sensitive_;
  std::unordered_set<int64_t> ints_;
  std::unordered_set<std::string> others_;
};

}  // namespace

bool equal(const Value& a, const Value& b) {
  charge_steps(1);
  if (is_numeric(a) && is_numeric(b)) {
    const std::optional<int> c = compare_numbers(a, b);
    return c && *c == 0;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::undefined:
    case K::none: return true;
    case K::string:
      charge_scan(a.s.size());
      return a.s == b.s;
    case K::list:
      if (a.list == b.list) return true;
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
  if (obj.kind == K::dict) {
    if (const Value* v = obj.dict->find(key.str())) return *v;
    return Value();
  }
  if (!is_int_like(key)) return Value();
  const int64_t k = key.kind == K::boolean ? int64_t(key.b) : key.i;
  if (obj.kind == K::list) {
    const int64_t i = k < 0 ? k + int64_t(obj.list->size()) : k;
    if (i < 0 || i >= int64_t(obj.list->size())) return Value();
    return (*obj.list)[size_t(i)];
  }
  if (obj.kind == K::string) {
    const int64_t n = k < 0 ? text::count_cps(obj.s) : 0;
    const int64_t i = k < 0 ? k + n : k;
    if (i < 0) return Value();
    const size_t b = text::cp_offset(obj.s, i);
    if (b >= obj.s.size()) return Value();
    return Value(obj.s.substr(b, text::cp_end(obj.s, b) - b));
  }
  return Value();
}

bool apply_test(const Node& at, const std::string& name, const Value& v, const Args& a) {
  const Value* x = a.get(0, "value");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return is_numeric(v) && v.kind != K::boolean;
  if (name == "integer") return v.kind == K::integer;
  if (name == "float") return v.kind == K::floating;
  if (name == "boolean") return v.kind == K::boolean;
  if (name == "true") return v.kind == K::boolean && v.b;
  if (name == "false") return v.kind == K::boolean && !v.b;
  if (name == "mapping") return v.kind == K::dict;
  if (name == "iterable") return v.kind == K::list || v.kind == K::dict || v.kind == K::string;
  if (name == "sequence") return v.kind == K::list || v.kind == K::dict || v.kind == K::string;
  if (name == "callable") return false;
  if (name == "odd" || name == "even") {
    if (!is_int_like(v)) fail_at(at, "test " + name + " needs an int, not " + type_name(v));
    const int64_t i = v.kind == K::boolean ? int64_t(v.b) : v.i;
    return (i % 2 != 0) == (name == "odd");
  }
  if (name == "lower") return v.is_string() && case_map(v.s, 0) == v.s;
  if (name == "upper") return v.is_string() && case_map(v.s, 1) == v.s;
  if (!x) fail_at(at, "test '" + name + "' needs an argument");
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") return equal(v, *x);
  if (name == "ne" || name == "!=") return !equal(v, *x);
  if (name == "lt" || name == "gt" || name == "le" || name == "ge") {
    std::optional<int> c;
    if (is_numeric(v) && is_numeric(*x)) {
      c = compare_numbers(v, *x);
    } else if (v.is_string() && x->is_string()) {
      charge_scan(std::min(v.s.size(), x->s.size()));
      c = v.s.compare(x->s) < 0 ? -1 : v.s == x->s ? 0 : 1;
    } else {
      fail_at(at, "'" + name + "' not supported between instances of '" + type_name(v) + "' and '" +
                      type_name(*x) + "'");
    }
    if (!c) return false;
    return name == "lt" ? *c < 0 : name == "gt" ? *c > 0 : name == "le" ? *c <= 0 : *c >= 0;
  }
  if (name == "divisibleby") {
    const Value r = arith(at, "%", v, *x);  // errors on a zero divisor, as Python
    return r.kind == K::floating ? r.f == 0 : r.i == 0;
  }
  if (name == "in") {
    if (x->is_string()) return v.is_string() && text::find(x->s, v.s) != std::string::npos;
    const auto items = iterate(at, *x);
    for (const Value& e : *items)
      if (equal(e, v)) return true;
    return false;
  }
  fail_at(at, "unknown test '" + name + "'");
}

namespace {

// |join and str.join: the result grows by the separator per item, so it is
// charged as it grows.
std::string join(const Node& at, const Value& seq, const std::string& sep, const Value* attr) {
  std::string out;
  bool first = true;
  const auto items = iterate(at, seq);
  for (const Value& e : *items) {
    if (!first) {
      charge_bytes(sep.size());
      out += sep;
    }
    first = false;
    const Value part = attr ? attr_path(e, attr->str()) : e;
    const std::string t = part.is_string() ? part.s : part.str();
    charge_bytes(t.size());
    out += t;
  }
  return out;
}

// Jinja's |sort: keys computed once, strings compared case-insensitively
// unless case_sensitive; mixed types fail as Python's sorted() does.
Value sort(const Node& at, const Value& v, const Args& a) {
  const bool reverse = a.get(0, "reverse") && a.get(0, "reverse")->truthy();
  const bool case_sensitive = a.get(1, "case_sensitive") && a.get(1, "case_sensitive")->truthy();
  const Value* attr = a.get(2, "attribute");
  const auto items = iterate(at, v);
  std::vector<std::pair<Value, size_t>> keyed;
  keyed.reserve(items->size());
  for (size_t k = 0; k < items->size(); ++k) {
    Value key = attr ? attr_path((*items)[k], attr->str()) : (*items)[k];
    if (key.is_string() && !case_sensitive) key = Value(case_map(key.s, 0));
    keyed.emplace_back(std::move(key), k);
  }
  auto less = [&](const std::pair<Value, size_t>& p, const std::pair<Value, size_t>& q) {
    charge_steps(1);
    const Value &x = p.first, &y = q.first;
    if (is_numeric(x) && is_numeric(y)) {
      const std::optional<int> c = compare_numbers(x, y);
      return c && *c < 0;
    }
    if (x.is_string() && y.is_string()) {
      charge_scan(std::min(x.s.size(), y.s.size()));
      return x.s < y.s;
    }
    fail_at(at,
            "sort: '<' not supported between instances of '" + type_name(x) + "' and '" + type_name(y) + "'");
  };
  // Python's reverse=True keeps equal items in their order: sort by "greater".
  if (reverse)
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& p, const auto& q) { return less(q, p); });
  else
    std::stable_sort(keyed.begin(), keyed.end(), less);
  List out;
  out.reserve(keyed.size());
  for (const auto& kv : keyed) out.push_back((*items)[kv.second]);
  return Value(std::move(out));
}

// Python's len(); an undefined value has length 0.
Value length_filter(const Node& at, const Value& v) {
  if (v.kind == K::string) return Value(text::count_cps(v.s));
  if (v.kind == K::list) return Value(int64_t(v.list->size()));
  if (v.kind == K::dict) return Value(int64_t(v.dict->items.size()));
  if (v.is_undefined()) return Value(int64_t(0));
  fail_at(at, "object of type '" + type_name(v) + "' has no len()");
}

// The first or last item (a string's: code point) or none.
Value first_or_last(const Node& at, const std::string& name, const Value& v) {
  if (v.is_string()) {
    if (v.s.empty()) return Value();
    if (name == "first") return Value(v.s.substr(0, text::cp_end(v.s, 0)));
    const std::vector<size_t> off = text::cp_offsets(v.s);
    return Value(v.s.substr(off[off.size() - 2]));
  }
  const auto l = iterate(at, v);
  if (l->empty()) return Value();
  return name == "first" ? l->front() : l->back();
}

// A string reversed by code point, or a list of the items reversed.
Value reverse_filter(const Node& at, const Value& v) {
  if (v.is_string()) {
    const std::vector<size_t> off = text::cp_offsets(v.s);
    std::string out;
    out.reserve(v.s.size());
    for (size_t k = off.size() - 1; k > 0; --k) out.append(v.s, off[k - 1], off[k] - off[k - 1]);
    return Value(out);
  }
  List l(*iterate(at, v));
  std::reverse(l.begin(), l.end());
  return Value(std::move(l));
}

// The items in order, without repeats (by attribute when given).
Value unique_filter(const Node& at, const Value& v, const Args& a) {
  const Value* cs = a.get(0, "case_sensitive");
  const Value* attr = a.get(1, "attribute");
  Seen seen(at, cs && cs->truthy());
  List out;
  const auto items = iterate(at, v);
  for (const Value& e : *items)
    if (seen.insert(attr ? attr_path(e, attr->str()) : e)) out.push_back(e);
  return Value(std::move(out));
}

// HTML escaping as markupsafe does it.
Value escape_filter(const Value& v) {
  const std::string in = v.str();
  charge_scan(in.size());
  std::string out;
  for (char c : in) {
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

// Each item's attribute, or each item through the filter named first.
Value map_filter(const Node& at, const Value& v, const Args& a) {
  List out;
  const Value* attr = a.get(99, "attribute");
  const auto items = iterate(at, v);
  for (const Value& e : *items) {
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

// select / reject (by a test on the item) and selectattr / rejectattr (on an attribute).
Value select_filter(const Node& at, const std::string& name, const Value& v, const Args& a) {
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
  const auto items = iterate(at, v);
  for (const Value& e : *items) {
    const Value subject = by_attr ? attr_path(e, attr) : e;
    const bool r = test.empty() ? subject.truthy() : apply_test(at, test, subject, rest);
    if (r == keep_true) out.push_back(e);
  }
  return Value(std::move(out));
}

}  // namespace

Value apply_filter(const Node& at, const std::string& name, const Value& v, const Args& a) {
  if (name == "length" || name == "count") return length_filter(at, v);
  if (name == "safe") return v;
  if (name == "string") return Value(v.str());
  if (name == "trim") return Value(text::strip(v.str(), a.get(0, "chars"), true, true));
  if (name == "upper") return Value(case_map(v.str(), 1));
  if (name == "lower") return Value(case_map(v.str(), 0));
  if (name == "capitalize") return Value(case_map(v.str(), 2));
  if (name == "title") return Value(case_map(v.str(), 3));
  if (name == "tojson") {
    const Value* ind = a.get(0, "indent");
    // Python's json.dumps: indent None is one line, a negative indent is 0.
    const int64_t indent =
        ind && !ind->is_none() ? std::max<int64_t>(int_arg(at, ind, -1, "tojson: indent"), 0) : -1;
    return Value(to_json_text(v, indent));
  }
  if (name == "default" || name == "d") {
    const Value* dflt = a.get(0, "default_value");
    const Value* boolean = a.get(1, "boolean");
    const bool use = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    return use ? (dflt ? *dflt : Value("")) : v;
  }
  if (name == "join") {
    const Value* sep = a.get(0, "d");
    return Value(join(at, v, sep ? sep->str() : std::string(), a.get(1, "attribute")));
  }
  if (name == "first" || name == "last") return first_or_last(at, name, v);
  if (name == "list") {
    const auto l = iterate(at, v);
    return Value(List(*l));
  }
  if (name == "reverse") return reverse_filter(at, v);
  if (name == "items") {
    List l;
    if (v.kind == K::dict)
      for (const auto& kv : v.dict->items) l.push_back(Value(List{Value(kv.first), kv.second}));
    return Value(std::move(l));
  }
  if (name == "unique") return unique_filter(at, v, a);
  if (name == "int") return int_filter(at, v, a.get(0, "default"));
  if (name == "float") return float_filter(v, a.get(0, "default"));
  if (name == "abs") return abs_filter(at, v);
  if (name == "replace") {
    const Value* from = a.get(0, "old");
    const Value* to = a.get(1, "new");
    const Value* count = a.get(2, "count");
    if (!from || !to) fail_at(at, "replace needs two arguments");
    return Value(text::replace(v.str(), from->str(), to->str(), int_arg(at, count, -1, "replace: count")));
  }
  if (name == "e" || name == "escape") return escape_filter(v);
  if (name == "map") return map_filter(at, v, a);
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") return select_filter(at, name, v, a);
  if (name == "sort") return sort(at, v, a);
  if (name == "round") return round_filter(at, v, a.get(0, "precision"), a.get(1, "method"));
  fail_at(at, "unknown filter '" + name + "'");
}

Value call_method(const Node& at, const Value& obj, const std::string& name, const Args& a) {
  const Value* x = a.get(0, "x");
  if (obj.kind == K::string) {
    const std::string& s = obj.s;
    auto str_arg = [&](const Value* v) -> const std::string& {
      if (!v || !v->is_string()) fail_at(at, "str." + name + " needs a str argument");
      return v->s;
    };
    if (name == "startswith" || name == "endswith") {
      if (!x) fail_at(at, name + " needs an argument");
      return Value(starts_or_ends(at, obj, *x, name == "startswith"));
    }
    if (name == "strip") return Value(text::strip(s, x, true, true));
    if (name == "lstrip") return Value(text::strip(s, x, true, false));
    if (name == "rstrip") return Value(text::strip(s, x, false, true));
    if (name == "split" || name == "rsplit") {
      const int64_t maxsplit = int_arg(at, a.get(1, "maxsplit"), -1, "split: maxsplit");
      return Value(text::split(s, a.get(0, "sep"), maxsplit, name == "rsplit"));
    }
    if (name == "upper") return Value(case_map(s, 1));
    if (name == "lower") return Value(case_map(s, 0));
    if (name == "capitalize") return Value(case_map(s, 2));
    if (name == "title") return Value(case_map(s, 3));
    if (name == "replace") {
      const Value* to = a.get(1, "new");
      return Value(
          text::replace(s, str_arg(x), str_arg(to), int_arg(at, a.get(2, "count"), -1, "replace: count")));
    }
    if (name == "find" || name == "rfind") {
      const std::string& needle = str_arg(x);
      const size_t p = name == "find" ? text::find(s, needle) : text::rfind(s, needle);
      return Value(p == std::string::npos ? int64_t(-1) : text::count_cps(std::string_view(s).substr(0, p)));
    }
    if (name == "count") {
      const std::string& needle = str_arg(x);
      if (needle.empty()) return Value(text::count_cps(s) + 1);
      int64_t n = 0;
      for (size_t p = text::find(s, needle); p != std::string::npos;
           p = text::find(s, needle, p + needle.size()))
        ++n;
      return Value(n);
    }
    if (name == "join") {
      if (!x) fail_at(at, "join needs an argument");
      return Value(join(at, *x, s, nullptr));
    }
    if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
      charge_scan(s.size());
      if (s.empty()) return Value(false);
      for (unsigned char c : s) {
        const bool ok = name == "isdigit"   ? std::isdigit(c)
                        : name == "isspace" ? text::is_space(char(c))
                        : name == "isalpha" ? std::isalpha(c)
                                            : std::isalnum(c);
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
  fail_at(at, "no method '" + name + "' on " + type_name(obj));
}

namespace {

// range() as Jinja's sandbox allows it: ints, at most kMaxRange items.
Value range(const Node& at, const Args& a) {
  if (a.pos.empty() || a.pos.size() > 3)
    fail_at(at, "range expected 1 to 3 arguments, got " + std::to_string(a.pos.size()));
  int64_t arg[3];
  for (size_t k = 0; k < a.pos.size(); ++k) {
    const Value& v = a.pos[k];
    if (!is_int_like(v))
      fail_at(at, "range: '" + type_name(v) + "' object cannot be interpreted as an integer");
    arg[k] = v.kind == K::boolean ? int64_t(v.b) : v.i;
  }
  const int64_t start = a.pos.size() == 1 ? 0 : arg[0];
  const int64_t stop = a.pos.size() == 1 ? arg[0] : arg[1];
  const int64_t step = a.pos.size() == 3 ? arg[2] : 1;
  if (step == 0) fail_at(at, "range() arg 3 must not be zero");
  // The length in unsigned arithmetic: stop - start may not fit an int64.
  uint64_t count = 0;
  if (step > 0 && start < stop) count = (uint64_t(stop) - uint64_t(start) - 1) / uint64_t(step) + 1;
  if (step < 0 && start > stop)
    count = (uint64_t(start) - uint64_t(stop) - 1) / (uint64_t(0) - uint64_t(step)) + 1;
  if (count > uint64_t(kMaxRange))
    fail_at(at, "range too big: " + std::to_string(count) + " items, Jinja's sandbox allows " +
                    std::to_string(kMaxRange));
  List l;
  l.reserve(size_t(count));
  for (uint64_t k = 0; k < count; ++k) l.push_back(Value(int64_t(uint64_t(start) + k * uint64_t(step))));
  return Value(std::move(l));
}

}  // namespace

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
  if (name == "range") return range(at, a);
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
