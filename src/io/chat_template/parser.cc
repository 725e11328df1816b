// Chat-template parser: statements and expressions by Jinja2's precedence
// over the lexer's parts.
#include <algorithm>

#include "io/chat_template/lexer.h"
#include "io/chat_template/limits.h"

namespace kiln::jinja {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Part> parts) : parts_(std::move(parts)) {}

  NodeP parse_all() {
    std::string end;
    NodeP body = parse_body({}, &end);
    if (!end.empty()) fail(line(), "unexpected '" + end + "'");
    return body;
  }

 private:
  std::vector<Part> parts_;
  size_t pi_ = 0;          // current part
  std::vector<Tok>* toks_ = nullptr;
  size_t ti_ = 0;          // current token in the current tag

  int line() const { return pi_ < parts_.size() ? parts_[pi_].line : (parts_.empty() ? 0 : parts_.back().line); }
  NodeP node(Node::Kind k) {
    auto n = std::make_shared<Node>(k);
    n->line = line();
    return n;
  }
  const Tok& cur() const {
    static const Tok end;
    return ti_ < toks_->size() ? (*toks_)[ti_] : end;
  }
  bool at_op(const char* op) const { return cur().t == Tok::Op && cur().s == op; }
  bool at_name(const char* n) const { return cur().t == Tok::Name && cur().s == n; }
  bool take_op(const char* op) {
    if (!at_op(op)) return false;
    ++ti_;
    return true;
  }
  bool take_name(const char* n) {
    if (!at_name(n)) return false;
    ++ti_;
    return true;
  }
  void expect_op(const char* op) {
    if (!take_op(op)) fail(line(), std::string("expected '") + op + "'");
  }
  std::string expect_name() {
    if (cur().t != Tok::Name) fail(line(), "expected a name");
    return (*toks_)[ti_++].s;
  }
  void expect_end() {
    if (cur().t != Tok::End) fail(line(), "unexpected '" + cur().s + "' at the end of a tag");
  }

  // Statements until a block tag whose keyword is in `ends` (returned in *end).
  NodeP parse_body(const std::vector<std::string>& ends, std::string* end) {
    NodeP body = node(Node::Body);
    while (pi_ < parts_.size()) {
      Part& p = parts_[pi_];
      if (p.k == Part::Text) {
        NodeP t = node(Node::Text);
        t->value = Value(p.text);
        body->kids.push_back(t);
        ++pi_;
        continue;
      }
      toks_ = &p.toks;
      ti_ = 0;
      if (p.k == Part::Var) {
        NodeP o = node(Node::Output);
        o->kids.push_back(parse_expr());
        expect_end();
        body->kids.push_back(o);
        ++pi_;
        continue;
      }
      const std::string kw = cur().t == Tok::Name ? cur().s : "";
      for (const std::string& e : ends)
        if (kw == e) {
          *end = kw;
          ++ti_;
          return body;  // the caller reads the rest of this tag
        }
      ++ti_;
      body->kids.push_back(parse_statement(kw));
    }
    if (!ends.empty()) fail(line(), "missing '" + ends.back() + "'");
    end->clear();
    return body;
  }

  NodeP parse_statement(const std::string& kw) {
    Nest nest(*this);
    if (kw == "if") {
      NodeP n = node(Node::If);
      n->kids.push_back(parse_expr());
      while (true) {
        expect_end();
        ++pi_;
        std::string end;
        n->kids.push_back(parse_body({"elif", "else", "endif"}, &end));
        if (end == "elif") {
          n->kids.push_back(parse_expr());
        } else if (end == "else") {
          expect_end();
          ++pi_;
          n->kids.push_back(parse_body({"endif"}, &end));
          expect_end();
          ++pi_;
          return n;
        } else {
          expect_end();
          ++pi_;
          return n;
        }
      }
    }
    if (kw == "for") {
      NodeP n = node(Node::For);
      n->targets.push_back(expect_name());
      while (take_op(",")) n->targets.push_back(expect_name());
      if (!take_name("in")) fail(line(), "expected 'in' in a for loop");
      n->kids.push_back(parse_or());  // not a conditional expression: "if" filters the loop
      NodeP filter;
      if (take_name("if")) filter = parse_expr();
      take_name("recursive");
      expect_end();
      ++pi_;
      std::string end;
      n->kids.push_back(parse_body({"else", "endfor"}, &end));
      NodeP else_body;
      if (end == "else") {
        expect_end();
        ++pi_;
        else_body = parse_body({"endfor"}, &end);
      }
      expect_end();
      ++pi_;
      n->kids.push_back(else_body);
      n->kids.push_back(filter);
      return n;
    }
    if (kw == "set") {
      NodeP n = node(Node::Set);
      n->targets.push_back(expect_name());
      if (take_op(".")) n->targets.push_back(expect_name());
      if (take_op("=")) {
        n->kids.push_back(parse_expr());
        expect_end();
        ++pi_;
        return n;
      }
      // {% set x %}...{% endset %}: the rendered body
      expect_end();
      ++pi_;
      std::string end;
      NodeP body = parse_body({"endset"}, &end);
      expect_end();
      ++pi_;
      NodeP call = node(Node::Call);  // marker: evaluated by rendering the body
      call->name = "__capture__";
      call->kids.push_back(body);
      n->kids.push_back(call);
      return n;
    }
    if (kw == "break" || kw == "continue") {
      expect_end();
      ++pi_;
      return node(kw == "break" ? Node::Break : Node::Continue);
    }
    if (kw == "generation") {  // transformers' assistant-mask marker: renders its body
      expect_end();
      ++pi_;
      std::string end;
      NodeP body = parse_body({"endgeneration"}, &end);
      expect_end();
      ++pi_;
      return body;
    }
    fail(line(), "unsupported tag '" + kw + "'");
  }

  // ---- expressions -----------------------------------------------------------
  // Two guards keep a hostile template off the end of the stack: depth_ bounds
  // the parser's recursion, grown() the height of the trees its loops build
  // (x.a.a.a..., 1 + 1 + 1 ...), which evaluating and freeing them recurse over.
  NodeP grown(NodeP n) {
    for (const NodeP& k : n->kids)
      if (k) n->height = std::max(n->height, k->height + 1);
    if (n->height > kMaxNesting) fail(line(), "expressions nested too deeply");
    return n;
  }
  int depth_ = 0;
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.depth_ > 200) fail(p.line(), "expressions nested too deeply");
    }
    ~Nest() { --p.depth_; }
  };

  NodeP parse_expr() {
    Nest nest(*this);
    NodeP e = parse_or();
    if (take_name("if")) {
      NodeP c = node(Node::Cond);
      c->kids.push_back(e);
      c->kids.push_back(parse_or());
      c->kids.push_back(take_name("else") ? parse_expr() : nullptr);
      return grown(c);
    }
    return e;
  }
  NodeP binary(const std::string& op, NodeP a, NodeP b) {
    NodeP n = node(Node::Binary);
    n->name = op;
    n->kids = {std::move(a), std::move(b)};
    return grown(n);
  }
  NodeP parse_or() {
    NodeP a = parse_and();
    while (take_name("or")) a = binary("or", a, parse_and());
    return a;
  }
  NodeP parse_and() {
    NodeP a = parse_not();
    while (take_name("and")) a = binary("and", a, parse_not());
    return a;
  }
  NodeP parse_not() {
    Nest nest(*this);
    if (take_name("not")) {
      NodeP n = node(Node::Unary);
      n->name = "not";
      n->kids.push_back(parse_not());
      return grown(n);
    }
    return parse_compare();
  }
  NodeP parse_compare() {
    NodeP a = parse_math1();
    NodeP last_right;  // Python chains: a < b <= c is (a < b) and (b <= c)
    while (true) {
      static const char* const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
      bool done = true;
      for (const char* op : ops)
        if (take_op(op)) {
          NodeP right = parse_math1();
          if (last_right)
            a = binary("and", a, binary(op, last_right, right));
          else
            a = binary(op, a, right);
          last_right = right;
          done = false;
          break;
        }
      if (!done) continue;
      if (take_name("in")) {
        a = binary("in", a, parse_math1());
      } else if (at_name("not") && ti_ + 1 < toks_->size() && (*toks_)[ti_ + 1].s == "in") {
        ti_ += 2;
        a = binary("not in", a, parse_math1());
      } else {
        return a;
      }
    }
  }
  NodeP parse_math1() {
    NodeP a = parse_concat();
    while (at_op("+") || at_op("-")) {
      const std::string op = (*toks_)[ti_++].s;
      a = binary(op, a, parse_concat());
    }
    return a;
  }
  NodeP parse_concat() {
    NodeP a = parse_math2();
    while (take_op("~")) a = binary("~", a, parse_math2());
    return a;
  }
  NodeP parse_math2() {
    NodeP a = parse_pow();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const std::string op = (*toks_)[ti_++].s;
      a = binary(op, a, parse_pow());
    }
    return a;
  }
  NodeP parse_pow() {
    NodeP a = parse_unary(true);
    while (take_op("**")) a = binary("**", a, parse_unary(true));
    return a;
  }
  NodeP parse_unary(bool with_filter) {
    Nest nest(*this);
    NodeP n;
    if (at_op("-") || at_op("+")) {
      n = node(Node::Unary);
      n->name = (*toks_)[ti_++].s;
      n->kids.push_back(parse_unary(false));
      n = grown(n);
    } else {
      n = parse_primary();
    }
    n = parse_postfix(n);
    if (with_filter) n = parse_filters(n);
    return n;
  }
  void parse_args(NodeP& n) {  // after "(": positional and keyword arguments up to ")"
    while (!take_op(")")) {
      if (cur().t == Tok::Name && ti_ + 1 < toks_->size() && (*toks_)[ti_ + 1].s == "=" &&
          (*toks_)[ti_ + 1].t == Tok::Op) {
        n->kw_names.push_back(expect_name());
        ++ti_;
        n->kids.push_back(parse_expr());
      } else {
        if (!n->kw_names.empty()) fail(line(), "positional argument after a keyword argument");
        n->kids.push_back(parse_expr());
      }
      if (!take_op(",")) {
        expect_op(")");
        break;
      }
    }
  }
  NodeP parse_postfix(NodeP n) {
    while (true) {
      if (take_op(".")) {
        NodeP a = node(Node::Attr);
        a->kids.push_back(n);
        if (cur().t == Tok::Int) {  // x.0
          NodeP idx = node(Node::Index);
          NodeP lit = node(Node::Literal);
          lit->value = Value((*toks_)[ti_++].i);
          idx->kids = {n, lit};
          n = grown(idx);
          continue;
        }
        a->name = expect_name();
        n = grown(a);
      } else if (take_op("[")) {
        NodeP parts[3];
        int colons = 0;
        for (;;) {
          if (at_op("]")) break;
          if (take_op(":")) {
            if (++colons > 2) fail(line(), "bad slice");
            continue;
          }
          if (parts[colons]) fail(line(), "bad subscript");
          parts[colons] = parse_expr();
        }
        expect_op("]");
        if (colons == 0) {
          if (!parts[0]) fail(line(), "empty subscript");
          NodeP idx = node(Node::Index);
          idx->kids = {n, parts[0]};
          n = grown(idx);
        } else {
          NodeP s = node(Node::Slice);
          s->kids = {n, parts[0], parts[1], parts[2]};
          n = grown(s);
        }
      } else if (take_op("(")) {
        NodeP c = node(Node::Call);
        c->kids.push_back(n);
        parse_args(c);
        n = grown(c);
      } else {
        return n;
      }
    }
  }
  NodeP parse_filters(NodeP n) {
    while (true) {
      if (take_op("|")) {
        NodeP f = node(Node::Filter);
        f->name = expect_name();
        f->kids.push_back(n);
        if (take_op("(")) parse_args(f);
        n = grown(f);
      } else if (take_name("is")) {
        NodeP t = node(Node::Test);
        t->negated = take_name("not");
        t->name = expect_name();
        t->kids.push_back(n);
        if (take_op("(")) {
          parse_args(t);
        } else if ((cur().t == Tok::Int || cur().t == Tok::Float || cur().t == Tok::Str ||
                    (cur().t == Tok::Name && !at_name("else") && !at_name("or") && !at_name("and") &&
                     !at_name("if") && !at_name("not") && !at_name("in") && !at_name("is")))) {
          t->kids.push_back(parse_postfix(parse_primary()));
        }
        n = grown(t);
      } else {
        return n;
      }
    }
  }
  NodeP parse_primary() {
    const Tok& t = cur();
    NodeP n = node(Node::Literal);
    switch (t.t) {
      case Tok::Str: {
        std::string s;
        while (cur().t == Tok::Str) s += (*toks_)[ti_++].s;  // adjacent strings join
        n->value = Value(s);
        return n;
      }
      case Tok::Int: n->value = Value(t.i); ++ti_; return n;
      case Tok::Float: n->value = Value(t.f); ++ti_; return n;
      case Tok::Name: {
        ++ti_;
        if (t.s == "true" || t.s == "True") n->value = Value(true);
        else if (t.s == "false" || t.s == "False") n->value = Value(false);
        else if (t.s == "none" || t.s == "None") n->value = Value::none();
        else {
          n = node(Node::Name);
          n->name = t.s;
        }
        return n;
      }
      case Tok::Op: {
        if (take_op("(")) {
          if (take_op(")")) return node(Node::TupleLit);
          NodeP e = parse_expr();
          if (at_op(",")) {
            NodeP tup = node(Node::TupleLit);
            tup->kids.push_back(e);
            while (take_op(",") && !at_op(")")) tup->kids.push_back(parse_expr());
            e = grown(tup);
          }
          expect_op(")");
          return e;
        }
        if (take_op("[")) {
          NodeP l = node(Node::ListLit);
          while (!take_op("]")) {
            l->kids.push_back(parse_expr());
            if (!take_op(",")) {
              expect_op("]");
              break;
            }
          }
          return grown(l);
        }
        if (take_op("{")) {
          NodeP d = node(Node::DictLit);
          while (!take_op("}")) {
            d->kids.push_back(parse_expr());
            expect_op(":");
            d->kids.push_back(parse_expr());
            if (!take_op(",")) {
              expect_op("}");
              break;
            }
          }
          return grown(d);
        }
        break;
      }
      case Tok::End: fail(line(), "unexpected end of tag");
    }
    fail(line(), "unexpected '" + t.s + "'");
  }
};

}  // namespace

NodeP parse_template(std::string_view source) {
  // Jinja2 drops one trailing newline (keep_trailing_newline=False).
  if (!source.empty() && source.back() == '\n') source.remove_suffix(1);
  return Parser(lex(source)).parse_all();
}

}  // namespace kiln::jinja
