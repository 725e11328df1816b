// Chat-template evaluator: statements, expressions, and the Jinja2 filters,
// tests, globals and Python str/dict methods that chat templates use.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "io/chat_template/ast.h"
#include "io/chat_template/builtins.h"

namespace kiln::jinja {

[[noreturn]] void fail_at(const Node& n, const std::string& msg) {
  throw TemplateError("[chat_template] line " + std::to_string(n.line) + ": " + msg);
}

namespace {

enum class Flow { normal, brk, cont };

class Eval {
 public:
  explicit Eval(const Value& ctx) {
    if (ctx.kind == Value::Kind::dict) globals_ = ctx.dict;
    frames_.emplace_back();
  }

  Flow exec(const Node& n, std::string& out) {
    switch (n.kind) {
      case Node::Body:
        for (const NodeP& k : n.kids) {
          const Flow f = exec(*k, out);
          if (f != Flow::normal) return f;
        }
        return Flow::normal;
      case Node::Text: out += n.value.s; return Flow::normal;
      case Node::Output: out += eval(*n.kids[0]).str(); return Flow::normal;
      case Node::If:
        for (size_t k = 0; k + 1 < n.kids.size(); k += 2)
          if (eval(*n.kids[k]).truthy()) return exec(*n.kids[k + 1], out);
        if (n.kids.size() % 2 == 1) return exec(*n.kids.back(), out);
        return Flow::normal;
      case Node::For: return exec_for(n, out);
      case Node::Set: {
        Value v = n.kids[0]->kind == Node::Call && n.kids[0]->name == "__capture__" ? capture(*n.kids[0]->kids[0])
                                                                                     : eval(*n.kids[0]);
        if (n.targets.size() == 2) {
          Value ns = lookup(n.targets[0]);
          if (ns.kind != Value::Kind::dict || !ns.dict->is_namespace)
            fail_at(n, "can only set attributes of a namespace, not of '" + n.targets[0] + "'");
          ns.dict->set(n.targets[1], std::move(v));
        } else {
          set_var(n.targets[0], std::move(v));
        }
        return Flow::normal;
      }
      case Node::Break: return Flow::brk;
      case Node::Continue: return Flow::cont;
      default: fail_at(n, "not a statement");
    }
  }

  Value eval(const Node& n) {
    switch (n.kind) {
      case Node::Literal: return n.value;
      case Node::Name: return lookup(n.name);
      case Node::ListLit:
      case Node::TupleLit: {
        List l;
        for (const NodeP& k : n.kids) l.push_back(eval(*k));
        return Value(std::move(l));
      }
      case Node::DictLit: {
        Dict d;
        for (size_t k = 0; k + 1 < n.kids.size(); k += 2) d.set(eval(*n.kids[k]).str(), eval(*n.kids[k + 1]));
        return Value(std::move(d));
      }
      case Node::Attr: {
        const Value obj = eval(*n.kids[0]);
        if (obj.is_undefined()) fail_at(n, "'" + describe(*n.kids[0]) + "' is undefined (reading ." + n.name + ")");
        return get_attr(obj, n.name);
      }
      case Node::Index: {
        const Value obj = eval(*n.kids[0]);
        if (obj.is_undefined()) fail_at(n, "'" + describe(*n.kids[0]) + "' is undefined (subscript)");
        return get_item(obj, eval(*n.kids[1]));
      }
      case Node::Slice: {
        const Value obj = eval(*n.kids[0]);
        auto opt = [&](int k) { return n.kids[size_t(k)] ? eval(*n.kids[size_t(k)]) : Value::none(); };
        return slice(n, obj, opt(1), opt(2), opt(3));
      }
      case Node::Unary: {
        const Value v = eval(*n.kids[0]);
        if (n.name == "not") return Value(!v.truthy());
        if (v.kind == Value::Kind::integer) return Value(n.name == "-" ? -v.i : v.i);
        if (v.kind == Value::Kind::floating) return Value(n.name == "-" ? -v.f : v.f);
        fail_at(n, "bad operand for unary " + n.name);
      }
      case Node::Binary: return binary(n);
      case Node::Cond:
        if (eval(*n.kids[1]).truthy()) return eval(*n.kids[0]);
        return n.kids[2] ? eval(*n.kids[2]) : Value();
      case Node::Call: return call(n);
      case Node::Filter: {
        Args a = args(n, 1);
        return apply_filter(n, n.name, eval(*n.kids[0]), a);
      }
      case Node::Test: {
        Args a = args(n, 1);
        const bool r = apply_test(n, n.name, eval(*n.kids[0]), a);
        return Value(n.negated ? !r : r);
      }
      default: fail_at(n, "not an expression");
    }
  }

 private:
  std::shared_ptr<Dict> globals_;
  std::vector<std::vector<std::pair<std::string, Value>>> frames_;

