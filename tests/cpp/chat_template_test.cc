// Chat-template tests with hand-written expected output: whitespace control as
// transformers configures Jinja2, scoping, loops, filters, Python methods, the
// Qwen3 template, and errors. tests/python/test_chat_template.py compares
// against jinja2 itself over the supported families' templates.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kiln/chat_template.h"
#include "kiln/tokenizer.h"

using kiln::jinja::Template;
using kiln::jinja::Value;

namespace {

std::string render(const std::string& src, const std::string& ctx_json = "{}") {
  return Template(src).render(Value::parse_json(ctx_json));
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
