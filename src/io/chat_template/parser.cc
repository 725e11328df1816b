// Chat-template lexer and parser: text and tags with Jinja2's whitespace rules
// as transformers configures them (trim_blocks, lstrip_blocks, "-" and "+"
// markers), expressions by Jinja2's precedence.
#include <cstring>

#include "io/chat_template/ast.h"

namespace kiln::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& msg) {
  throw TemplateError("[chat_template] line " + std::to_string(line) + ": " + msg);
}

struct Tok {
  enum T { Name, Int, Float, Str, Op, End } t = End;
  std::string s;
  int64_t i = 0;
  double f = 0;
};

// One piece of the template: text, {{ expression }} or {% statement %}.
struct Part {
  enum K { Text, Var, Block } k;
  std::string text;
  std::vector<Tok> toks;
  int line;
};

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Tokens of a tag's inside, from src[pos] to the closing `close` ("}}"/"%}").
// Returns the position after the closing delimiter; *strip_after: "-" before it.
size_t lex_tag(std::string_view src, size_t pos, const char* close, int line, std::vector<Tok>& out,
               bool* strip_after) {
  int depth = 0;  // open brackets: "}}" inside {{ {'a': {}} }} does not close the tag
  while (true) {
    while (pos < src.size() && is_ws(src[pos])) ++pos;
    if (pos >= src.size()) fail(line, std::string("missing '") + close + "'");
    if (depth == 0 && src[pos] == '-' && src.compare(pos + 1, 2, close) == 0) {
      *strip_after = true;
      return pos + 3;
    }
    if (depth == 0 && src.compare(pos, 2, close) == 0) {
      *strip_after = false;
      return pos + 2;
    }
    const char c = src[pos];
    Tok t;
    if (std::isalpha(uint8_t(c)) || c == '_') {
      size_t e = pos;
      while (e < src.size() && (std::isalnum(uint8_t(src[e])) || src[e] == '_')) ++e;
      t.t = Tok::Name;
      t.s = std::string(src.substr(pos, e - pos));
      pos = e;
    } else if (std::isdigit(uint8_t(c))) {
      size_t e = pos;
      while (e < src.size() && (std::isdigit(uint8_t(src[e])) || src[e] == '_')) ++e;
      bool is_float = false;
      if (e + 1 < src.size() && src[e] == '.' && std::isdigit(uint8_t(src[e + 1]))) {
        is_float = true;
        ++e;
        while (e < src.size() && std::isdigit(uint8_t(src[e]))) ++e;
      }
      if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
        size_t x = e + 1;
        if (x < src.size() && (src[x] == '+' || src[x] == '-')) ++x;
        if (x < src.size() && std::isdigit(uint8_t(src[x]))) {
          is_float = true;
          e = x;
          while (e < src.size() && std::isdigit(uint8_t(src[e]))) ++e;
        }
      }
      std::string num;
      for (char d : src.substr(pos, e - pos))
        if (d != '_') num += d;
      if (is_float) {
        t.t = Tok::Float;
        t.f = std::stod(num);
      } else {
        t.t = Tok::Int;
        t.i = std::stoll(num);
      }
      pos = e;
    } else if (c == '\'' || c == '"') {
      t.t = Tok::Str;
      size_t e = pos + 1;
      while (true) {
        if (e >= src.size()) fail(line, "unterminated string");
        const char d = src[e];
        if (d == c) break;
        if (d == '\\' && e + 1 < src.size()) {
          const char n = src[++e];
          switch (n) {
            case 'n': t.s += '\n'; break;
            case 't': t.s += '\t'; break;
            case 'r': t.s += '\r'; break;
            case '\\': t.s += '\\'; break;
            case '\'': t.s += '\''; break;
            case '"': t.s += '"'; break;
            default: t.s += '\\'; t.s += n;
          }
        } else {
          t.s += d;
        }
        ++e;
      }
      pos = e + 1;
    } else {
      static const char* const two[] = {"==", "!=", "<=", ">=", "//", "**"};
      t.t = Tok::Op;
      for (const char* op : two)
        if (src.compare(pos, 2, op) == 0) t.s = op;
      if (t.s.empty()) {
        if (!std::strchr("+-*/%~|.,:()[]{}<>=!", c)) fail(line, std::string("unexpected character '") + c + "'");
        t.s = std::string(1, c);
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      }
      pos += t.s.size();
    }
    out.push_back(std::move(t));
  }
}

