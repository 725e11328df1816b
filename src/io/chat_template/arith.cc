// Python arithmetic on template numbers: overflow-checked int64, Python's
// floor division and modulo, exponentiation by squaring, exact comparisons.
#include "io/chat_template/arith.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/chat_template/builtins.h"
#include "io/chat_template/limits.h"
#include "io/chat_template/text.h"

namespace kiln::jinja {
namespace {

using K = Value::Kind;

int64_t as_int(const Value& v) { return v.kind == K::boolean ? int64_t(v.b) : v.i; }

[[noreturn]] void overflow(const Node& at, const std::string& what) {
  fail_at(at, "integer overflow in " + what);
}

// base ** exp for exp >= 0 in at most 63 squarings; false when it leaves int64.
bool pow_int(int64_t base, int64_t exp, int64_t* out) {
  if (base == 0 || base == 1) {
    *out = exp == 0 ? 1 : base;
    return true;
  }
  if (base == -1) {
    *out = (exp & 1) ? -1 : 1;
    return true;
  }
  int64_t r = 1;
  while (true) {
    if ((exp & 1) && __builtin_mul_overflow(r, base, &r)) return false;
    exp >>= 1;
    if (exp == 0) break;
    // |base| >= 2 and bits remain: the result holds base**2, so its overflow is the result's.
    if (__builtin_mul_overflow(base, base, &base)) return false;
  }
  *out = r;
  return true;
}

// Python's float divmod: the quotient floored, the remainder with the divisor's sign.
void float_divmod(double x, double y, double* q, double* r) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double fl;
  if (div != 0) {
    fl = std::floor(div);
    if (div - fl > 0.5) fl += 1.0;
  } else {
    fl = std::copysign(0.0, x / y);
  }
  *q = fl;
  *r = mod;
}

double float_pow(const Node& at, double x, double y) {
  if (x == 0 && y < 0) fail_at(at, "0.0 cannot be raised to a negative power");
  if (std::isfinite(x) && x < 0 && std::isfinite(y) && y != std::floor(y))
    fail_at(at, "a negative number raised to a fractional power is complex: " + Value(x).str() + " ** " +
                    Value(y).str());
  const double r = std::pow(x, y);
  if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
    fail_at(at, "result out of range in " + Value(x).str() + " ** " + Value(y).str());
  return r;
}

bool is_py_space(char c) { return text::is_space(c) || (c >= '\x1c' && c <= '\x1f'); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_py_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_py_space(s.back())) s.remove_suffix(1);
  return s;
}

// Digits with single underscores between them; appends the digits to *out.
bool digits(std::string_view s, std::string* out) {
  if (s.empty() || s.front() == '_' || s.back() == '_') return false;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '_') {
      if (s[k - 1] == '_') return false;
    } else if (s[k] >= '0' && s[k] <= '9') {
      *out += s[k];
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

bool is_int_like(const Value& v) { return v.kind == K::integer || v.kind == K::boolean; }
bool is_numeric(const Value& v) { return is_int_like(v) || v.kind == K::floating; }

std::string type_name(const Value& v) {
  switch (v.kind) {
    case K::undefined:
      return "Undefined";
    case K::none:
      return "NoneType";
    case K::boolean:
      return "bool";
    case K::integer:
      return "int";
    case K::floating:
      return "float";
    case K::string:
      return "str";
    case K::list:
      return "list";
    case K::dict:
      return v.dict->is_namespace ? "Namespace" : "dict";
  }
  return "object";
}

Value arith(const Node& at, const std::string& op, const Value& a, const Value& b) {
  if (!is_numeric(a) || !is_numeric(b))
    fail_at(at,
            "unsupported operand types for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  auto what = [&] { return a.str() + " " + op + " " + b.str(); };
  if (is_int_like(a) && is_int_like(b)) {
    const int64_t x = as_int(a), y = as_int(b);
    int64_t r;
    bool over = false;
    if (op == "+")
      over = __builtin_add_overflow(x, y, &r);
    else if (op == "-")
      over = __builtin_sub_overflow(x, y, &r);
    else if (op == "*")
      over = __builtin_mul_overflow(x, y, &r);
    if (over) overflow(at, what());
    if (op == "+" || op == "-" || op == "*") return Value(r);
    if (op == "//" || op == "%") {
      if (y == 0) fail_at(at, "division by zero in " + what());
      if (y == -1) {  // INT64_MIN / -1 traps in C++
        if (op == "%") return Value(int64_t(0));
        if (x == INT64_MIN) overflow(at, what());
        return Value(-x);
      }
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // floor, as Python
        --q;
        m += y;
      }
      return Value(op == "//" ? q : m);
    }
    if (op == "**" && y >= 0) {
      if (!pow_int(x, y, &r)) overflow(at, what());
      return Value(r);
    }
    // "/" and int ** negative int are floats in Python.
  }
  const double x = a.kind == K::floating ? a.f : double(as_int(a));
  const double y = b.kind == K::floating ? b.f : double(as_int(b));
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/" || op == "//" || op == "%") {
    if (y == 0) fail_at(at, "division by zero in " + what());
    if (op == "/") return Value(x / y);
    double q, r;
    float_divmod(x, y, &q, &r);
    return Value(op == "//" ? q : r);
  }
  if (op == "**") return Value(float_pow(at, x, y));
  fail_at(at, "unknown operator " + op);
}

