// Chat-template tests with hand-written expected output: whitespace control as
// transformers configures Jinja2, scoping, loops, filters, Python methods, the
// Qwen3 template, and errors. tests/python/test_chat_template.py compares
// against jinja2 itself over the supported families' templates.
#include "kiln/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "io/chat_template/limits.h"
#include "io/chat_template/text.h"
#include "kiln/tokenizer.h"

using kiln::jinja::Template;
using kiln::jinja::Value;

namespace {

std::string render(const std::string& src, const std::string& ctx_json = "{}") {
  return Template(src).render(Value::parse_json(ctx_json));
}

// The TemplateError a template raises, or "" when it renders.
std::string error_of(const std::string& src, const std::string& ctx_json = "{}") {
  try {
    render(src, ctx_json);
  } catch (const kiln::jinja::TemplateError& e) {
    return e.what();
  }
  return "";
}

// Whether `src` fails with a TemplateError whose message contains `part`.
::testing::AssertionResult fails_with(const std::string& src, const std::string& part) {
  const std::string msg = error_of(src);
  if (msg.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << src.substr(0, 120) << " -> error '" << msg << "', expected '" << part << "'";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST(ChatTemplate, TextAndExpressions) {
  EXPECT_EQ(render("plain text"), "plain text");
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }}"), "7 3 -4 2 3.5");
  EXPECT_EQ(render("{{ 'a' + 'b' ~ 1 }} {{ none }} {{ true }} {{ [1, 'x'] }} {{ {'k': 1} }}"),
            "ab1 None True [1, 'x'] {'k': 1}");
  EXPECT_EQ(render("{{ x }}|{{ x.y is defined }}", R"({"x": {"y": 1}})"), "{'y': 1}|True");
  EXPECT_EQ(render("{{ missing }}|{{ missing is defined }}"), "|False");
  EXPECT_EQ(render("{{ 0.1 + 0.2 }} {{ 1e-5 }} {{ 100.0 }} {{ 1e16 }}"), "0.30000000000000004 1e-05 100.0 1e+16");
}

TEST(ChatTemplate, WhitespaceControl) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indent before it.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(render("x {{- ' y ' -}} z"), "x y z");
  EXPECT_EQ(render("  {%+ if true %}k{% endif %}"), "  k");
  EXPECT_EQ(render("a{# comment #}\nb"), "ab");
  EXPECT_EQ(render("end\n"), "end");  // one trailing newline dropped
}

TEST(ChatTemplate, LoopsAndScopes) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
                   R"({"xs": ["a", "b", "c"]})"),
            "1a,2b,3c");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}none{% endfor %}"), "none");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
            "b=1;a=2;");
  EXPECT_EQ(render("{% for i in range(6) %}{% if i == 4 %}{% break %}{% endif %}{% if i is odd %}{% continue %}"
                   "{% endif %}{{ i }}{% endfor %}"),
            "02");
  // set inside a loop stays there; namespace attributes carry out
  EXPECT_EQ(render("{% set x = 1 %}{% set ns = namespace(y=1) %}{% for i in [1] %}{% set x = 2 %}"
                   "{% set ns.y = 2 %}{% endfor %}{{ x }}{{ ns.y }}"),
            "12");
  EXPECT_EQ(render("{% for m in ms[::-1] %}{{ m }}{% endfor %}", R"({"ms": [1, 2, 3]})"), "321");
}

