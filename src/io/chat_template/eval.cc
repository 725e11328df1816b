// Chat-template evaluator: statements, expressions, and the Jinja2 filters,
// tests, globals and Python str/dict methods that chat templates use.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <optional>

#include "io/chat_template/arith.h"
#include "io/chat_template/ast.h"
#include "io/chat_template/builtins.h"
#include "io/chat_template/limits.h"
#include "io/chat_template/text.h"

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

  RenderStats stats() const { return {budget_.steps(), budget_.bytes()}; }

  Flow exec(const Node& n, std::string& out) {
    budget_.at_line(n.line);
    budget_.step();
    switch (n.kind) {
      case Node::Body:
        for (const NodeP& k : n.kids) {
          const Flow f = exec(*k, out);
          if (f != Flow::normal) return f;
        }
        return Flow::normal;
      case Node::Text:
        emit(out, n.value.s);
        return Flow::normal;
      case Node::Output: {
        const Value v = eval(*n.kids[0]);
        if (v.is_string())
          emit(out, v.s);
        else
          emit(out, v.str());
        return Flow::normal;
      }
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
          // Namespaces are the only values that change: kept out of each other, they form no cycles.
          if (v.holds_namespace) fail_at(n, "a namespace attribute cannot hold a namespace");
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
    budget_.at_line(n.line);
    budget_.step();
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
        return unary_sign(n, n.name, v);
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
  Budget budget_;  // this render's: active on this thread while the Eval lives
  std::shared_ptr<Dict> globals_;
  std::vector<std::vector<std::pair<std::string, Value>>> frames_;

  static std::string describe(const Node& n) {
    if (n.kind == Node::Name) return n.name;
    if (n.kind == Node::Attr) return describe(*n.kids[0]) + "." + n.name;
    return "value";
  }

  static void emit(std::string& out, const std::string& s) {
    charge_bytes(s.size());
    out += s;
  }

  // Variables are found by a linear scan: a frame of many names costs steps.
  Value lookup(const std::string& name) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
      charge_steps(f->size() / 8);
      for (auto it = f->rbegin(); it != f->rend(); ++it)
        if (it->first == name) return it->second;
    }
    if (globals_)
      if (const Value* v = globals_->find(name)) return *v;
    return Value();
  }
  void set_var(const std::string& name, Value v) {
    auto& f = frames_.back();
    charge_steps(f.size() / 8);
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
    if (seq.is_none()) fail_at(n, "'NoneType' object is not iterable");
    std::shared_ptr<const List> items = iterate(n, seq);  // a list itself: lists never change
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
      auto kept = std::make_shared<List>();
      for (const Value& it : *items) {
        bind(it);
        if (eval(*n.kids[3]).truthy()) kept->push_back(it);
      }
      items = std::move(kept);
    }
    // One loop object for the whole loop, updated in place as Jinja's is. It
    // can hold any item, so it is as deep as the list and holds what it holds.
    Value loop{Dict{}};
    loop.depth = std::max<uint16_t>(loop.depth, seq.depth);
    loop.holds_namespace = seq.holds_namespace;
    const int64_t len = int64_t(items->size());
    for (int64_t k = 0; k < len; ++k) {
      bind((*items)[size_t(k)]);
      loop.dict->items = {{"index", Value(k + 1)},
                          {"index0", Value(k)},
                          {"revindex", Value(len - k)},
                          {"revindex0", Value(len - k - 1)},
                          {"first", Value(k == 0)},
                          {"last", Value(k == len - 1)},
                          {"length", Value(len)},
                          {"previtem", k > 0 ? (*items)[size_t(k - 1)] : Value()},
                          {"nextitem", k + 1 < len ? (*items)[size_t(k + 1)] : Value()}};
      set_var("loop", loop);
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
    if (op == "~") {
      std::string s = a.is_string() ? a.s : a.str();
      const std::string t = b.is_string() ? b.s : b.str();
      check_room(s.size() + t.size());
      s += t;
      return Value(std::move(s));
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      const std::optional<int> c = compare(n, op, a, b);
      if (!c) return Value(false);  // NaN
      if (op == "<") return Value(*c < 0);
      if (op == ">") return Value(*c > 0);
      if (op == "<=") return Value(*c <= 0);
      return Value(*c >= 0);
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        check_room(a.s.size() + b.s.size());
        return Value(a.s + b.s);
      }
      if (a.kind == Value::Kind::list && b.kind == Value::Kind::list) {
        check_room((a.list->size() + b.list->size()) * sizeof(Value));
        List l;
        l.reserve(a.list->size() + b.list->size());
        l.insert(l.end(), a.list->begin(), a.list->end());
        l.insert(l.end(), b.list->begin(), b.list->end());
        return Value(std::move(l));
      }
    }
    if (op == "*") {  // sequence repetition, either way round
      const bool seq_a = a.is_string() || a.kind == Value::Kind::list;
      const bool seq_b = b.is_string() || b.kind == Value::Kind::list;
      if ((seq_a && is_int_like(b)) || (seq_b && is_int_like(a)))
        return repeat(n, seq_a ? a : b, seq_a ? b : a);
      if (seq_a || seq_b)
        fail_at(n, "can't multiply sequence by non-int of type '" + type_name(seq_a ? b : a) + "'");
    }
    return arith(n, op, a, b);
  }

  // seq * times: Python's repetition, sized against the memory limit before it is built.
  Value repeat(const Node& n, const Value& seq, const Value& times) {
    const int64_t t = times.kind == Value::Kind::boolean ? int64_t(times.b) : times.i;
    const uint64_t count = t > 0 ? uint64_t(t) : 0;
    const uint64_t unit = seq.is_string() ? seq.s.size() : seq.list->size() * sizeof(Value);
    uint64_t total;
    if (__builtin_mul_overflow(unit, count, &total)) total = UINT64_MAX;
    check_room(total);
    if (seq.is_string()) {  // by doubling: 'a' * 10**8 is a few copies, not 10**8 appends
      std::string s;
      if (count > 0) s = seq.s;
      s.reserve(size_t(total));
      while (s.size() < total) s.append(s, 0, std::min(s.size(), size_t(total) - s.size()));
      return Value(std::move(s));
    }
    // An empty list repeated any number of times is empty: not a loop of
    // `count` empty inserts ([] * 10**12 ran for hours; found by the fuzzer).
    if (seq.list->empty()) return Value(List());
    List l;
    l.reserve(size_t(count * seq.list->size()));
    for (uint64_t k = 0; k < count; ++k) l.insert(l.end(), seq.list->begin(), seq.list->end());
    (void)n;
    return Value(std::move(l));
  }

  // Python's ordering: numbers (exactly) and strings among themselves.
  std::optional<int> compare(const Node& n, const std::string& op, const Value& a, const Value& b) {
    if (is_numeric(a) && is_numeric(b)) return compare_numbers(a, b);
    if (a.is_string() && b.is_string()) {
      charge_scan(std::min(a.s.size(), b.s.size()));
      const int c = a.s.compare(b.s);
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    fail_at(n, "'" + op + "' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) +
                   "'");
  }

  bool contains(const Node& n, const Value& hay, const Value& needle) {
    if (hay.is_string()) {
      if (!needle.is_string())
        fail_at(n, "'in <string>' requires string as left operand, not " + type_name(needle));
      return text::find(hay.s, needle.s) != std::string::npos;
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

  // Python's slice over a list or the code points of a string. Indices that
  // are not ints give an undefined value (Jinja turns the TypeError into one).
  Value slice(const Node& n, const Value& obj, const Value& a, const Value& b, const Value& c) {
    if (obj.kind != Value::Kind::list && !obj.is_string()) {
      if (obj.is_undefined()) fail_at(n, "'" + describe(*n.kids[0]) + "' is undefined (slice)");
      return Value();
    }
    for (const Value* v : {&a, &b, &c})
      if (!v->is_none() && !is_int_like(*v)) return Value();
    auto as_int = [](const Value& v) { return v.kind == Value::Kind::boolean ? int64_t(v.b) : v.i; };
    std::vector<size_t> off;  // code point offsets of a string
    int64_t len;
    if (obj.is_string()) {
      off = text::cp_offsets(obj.s);
      len = int64_t(off.size()) - 1;
    } else {
      len = int64_t(obj.list->size());
    }
    const int64_t step = c.is_none() ? 1 : as_int(c);
    if (step == 0) fail_at(n, "slice step cannot be zero");
    auto index = [&](const Value& v, int64_t dflt) {
      if (v.is_none()) return dflt;
      int64_t x = as_int(v);
      if (x < 0) x += len;  // no overflow: x < 0 <= len
      if (step > 0) return std::clamp<int64_t>(x, 0, len);
      return std::clamp<int64_t>(x, -1, len - 1);
    };
    const int64_t start = index(a, step > 0 ? 0 : len - 1), stop = index(b, step > 0 ? len : -1);
    // Item count without forming start + k * step past the ends (step may be +-2**63).
    uint64_t count = 0;
    if (step > 0 && start < stop) count = (uint64_t(stop - start) - 1) / uint64_t(step) + 1;
    if (step < 0 && start > stop) count = (uint64_t(start - stop) - 1) / (uint64_t(0) - uint64_t(step)) + 1;
    auto at = [&](uint64_t k) { return size_t(start + int64_t(k) * step); };  // |k * step| < len when k >= 1
    if (obj.is_string()) {
      std::string s;
      for (uint64_t k = 0; k < count; ++k) s.append(obj.s, off[at(k)], off[at(k) + 1] - off[at(k)]);
      return Value(std::move(s));
    }
    List l;
    l.reserve(size_t(count));
    for (uint64_t k = 0; k < count; ++k) l.push_back((*obj.list)[at(k)]);
    return Value(std::move(l));
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

std::string Template::render(const Value& context) const { return render(context, nullptr); }

std::string Template::render(const Value& context, RenderStats* stats) const {
  Eval e(context);
  std::string out;
  e.exec(*root_, out);
  if (stats) *stats = e.stats();
  return out;
}

}  // namespace kiln::jinja