Value unary_sign(const Node& at, const std::string& op, const Value& v) {
  if (is_int_like(v)) {
    const int64_t x = as_int(v);
    if (op == "+") return Value(x);
    if (x == INT64_MIN) overflow(at, "-(" + v.str() + ")");
    return Value(-x);
  }
  if (v.kind == K::floating) return Value(op == "-" ? -v.f : v.f);
  fail_at(at, "bad operand type for unary " + op + ": '" + type_name(v) + "'");
}

std::optional<int> compare_numbers(const Value& a, const Value& b) {
  auto sign = [](auto d) { return d < 0 ? -1 : d > 0 ? 1 : 0; };
  if (is_int_like(a) && is_int_like(b)) {
    const int64_t x = as_int(a), y = as_int(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind == K::floating && b.kind == K::floating) {
    if (std::isnan(a.f) || std::isnan(b.f)) return std::nullopt;
    return a.f < b.f ? -1 : a.f > b.f ? 1 : 0;
  }
  // An int and a float, compared exactly (a double may not hold the int).
  const bool flip = a.kind == K::floating;
  const int64_t x = as_int(flip ? b : a);
  const double y = flip ? a.f : b.f;
  int c;
  if (std::isnan(y)) return std::nullopt;
  if (y >= 9223372036854775808.0) {
    c = -1;
  } else if (y < -9223372036854775808.0) {
    c = 1;
  } else {
    const double t = std::trunc(y);
    const int64_t ti = int64_t(t);
    c = x != ti ? sign(x < ti ? -1 : 1) : sign(t - y);
  }
  return flip ? -c : c;
}

int64_t int_of_float(const Node& at, double x) {
  if (std::isnan(x)) fail_at(at, "cannot convert float NaN to integer");
  if (std::isinf(x)) fail_at(at, "cannot convert float infinity to integer");
  const double t = std::trunc(x);
  if (t >= 9223372036854775808.0 || t < -9223372036854775808.0) overflow(at, "int(" + Value(x).str() + ")");
  return int64_t(t);
}

bool parse_int(std::string_view s, int64_t* out, bool* overflow) {
  s = trim(s);
  bool neg = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  std::string ds;
  if (!digits(s, &ds)) return false;
  int64_t r = 0;
  *overflow = false;
  for (char c : ds) {
    // Accumulate negatively: -9223372036854775808 fits, its magnitude does not.
    if (__builtin_mul_overflow(r, int64_t(10), &r) || __builtin_sub_overflow(r, int64_t(c - '0'), &r)) {
      *overflow = true;
      return true;
    }
  }
  if (!neg && r == INT64_MIN) {
    *overflow = true;
    return true;
  }
  *out = neg ? r : -r;
  return true;
}

bool parse_float(std::string_view s, double* out) {
  s = trim(s);
  std::string t(s);
  for (char& c : t) c = char(std::tolower(uint8_t(c)));
  std::string_view body = t;
  std::string clean;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    clean += body.front();
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity" || body == "nan") {
    clean += body;
  } else {
    // digits [. digits] [e [sign] digits], or . digits: Python's float literal syntax
    const size_t e = body.find('e');
    std::string_view mant = body.substr(0, e), exp = e == std::string_view::npos ? "" : body.substr(e + 1);
    const size_t dot = mant.find('.');
    std::string_view whole = mant.substr(0, dot),
                     frac = dot == std::string_view::npos ? "" : mant.substr(dot + 1);
    if (whole.empty() && frac.empty()) return false;
    if (!whole.empty() && !digits(whole, &clean)) return false;
    clean += '.';
    if (!frac.empty() && !digits(frac, &clean)) return false;
    if (e != std::string_view::npos) {
      clean += 'e';
      if (!exp.empty() && (exp.front() == '+' || exp.front() == '-')) {
        clean += exp.front();
        exp.remove_prefix(1);
      }
      if (!digits(exp, &clean)) return false;
    }
  }
  *out = std::strtod(clean.c_str(), nullptr);  // inf on overflow, as Python
  return true;
}