TEST(ChatTemplate, FiltersAndMethods) {
  EXPECT_EQ(render("{{ '  a b  '|trim }}|{{ 'a</think>b'.split('</think>')[-1] }}|{{ '\\n\\nx'.lstrip('\\n') }}"),
            "a b|b|x");
  EXPECT_EQ(render("{{ xs|length }} {{ xs|join(', ') }} {{ xs|first }} {{ xs|reject('equalto', 'b')|join }}",
                   R"({"xs": ["a", "b", "c"]})"),
            "3 a, b, c a ac");
  EXPECT_EQ(render("{{ d|tojson }}", R"({"d": {"name": "f", "args": [1, 2.5, null, "é\"\n"]}})"),
            R"({"name": "f", "args": [1, 2.5, null, "é\"\n"]})");
  EXPECT_EQ(render("{{ d|tojson(indent=2) }}", R"({"d": {"a": [1]}})"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(render("{{ 'ab'.startswith('a') }} {{ 'ab'.endswith(('x', 'b')) }} {{ 'x' in 'xyz' }}"),
            "True True True");
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z', 0) }} {{ d['a'] }} {{ undefined_x|default('dflt') }}",
                   R"({"d": {"a": 5}})"),
            "5 0 5 dflt");
}

TEST(ChatTemplate, Qwen3Template) {
  const std::string src = Value::parse_json(slurp(std::string(KILN_TEST_DATA_DIR) +
                                                  "/tokenizers/qwen3/tokenizer_config.json"))
                              .dict->find("chat_template")
                              ->s;
  const std::string ctx = R"({"messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello!"},
      {"role": "user", "content": "Bye"}], "add_generation_prompt": true, "enable_thinking": false})";
  EXPECT_EQ(render(src, ctx),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // through the tokenizer: its template and special tokens
  const auto tok = kiln::Tokenizer::from_file(KILN_QWEN3_TOKENIZER);
  const Value msgs = Value::parse_json(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(kiln::apply_chat_template(tok, msgs, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, Errors) {
  EXPECT_THROW(Template("{% if x %}"), kiln::jinja::TemplateError);
  EXPECT_THROW(Template("{{ 'unterminated }}"), kiln::jinja::TemplateError);
  EXPECT_THROW(Template("{% macro f() %}{% endmacro %}"), kiln::jinja::TemplateError);
  EXPECT_THROW(render("{{ raise_exception('no system role') }}"), kiln::jinja::TemplateError);
  EXPECT_THROW(render("{{ x|no_such_filter }}"), kiln::jinja::TemplateError);
  EXPECT_THROW(render("{{ missing.attr }}"), kiln::jinja::TemplateError);
  EXPECT_THROW(render("{{ 1 // 0 }}"), kiln::jinja::TemplateError);
  EXPECT_THROW(Value::parse_json("{bad"), kiln::ValueError);
  EXPECT_THROW(Template("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}"),
               kiln::jinja::TemplateError);
  EXPECT_EQ(render("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}"), "1");
  EXPECT_THROW(Template(std::string("{{ ") + std::string(100000, '[')), kiln::jinja::TemplateError);
  EXPECT_THROW(render("{{ 'x' * 100000000000 }}"), kiln::jinja::TemplateError);
  const auto tok = kiln::Tokenizer::from_json(
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}})");
  EXPECT_THROW(kiln::apply_chat_template(tok, Value::parse_json("[]")), kiln::ValueError);
}

// Jinja computes with Python's unbounded ints; kiln's are int64 and a result
// outside it is an error naming the operation, never a wrapped value.
TEST(ChatTemplate, IntegerOverflowIsAnError) {
  EXPECT_TRUE(fails_with("{{ 9223372036854775807 + 1 }}", "integer overflow in 9223372036854775807 + 1"));
  EXPECT_TRUE(fails_with("{{ -9223372036854775807 - 2 }}", "integer overflow in -9223372036854775807 - 2"));
  EXPECT_TRUE(fails_with("{{ 4611686018427387904 * 2 }}", "integer overflow in 4611686018427387904 * 2"));
  EXPECT_TRUE(fails_with("{{ 2 ** 63 }}", "integer overflow in 2 ** 63"));
  EXPECT_TRUE(fails_with("{{ 999008**800*08e2/T//e }}", "integer overflow in 999008 ** 800"));
  EXPECT_TRUE(fails_with("{{ -(-9223372036854775807 - 1) }}", "integer overflow in -(-9223372036854775808)"));
  EXPECT_TRUE(fails_with("{{ (-9223372036854775807 - 1) // -1 }}", "integer overflow"));
  EXPECT_TRUE(fails_with("{{ (-9223372036854775807 - 1)|abs }}", "integer overflow"));
  EXPECT_TRUE(fails_with("{{ 99999999999999999999 }}", "integer literal"));
  // Results inside int64 are exact (Python's values).
  EXPECT_EQ(
      render("{{ 9223372036854775806 + 1 }} {{ -9223372036854775807 - 1 }} {{ 3037000499 * 3037000499 }}"),
      "9223372036854775807 -9223372036854775808 9223372030926249001");
  EXPECT_EQ(
      render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ (-3) ** 3 }} {{ 7 ** 0 }} {{ true + true }} {{ -true }}"),
      "4611686018427387904 -9223372036854775808 -27 1 2 -1");
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) % -1 }} {{ 9223372036854775807 // -1 }}"),
            "0 -9223372036854775807");
  // Python compares ints exactly, not through doubles.
  EXPECT_EQ(
      render("{{ 9007199254740993 == 9007199254740992 }} {{ 9007199254740993 > 9007199254740992 }} "
             "{{ 9007199254740993 == 9007199254740992.0 }} {{ 9007199254740992 == 9007199254740992.0 }}"),
      "False True False True");
}

