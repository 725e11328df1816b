// Python's numbers for chat templates: arithmetic, comparison and the int,
// float, abs and round filters on int64 and double values.
//
// Jinja computes with Python's unbounded ints. kiln keeps int64 and reports a
// result outside it as "[chat_template] line N: integer overflow in a + b"
// (a TemplateError) instead of wrapping or rounding: chat templates count
// messages and index lists, nowhere near 2**63, so an error is the honest
// answer to a template that leaves int64, and arbitrary precision would buy
// nothing for the templates that exist.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "io/chat_template/ast.h"

namespace kiln::jinja {

bool is_int_like(const Value& v);  // int or bool (Python's bool is an int)
bool is_numeric(const Value& v);   // int, bool or float
// Python's type name for error messages: int, str, list, NoneType ...
std::string type_name(const Value& v);

// a op b for op in + - * / // % ** on numbers (bools count as ints).
Value arith(const Node& at, const std::string& op, const Value& a, const Value& b);
// -v or +v.
Value unary_sign(const Node& at, const std::string& op, const Value& v);
// Three-way comparison of two numbers, exact between ints and floats as in
// Python; nullopt when unordered (a NaN).
std::optional<int> compare_numbers(const Value& a, const Value& b);
// Python's int(x) of a float: errors for infinities and values outside int64.
int64_t int_of_float(const Node& at, double x);

// Python int()/float() of a string: whitespace around, an optional sign,
// underscores between digits. parse_int sets *overflow for a valid int
// outside int64.
bool parse_int(std::string_view s, int64_t* out, bool* overflow);
bool parse_float(std::string_view s, double* out);

// Jinja's |int, |float, |abs and |round filters.
Value int_filter(const Node& at, const Value& v, const Value* dflt);
Value float_filter(const Value& v, const Value* dflt);
Value abs_filter(const Node& at, const Value& v);
Value round_filter(const Node& at, const Value& v, const Value* precision, const Value* method);

}  // namespace kiln::jinja