Value int_filter(const Node& at, const Value& v, const Value* dflt) {
  const Value fallback = dflt ? *dflt : Value(int64_t(0));
  switch (v.kind) {
    case K::integer:
      return v;
    case K::boolean:
      return Value(int64_t(v.b));
    case K::floating:  // int(nan) is a ValueError (the default), int(inf) an OverflowError
      if (std::isnan(v.f)) return fallback;
      return Value(int_of_float(at, v.f));
    case K::string: {
      charge_scan(v.s.size());
      int64_t i;
      bool over;
      if (parse_int(v.s, &i, &over)) {
        if (over) overflow(at, "int('" + v.s.substr(0, 40) + "')");
        return Value(i);
      }
      double f;  // Jinja's quirk: "42.23"|int is int(float("42.23"))
      if (parse_float(v.s, &f) && std::isfinite(f)) return Value(int_of_float(at, f));
      return fallback;
    }
    default:
      return fallback;
  }
}

Value float_filter(const Value& v, const Value* dflt) {
  if (is_int_like(v)) return Value(double(as_int(v)));
  if (v.kind == K::floating) return v;
  if (v.is_string()) {
    charge_scan(v.s.size());
    double f;
    if (parse_float(v.s, &f)) return Value(f);
  }
  return dflt ? *dflt : Value(0.0);
}

Value abs_filter(const Node& at, const Value& v) {
  if (is_int_like(v)) {
    const int64_t x = as_int(v);
    if (x == INT64_MIN) overflow(at, "abs(" + v.str() + ")");
    return Value(x < 0 ? -x : x);
  }
  if (v.kind == K::floating) return Value(std::fabs(v.f));
  fail_at(at, "bad operand type for abs(): '" + type_name(v) + "'");
}

Value round_filter(const Node& at, const Value& v, const Value* precision, const Value* method) {
  if (precision && !is_int_like(*precision))
    fail_at(at, "round: the precision must be an int, not " + type_name(*precision));
  const int64_t p = precision ? as_int(*precision) : 0;
  const std::string m = method ? method->str() : "common";
  if (m != "common" && m != "ceil" && m != "floor")
    fail_at(at, "round: method must be common, ceil or floor");
  if (!is_numeric(v)) fail_at(at, "round: type " + type_name(v) + " doesn't define __round__");
  if (m == "common" && is_int_like(v) && p >= 0) return Value(as_int(v));  // Python: round(int) is the int
  const double x = v.kind == K::floating ? v.f : double(as_int(v));
  if (!std::isfinite(x) || p > 330) return Value(x);  // beyond a double's digits: unchanged
  if (m != "common") {
    const double scale = std::pow(10.0, double(std::max<int64_t>(p, -330)));
    const double r = (m == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale;
    return Value(std::isfinite(r) ? r : x);
  }
  if (p >= 0) {  // correctly rounded to p decimals, half to even, as Python's round
    char buf[720];
    std::snprintf(buf, sizeof buf, "%.*f", int(p), x);
    return Value(std::strtod(buf, nullptr));
  }
  if (p < -330) return Value(std::copysign(0.0, x));
  const double scale = std::pow(10.0, double(-p));
  const double r = std::nearbyint(x / scale) * scale;
  return Value(std::isfinite(r) ? r : std::copysign(0.0, x));
}

}  // namespace kiln::jinja