// ** by squaring: any exponent takes a few dozen multiplications.
TEST(ChatTemplate, PowerByRepeatedSquaring) {
  EXPECT_EQ(render("{{ 1 ** 1000000000000 }} {{ 0 ** 1000000000000 }} {{ (-1) ** 1000000000001 }} "
                   "{{ (-1) ** 1000000000000 }}"),
            "1 0 -1 1");
  EXPECT_TRUE(fails_with("{{ 2 ** 1000000000000 }}", "integer overflow in 2 ** 1000000000000"));
  // int ** negative int is a float in Python; 0 to a negative power divides by zero.
  EXPECT_EQ(render("{{ 2 ** -1 }} {{ 2.0 ** 0.5 }} {{ 4 ** 0.5 }} {{ (-8.0) ** 3 }}"),
            "0.5 1.4142135623730951 2.0 -512.0");
  EXPECT_TRUE(fails_with("{{ 0 ** -1 }}", "negative power"));
  EXPECT_TRUE(fails_with("{{ 0.0 ** -2.5 }}", "negative power"));
  EXPECT_TRUE(fails_with("{{ 10.0 ** 400 }}", "out of range"));
  EXPECT_TRUE(fails_with("{{ (-8.0) ** 0.5 }}", "fractional power"));
}

// Python raises ZeroDivisionError; C++ would divide by zero or trap.
TEST(ChatTemplate, DivisionAndModulo) {
  for (const char* e : {"1 // 0", "1 % 0", "1 / 0", "1.0 // 0.0", "1.5 % 0", "1 / 0.0", "-1 // false"})
    EXPECT_TRUE(fails_with(std::string("{{ ") + e + " }}", "division by zero")) << e;
  EXPECT_TRUE(fails_with("{{ 4 is divisibleby 0 }}", "division by zero"));
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) is divisibleby(-1) }} {{ 9 is divisibleby 3 }}"),
            "True True");
  // Python's float floor division and modulo (the remainder takes the divisor's sign).
  EXPECT_EQ(render("{{ 1 // 0.1 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ -7.5 % 2 }} {{ 1 % 0.1 }}"),
            "9.0 -4.0 -0.5 0.5 0.09999999999999995");
}