  static std::string describe(const Node& n) {
    if (n.kind == Node::Name) return n.name;
    if (n.kind == Node::Attr) return describe(*n.kids[0]) + "." + n.name;
    return "value";
  }

  Value lookup(const std::string& name) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
      for (auto it = f->rbegin(); it != f->rend(); ++it)
        if (it->first == name) return it->second;
    if (globals_)
      if (const Value* v = globals_->find(name)) return *v;
    return Value();
  }
  void set_var(const std::string& name, Value v) {
    auto& f = frames_.back();
    for (auto& kv : f)
      if (kv.first == name) {
        kv.second = std::move(v);
        return;
      }
    f.emplace_back(name, std::move(v));
  }

  Value capture(const Node& body) {
    std::string s;
    exec(body, s);
    return Value(s);
  }

  Args args(const Node& n, size_t first) {
    Args a;
    const size_t nkw = n.kw_names.size();
    for (size_t k = first; k < n.kids.size(); ++k) {
      if (k + nkw >= n.kids.size())
        a.kw.emplace_back(n.kw_names[k + nkw - n.kids.size()], eval(*n.kids[k]));
      else
        a.pos.push_back(eval(*n.kids[k]));
    }
    return a;
  }

  Flow exec_for(const Node& n, std::string& out) {
    const Value seq = eval(*n.kids[0]);
    List items;
    if (seq.kind == Value::Kind::list) {
      items = *seq.list;
    } else if (seq.kind == Value::Kind::dict) {
      for (const auto& kv : seq.dict->items) items.push_back(Value(kv.first));
    } else if (seq.kind == Value::Kind::string) {
      for (const std::string& c : code_points(seq.s)) items.push_back(Value(c));
    } else if (!seq.is_undefined() && !seq.is_none()) {
      fail_at(n, "cannot iterate over " + seq.str());
    } else if (seq.is_none()) {
      fail_at(n, "'NoneType' object is not iterable");
    }
    frames_.emplace_back();
    auto bind = [&](const Value& item) {
      if (n.targets.size() == 1) {
        set_var(n.targets[0], item);
      } else {
        if (item.kind != Value::Kind::list || item.list->size() != n.targets.size())
          fail_at(n, "cannot unpack " + item.str() + " into " + std::to_string(n.targets.size()) + " names");
        for (size_t k = 0; k < n.targets.size(); ++k) set_var(n.targets[k], (*item.list)[k]);
      }
    };
    if (n.kids[3]) {  // {% for x in xs if cond %}: filter before counting
      List kept;
      for (const Value& it : items) {
        bind(it);
        if (eval(*n.kids[3]).truthy()) kept.push_back(it);
      }
      items = std::move(kept);
    }
    const int64_t len = int64_t(items.size());
    for (int64_t k = 0; k < len; ++k) {
      bind(items[size_t(k)]);
      Dict loop;
      loop.items = {{"index", Value(k + 1)},       {"index0", Value(k)},
                    {"revindex", Value(len - k)},  {"revindex0", Value(len - k - 1)},
                    {"first", Value(k == 0)},      {"last", Value(k == len - 1)},
                    {"length", Value(len)},
                    {"previtem", k > 0 ? items[size_t(k - 1)] : Value()},
                    {"nextitem", k + 1 < len ? items[size_t(k + 1)] : Value()}};
      set_var("loop", Value(std::move(loop)));
      const Flow f = exec(*n.kids[1], out);
      if (f == Flow::brk) break;
    }
    frames_.pop_back();
    if (len == 0 && n.kids[2]) exec(*n.kids[2], out);
    return Flow::normal;
  }