std::vector<Part> lex(std::string_view src) {
  std::vector<Part> parts;
  size_t pos = 0;
  int line = 1;
  bool strip_next = false;     // the previous tag ended with "-"
  bool line_starting = true;   // the text about to be read starts a line
  while (pos <= src.size()) {
    size_t open = pos;
    while (true) {
      open = src.find('{', open);
      if (open == std::string_view::npos || open + 1 >= src.size()) {
        open = std::string_view::npos;
        break;
      }
      const char n = src[open + 1];
      if (n == '{' || n == '%' || n == '#') break;
      ++open;
    }
    std::string text(src.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && is_ws(text[k])) ++k;
      text.erase(0, k);
    }
    for (char c : src.substr(pos, open == std::string_view::npos ? src.size() - pos : open - pos)) line += c == '\n';
    if (open == std::string_view::npos) {
      if (!text.empty()) parts.push_back({Part::Text, text, {}, line});
      break;
    }
    const char kind = src[open + 1];
    size_t p = open + 2;
    const char marker = p < src.size() ? src[p] : 0;
    if (marker == '-') {
      while (!text.empty() && is_ws(text.back())) text.pop_back();
      ++p;
    } else if (marker == '+') {
      ++p;
    } else if (kind != '{') {  // lstrip_blocks: a block or comment tag alone at the start of a line
      const size_t nl = text.rfind('\n');
      const size_t l = nl == std::string::npos ? 0 : nl + 1;
      if (nl != std::string::npos || line_starting) {
        bool blank = true;
        for (size_t k = l; k < text.size(); ++k) blank &= text[k] == ' ' || text[k] == '\t';
        if (blank) text.erase(l);
      }
    }
    if (!text.empty()) parts.push_back({Part::Text, text, {}, line});
    bool strip_after = false;
    if (kind == '#') {
      const size_t e = src.find("#}", p);
      if (e == std::string_view::npos) fail(line, "unterminated comment");
      strip_after = e > p && src[e - 1] == '-';
      for (char c : src.substr(p, e - p)) line += c == '\n';
      pos = e + 2;
    } else {
      Part part{kind == '{' ? Part::Var : Part::Block, {}, {}, line};
      pos = lex_tag(src, p, kind == '{' ? "}}" : "%}", line, part.toks, &strip_after);
      for (char c : src.substr(p, pos - p)) line += c == '\n';
      // {% raw %} ... {% endraw %}: the text in between is kept as it is
      if (part.k == Part::Block && part.toks.size() == 1 && part.toks[0].s == "raw") {
        const size_t e = src.find("endraw", pos);
        const size_t tag = e == std::string_view::npos ? e : src.rfind("{%", e);
        if (tag == std::string_view::npos) fail(line, "missing endraw");
        parts.push_back({Part::Text, std::string(src.substr(pos, tag - pos)), {}, line});
        pos = src.find("%}", e) + 2;
      } else {
        parts.push_back(std::move(part));
      }
    }
    strip_next = strip_after;
    line_starting = false;
    if (!strip_after && kind != '{' && pos < src.size() && src[pos] == '\n') {  // trim_blocks
      ++pos;
      ++line;
      line_starting = true;
    }
    if (pos > 0 && src[pos - 1] == '\n') line_starting = true;
  }
  return parts;
}

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
  int depth_ = 0;  // nesting guard: a hostile template must not overflow the stack
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
      return c;
    }
    return e;
  }
  NodeP binary(const std::string& op, NodeP a, NodeP b) {
    NodeP n = node(Node::Binary);
    n->name = op;
    n->kids = {std::move(a), std::move(b)};
    return n;
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
      return n;
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
          n = idx;
          continue;
        }
        a->name = expect_name();
        n = a;
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
          n = idx;
        } else {
          NodeP s = node(Node::Slice);
          s->kids = {n, parts[0], parts[1], parts[2]};
          n = s;
        }
      } else if (take_op("(")) {
        NodeP c = node(Node::Call);
        c->kids.push_back(n);
        parse_args(c);
        n = c;
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
        n = f;
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
        n = t;
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
            e = tup;
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
          return l;
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
          return d;
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