// |int and |float as Jinja: int(x), else int(float(x)), else the default.
TEST(ChatTemplate, IntAndFloatFilters) {
  EXPECT_EQ(
      render("{{ ' 42 '|int }} {{ '4_2'|int }} {{ '-7'|int }} {{ '42.9'|int }} {{ '1e3'|int }} {{ "
             "'12abc'|int }} "
             "{{ ''|int }} {{ 'x'|int(7) }} {{ 2.9|int }} {{ -2.9|int }} {{ true|int }} {{ none|int }}"),
      "42 42 -7 42 1000 0 0 7 2 -2 1 0");
  // Jinja's quirk: a string goes through float(), and a float it cannot convert gives the default.
  EXPECT_EQ(render("{{ (1e400 - 1e400)|int }} {{ 'nan'|int }} {{ '1e400'|int }} {{ '-inf'|int(3) }}"),
            "0 0 0 3");
  EXPECT_TRUE(fails_with("{{ 1e400|int }}", "cannot convert float infinity to integer"));
  EXPECT_TRUE(fails_with("{{ '1e300'|int }}", "integer overflow"));
  EXPECT_TRUE(fails_with("{{ 1e300|int }}", "integer overflow"));
  EXPECT_TRUE(fails_with("{{ '99999999999999999999'|int }}", "integer overflow"));
  EXPECT_EQ(render("{{ '12abc'|float }} {{ '1e400'|float }} {{ ' 2.5 '|float }} {{ '-inf'|float }} {{ "
                   "'x'|float(1.5) }}"),
            "0.0 inf 2.5 -inf 1.5");
  EXPECT_EQ(render("{{ 1e400 }} {{ 1e-320 }} {{ -1e400 }}"), "inf 1e-320 -inf");
}

// range() as in Jinja's sandbox (at most 100000 items), without int64 wrap-around.
TEST(ChatTemplate, RangeIsBoundedAndExact) {
  EXPECT_EQ(render("{{ range(100000)|length }} {{ range(5, 0, -2)|list }} {{ range(0, 10, "
                   "9223372036854775807)|list }}"),
            "100000 [5, 3, 1] [0]");
  EXPECT_EQ(render("{{ range(9223372036854775800, 9223372036854775807, 100)|list }} "
                   "{{ range(-9223372036854775807 - 1, 9223372036854775807, 9223372036854775807)|list }}"),
            "[9223372036854775800] [-9223372036854775808, -1, 9223372036854775806]");
  EXPECT_TRUE(fails_with("{{ range(100001)|length }}", "range"));
  EXPECT_TRUE(fails_with("{{ range(1000000000000)|length }}", "range"));
  EXPECT_TRUE(fails_with("{{ range(-9223372036854775807 - 1, 9223372036854775807)|length }}", "range"));
  EXPECT_TRUE(fails_with("{{ range(1.5) }}", "integer"));
  EXPECT_TRUE(fails_with("{{ range('3') }}", "integer"));
}

// Slices take Python's indices with any int64 start, stop and step.
TEST(ChatTemplate, SlicesWithHugeIndices) {
  EXPECT_EQ(render("{{ [1, 2, 3][2::9223372036854775807] }} {{ [1, 2, 3][::-9223372036854775807] }} "
                   "{{ [1, 2, 3][-9223372036854775807 - 1:9223372036854775807] }} {{ [1, 2, "
                   "3][::-9223372036854775807 - 1] }}"),
            "[3] [3] [1, 2, 3] [3]");
  EXPECT_EQ(render("{{ 'h\xc3\xa9llo'[1:4] }}|{{ 'h\xc3\xa9llo'[::-2] }}|{{ 'abc'[5:] }}|{{ "
                   "'abc'[-9223372036854775807:1] }}"),
            "\xc3\xa9ll|olh||a");
  // Jinja turns a subscript's TypeError into an undefined value.
  EXPECT_EQ(render("{{ [1, 2, 3]['a':] }}|{{ [1, 2, 3][::1.5] }}|{{ 'abc'[1.5] }}|{{ [1, 2][true] }}"),
            "|||2");
  EXPECT_TRUE(fails_with("{{ [1, 2, 3][::0] }}", "slice step cannot be zero"));
}