  Value binary(const Node& n) {
    const std::string& op = n.name;
    if (op == "and") {
      Value a = eval(*n.kids[0]);
      return a.truthy() ? eval(*n.kids[1]) : a;
    }
    if (op == "or") {
      Value a = eval(*n.kids[0]);
      return a.truthy() ? a : eval(*n.kids[1]);
    }
    const Value a = eval(*n.kids[0]), b = eval(*n.kids[1]);
    if (op == "==") return Value(equal(a, b));
    if (op == "!=") return Value(!equal(a, b));
    if (op == "in") return Value(contains(n, b, a));
    if (op == "not in") return Value(!contains(n, b, a));
    if (op == "~") return Value(a.str() + b.str());
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int c;
      if (a.is_number() && b.is_number()) {
        const double x = num(a), y = num(b);
        c = x < y ? -1 : x > y ? 1 : 0;
      } else if (a.is_string() && b.is_string()) {
        c = a.s.compare(b.s);
      } else {
        fail_at(n, "'" + op + "' not supported between " + a.str() + " and " + b.str());
      }
      if (op == "<") return Value(c < 0);
      if (op == ">") return Value(c > 0);
      if (op == "<=") return Value(c <= 0);
      return Value(c >= 0);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value(a.s + b.s);
      if (a.kind == Value::Kind::list && b.kind == Value::Kind::list) {
        List l = *a.list;
        l.insert(l.end(), b.list->begin(), b.list->end());
        return Value(std::move(l));
      }
    }
    if (op == "*" && a.is_string() && b.kind == Value::Kind::integer) {
      if (b.i > 0 && a.s.size() * size_t(b.i) > (size_t(64) << 20)) fail_at(n, "string repetition over 64 MB");
      std::string s;
      for (int64_t k = 0; k < b.i; ++k) s += a.s;
      return Value(s);
    }
    const bool ints = (a.kind == Value::Kind::integer || a.kind == Value::Kind::boolean) &&
                      (b.kind == Value::Kind::integer || b.kind == Value::Kind::boolean);
    if (!(a.is_number() || a.kind == Value::Kind::boolean) || !(b.is_number() || b.kind == Value::Kind::boolean))
      fail_at(n, "unsupported operand types for " + op + ": " + a.str() + " and " + b.str());
    if (ints) {
      const int64_t x = a.kind == Value::Kind::boolean ? a.b : a.i, y = b.kind == Value::Kind::boolean ? b.b : b.i;
      if (op == "+") return Value(x + y);
      if (op == "-") return Value(x - y);
      if (op == "*") return Value(x * y);
      if (op == "//" || op == "%") {
        if (y == 0) fail_at(n, "division by zero");
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) {
          --q;
          r += y;
        }
        return Value(op == "//" ? q : r);
      }
      if (op == "**" && y >= 0) {
        int64_t p = 1;
        for (int64_t k = 0; k < y; ++k) p *= x;
        return Value(p);
      }
    }
    const double x = num(a), y = num(b);
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") {
      if (y == 0) fail_at(n, "division by zero");
      return Value(x / y);
    }
    if (op == "//") return Value(std::floor(x / y));
    if (op == "%") return Value(x - y * std::floor(x / y));
    if (op == "**") return Value(std::pow(x, y));
    fail_at(n, "unknown operator " + op);
  }

  bool contains(const Node& n, const Value& hay, const Value& needle) {
    if (hay.is_string()) {
      if (!needle.is_string()) fail_at(n, "'in <string>' requires a string");
      return hay.s.find(needle.s) != std::string::npos;
    }
    if (hay.kind == Value::Kind::list) {
      for (const Value& v : *hay.list)
        if (equal(v, needle)) return true;
      return false;
    }
    if (hay.kind == Value::Kind::dict) return needle.is_string() && hay.dict->find(needle.s) != nullptr;
    if (hay.is_undefined()) fail_at(n, "'in' over an undefined value");
    fail_at(n, "argument of type " + hay.str() + " is not iterable");
  }

  Value slice(const Node& n, const Value& obj, const Value& a, const Value& b, const Value& c) {
    int64_t len;
    std::vector<std::string> cps;
    if (obj.kind == Value::Kind::list) {
      len = int64_t(obj.list->size());
    } else if (obj.is_string()) {
      cps = code_points(obj.s);
      len = int64_t(cps.size());
    } else {
      fail_at(n, "cannot slice " + obj.str());
    }
    const int64_t step = c.is_none() ? 1 : c.i;
    if (step == 0) fail_at(n, "slice step cannot be zero");
    auto clamp = [&](const Value& v, int64_t dflt) {
      if (v.is_none()) return dflt;
      int64_t x = v.i;
      if (x < 0) x += len;
      if (step > 0) return std::clamp<int64_t>(x, 0, len);
      return std::clamp<int64_t>(x, -1, len - 1);
    };
    const int64_t start = clamp(a, step > 0 ? 0 : len - 1), stop = clamp(b, step > 0 ? len : -1);
    List l;
    std::string s;
    for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      if (obj.is_string()) s += cps[size_t(k)];
      else l.push_back((*obj.list)[size_t(k)]);
    }
    return obj.is_string() ? Value(s) : Value(std::move(l));
  }

  Value call(const Node& n) {
    const Node& callee = *n.kids[0];
    Args a = args(n, 1);
    if (callee.kind == Node::Attr) {
      const Value obj = eval(*callee.kids[0]);
      if (obj.is_undefined()) fail_at(n, "'" + describe(*callee.kids[0]) + "' is undefined (calling ." + callee.name + ")");
      return call_method(n, obj, callee.name, a);
    }
    if (callee.kind == Node::Name) {
      const Value v = lookup(callee.name);
      if (v.is_undefined()) return call_global(n, callee.name, a);
    }
    fail_at(n, "'" + describe(callee) + "' is not callable");
  }
};

}  // namespace

Template::Template(std::string_view source) : root_(parse_template(source)) {}

std::string Template::render(const Value& context) const {
  Eval e(context);
  std::string out;
  e.exec(*root_, out);
  return out;
}

}  // namespace kiln::jinja