// List and string building is bounded by one memory budget per render.
TEST(ChatTemplate, MemoryBudget) {
  EXPECT_TRUE(
      fails_with("{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = ns.x + ns.x %}"
                 "{% endfor %}{{ ns.x|length }}",
                 "MiB"));
  EXPECT_TRUE(
      fails_with("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                 "{% endfor %}{{ ns.s|length }}",
                 "MiB"));
  EXPECT_TRUE(fails_with("{{ [1] * 1000000000000 }}", "MiB"));
  EXPECT_EQ(render("{{ [] * 1000000000000 }}{{ '' * 1000000000000 }}"), "[]");  // at once, not 10**12 steps
  // A size whose product overflows: the budget saturates instead of wrapping.
  EXPECT_TRUE(fails_with("{{ [1] * 9223372036854775807 }}", "MiB"));
  EXPECT_TRUE(fails_with("{{ [1, 2, 3] * 4611686018427387904 }}", "MiB"));
  EXPECT_TRUE(fails_with("{{ range(100000)|join('x' * 10000000) }}", "MiB"));
  EXPECT_TRUE(fails_with("{{ ('a' * 10000)|replace('a', 'b' * 100000) }}", "MiB"));
  EXPECT_TRUE(fails_with("{{ ('a' * 50000000).split('a')|length }}", "MiB"));
  EXPECT_TRUE(fails_with("{{ ('a' * 100000000)|list|length }}", "MiB"));
  EXPECT_TRUE(fails_with("{{ [1]|tojson(indent=1000000000000) }}", "MiB"));
  EXPECT_EQ(render("{{ 5|tojson(indent=1000000000000) }}"), "5");
  // Values sharing parts: [x, x] sixty times is small, its text 2**60 items.
  const std::string nest =
      "{% set ns = namespace(x=[1], y=[1]) %}{% for i in range(60) %}"
      "{% set ns.x = [ns.x, ns.x] %}{% set ns.y = [ns.y, ns.y] %}{% endfor %}";
  EXPECT_TRUE(fails_with(nest + "{{ ns.x }}", "limit"));
  EXPECT_TRUE(fails_with(nest + "{{ ns.x|tojson }}", "limit"));
  EXPECT_TRUE(fails_with(nest + "{{ ns.x == ns.y }}", "limit"));
  EXPECT_EQ(render("{{ [1, 'a'] * 2 }} {{ 2 * 'ab' }} {{ [1] * -1 }} {{ 'x' * true }}"),
            "[1, 'a', 1, 'a'] abab [] x");
  // Long strings are counted, not split into per-character copies.
  EXPECT_EQ(render("{{ ('a' * 100000000)|length }} {{ ('\xc3\xa9' * 1000000)[999999] }}"),
            "100000000 \xc3\xa9");
}

// A bound on evaluation steps: hostile loops end with an error within seconds.
TEST(ChatTemplate, StepLimit) {
  EXPECT_TRUE(fails_with("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
                         "steps"));
  const std::string big = "{% set s = 'a' * 10000000 %}";
  EXPECT_TRUE(
      fails_with(big + "{% for i in range(100000) %}{% if 'b' in s %}{% endif %}{% endfor %}", "limit"));
  EXPECT_TRUE(fails_with(big + "{% for i in range(100000) %}{% set t = s %}{% endfor %}", "limit"));
  EXPECT_TRUE(fails_with(big + "{% for i in range(100000) %}{{ s|length }}{% endfor %}", "limit"));
  EXPECT_TRUE(
      fails_with("{% for i in range(100000) %}{{ range(100000)|unique|length }}{% endfor %}", "limit"));
}

// Searching, stripping and replacing take time linear in the text.
TEST(ChatTemplate, StringSearchIsLinear) {
  const std::string ctx =
      R"({"h": ")" + std::string(2000000, 'a') + R"(", "n": ")" + std::string(1000000, 'a') + "b\"}";
  EXPECT_EQ(render("{{ n in h }} {{ h.find(n) }} {{ h.rfind(n) }} {{ h.count(n) }} {{ h.split(n)|length }} "
                   "{{ h.replace(n, 'x')|length }}",
                   ctx),
            "False -1 -1 0 1 2000000");
  EXPECT_EQ(render("{{ h|trim(n)|length }} {{ h.strip(n)|length }} {{ h.rstrip(n) }}", ctx), "0 0 ");
  EXPECT_EQ(render("{{ 'abcabc'.rfind('bc') }} {{ 'h\xc3\xa9llo'.find('l') }} {{ 'abc'.replace('', '-') }} "
                   "{{ 'abc'.replace('', '-', 2) }}"),
            "4 2 -a-b-c- -a-bc");
}

// The windowed search agrees with std::string_view::find, matches across window ends included.
TEST(ChatTemplate, TextFindMatchesStdFind) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const size_t n = rng() % 3000, m = 1 + rng() % (trial % 3 == 0 ? 600 : 4);
    std::string hay(n, 'a'), needle(m, 'a');
    for (char& c : hay) c = rng() % 8 ? 'a' : 'b';
    for (char& c : needle) c = rng() % 8 ? 'a' : 'b';
    if (n >= m && rng() % 2) hay.replace(rng() % (n - m + 1), m, needle);  // plant a match
    const size_t from = rng() % (n + 2);
    ASSERT_EQ(kiln::jinja::text::find(hay, needle, from), std::string_view(hay).find(needle, from))
        << n << " " << m << " " << from;
    ASSERT_EQ(kiln::jinja::text::rfind(hay, needle), std::string_view(hay).rfind(needle)) << n << " " << m;
  }
}

// |unique is Jinja's: case-insensitive by default, 1 == 1.0 == true, linear time.
TEST(ChatTemplate, UniqueAndSort) {
  EXPECT_EQ(render("{{ ['A', 'a', 'b', 1, 1.0, true, none, none]|unique|list }} {{ "
                   "range(100000)|unique|list|length }}"),
            "['A', 'b', 1, None] 100000");
  EXPECT_EQ(render("{{ ['b', 'A', 'a']|unique(case_sensitive=true)|list }}"), "['b', 'A', 'a']");
  EXPECT_TRUE(fails_with("{{ [[1], [1]]|unique|list }}", "unhashable"));
  EXPECT_TRUE(fails_with("{{ [1, 'a']|sort }}", "not supported between"));
  EXPECT_EQ(render("{{ ['b', 'A', 'c']|sort }} {{ [3, 1.5, true]|sort }}"), "['A', 'b', 'c'] [True, 1.5, 3]");
}

// The syntax tree and values stay shallow: neither parsing, rendering nor
// freeing them recurses deeper than a fixed bound.
TEST(ChatTemplate, NestingDepth) {
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int k = 0; k < n; ++k) out += s;
    return out;
  };
  for (const std::string& chain :
       {repeat(" + 1", 100000), repeat(".a", 100000), repeat("|e", 100000), repeat("[0]", 100000),
        repeat("()", 100000), repeat(" ~ 1", 100000), repeat(" or 1", 100000), repeat(" and 1", 100000),
        repeat(" < 1", 100000), repeat(" is defined", 100000), repeat(" * 1", 100000),
        repeat(" ** 1", 100000)}) {
    try {
      Template t("{{ x" + chain + " }}");
      ADD_FAILURE() << "parsed" << chain.substr(0, 8);
    } catch (const kiln::jinja::TemplateError& e) {
      EXPECT_NE(std::string(e.what()).find("nested too deeply"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(render("{{ 0" + repeat(" + 1", 100) + " }}"), "100");
  EXPECT_TRUE(fails_with(
      "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}"
      "{{ ns.x }}",
      "nested"));
  EXPECT_TRUE(
      fails_with("{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = {'k': ns.x} %}"
                 "{% endfor %}{{ ns.x|tojson }}",
                 "nested"));
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in range(100) %}{% set ns.x = [ns.x] %}{% endfor %}"
                   "{{ ns.x|tojson|length }}"),
            "201");
  // A namespace cannot hold a namespace: no reference cycles, no endless tojson.
  EXPECT_TRUE(fails_with("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me }}", "namespace"));
  EXPECT_TRUE(fails_with("{% set ns = namespace() %}{% set ns.me = [{'a': ns}] %}", "namespace"));
  EXPECT_TRUE(fails_with("{{ namespace(a=1)|tojson }}", "not JSON serializable"));
  // The loop object changes as the loop runs: it counts as holding whatever the list holds.
  EXPECT_TRUE(
      fails_with("{% set ns = namespace() %}{% for x in [1, 1, ns] %}{% set ns.l = loop %}{% endfor %}"
                 "{{ ns|tojson }}",
                 "namespace"));
  EXPECT_EQ(
      render(
          "{% set ns = namespace() %}{% for x in [1, 2] %}{% set ns.l = loop %}{% endfor %}{{ ns.l.index }}"),
      "2");
}

// Inputs the fuzzer turned up: each must end in a TemplateError or a rendering.
TEST(ChatTemplate, LexerAndAttributeEdgeCases) {
  EXPECT_THROW(Template("{% raw %}x{% endraw"), kiln::jinja::TemplateError);
  EXPECT_THROW(Template("{% raw %}endraw%}"), kiln::jinja::TemplateError);
  EXPECT_EQ(render("{% raw %}a{{ b }}{%- endraw %}|{% raw -%}  c {% endraw %}"), "a{{ b }}|c ");
  // Filters iterating a string's characters or a dict's keys read them after they were freed.
  EXPECT_EQ(render("{{ 'ab'|rejectattr('r')|list }} {{ {'k': 1}|select|list }} {{ 'ab'|map('upper')|join }} "
                   "{{ 'aba'|unique|join }} {{ 'a' is in({'a': 1}) }} {{ {'k': 1}|join(',') }}"),
            "['a', 'b'] ['k'] AB ab True k");
  EXPECT_EQ(render("{{ [{'a': 1}]|map(attribute='99999999999999999999')|list|length }} "
                   "{{ [[5, 6]]|map(attribute='1')|list }} {{ [{'1a': 2}]|map(attribute='1a')|list }}"),
            "1 [6] [2]");
}

// The limits sit far above real use: each supported family's template renders
// a 200-message conversation (200 kB of text, tools included) within 1% of them.
TEST(ChatTemplate, RealTemplatesUseLittleOfTheLimits) {
  std::string msgs = "[";
  for (int k = 0; k < 200; ++k) {
    const char* role = k == 0 ? "system" : k % 2 ? "user" : "assistant";
    msgs += std::string(k ? "," : "") + R"({"role": ")" + role + R"(", "content": ")" +
            (k % 2 == 0 && k ? "<think>\\nhmm\\n</think>\\n\\n" : "") + std::string(1000, 'x') + "\"}";
  }
  msgs += "]";
  const std::string tools = R"([{"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])";
  for (const char* name : {"llama3", "llama3_1", "mixtral", "olmoe", "qwen3", "smollm2"}) {
    const Template t(slurp(std::string(KILN_TEST_DATA_DIR) + "/chat_templates/" + name + ".jinja"));
    const Value ctx =
        Value::parse_json(R"({"messages": )" + msgs + R"(, "tools": )" + tools +
                          R"(, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
    kiln::jinja::RenderStats stats;
    const std::string out = t.render(ctx, &stats);
    EXPECT_GT(out.size(), 200000u) << name;
    EXPECT_LT(stats.steps, kiln::jinja::kMaxSteps / 100) << name;
    EXPECT_LT(stats.bytes, kiln::jinja::kMaxBytes / 100) << name;
    EXPECT_GT(stats.steps, 0u);
  }
}
