"""kiln.ChatTemplate against jinja2 configured as transformers' apply_chat_template
configures it, over the chat templates of Qwen3, Llama 3 / 3.1, SmolLM2, Mixtral and
OLMoE and conversations with system prompts, reasoning, tool calls and tools."""

import json
import pathlib
import shutil
import tarfile
from datetime import datetime

import pytest

import kiln

jinja2 = pytest.importorskip("jinja2")
from jinja2.ext import loopcontrols  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
TEMPLATES = {p.stem: p.read_text() for p in sorted((DATA / "chat_templates").glob("*.jinja"))}


class RaisedError(Exception):
    pass


def hf_render(source, **ctx):
    """What transformers does: ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks,
    loopcontrols), tojson without ASCII escaping, raise_exception, strftime_now."""
    def raise_exception(message):
        raise RaisedError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source).render(**ctx)


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city — «today»",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "名前"},
                                                    "days": {"type": "integer", "minimum": 1, "maximum": 7.5}},
                   "required": ["city"]}}}]

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello!"}],
    "system_user": [{"role": "system", "content": "  You are terse.\n"}, {"role": "user", "content": " Hi  "}],
    "multi_turn": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"},
                   {"role": "user", "content": "And 3+3? 日本語 😀"}],
    "reasoning": [{"role": "user", "content": "Why?"},
                  {"role": "assistant", "content": "<think>\nBecause.\n</think>\n\nIt is so."},
                  {"role": "user", "content": "Sure?"},
                  {"role": "assistant", "content": "Yes.", "reasoning_content": "Checked twice."}],
    "tool_calls": [{"role": "user", "content": "Weather in Paris?"},
                   {"role": "assistant", "content": "",
                    "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                                      "arguments": {"city": "Paris", "days": 2}}}]},
                   {"role": "tool", "content": "{\"temp\": 21}"},
                   {"role": "tool", "content": "sunny"},
                   {"role": "assistant", "content": "21 and sunny."}],
    "tool_call_string_args": [{"role": "user", "content": "x"},
                              {"role": "assistant", "content": "calling",
                               "tool_calls": [{"name": "f", "arguments": "{\"a\": 1}"}]}],
    "tool_response_user": [{"role": "user", "content": "<tool_response>x</tool_response>"}],
    "empty": [],
}

FAMILY_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def cases():
    for name in TEMPLATES:
        for conv in CONVERSATIONS:
            for gen in (False, True):
                yield name, conv, gen


@pytest.mark.parametrize("name,conv,gen", list(cases()))
def test_matches_jinja2(name, conv, gen):
    src = TEMPLATES[name]
    extras = [{}, {"tools": None}, {"tools": TOOLS}, {"enable_thinking": False}, {"enable_thinking": True},
              {"date_string": "1 Jan 2030", "tools": TOOLS, "tools_in_user_message": False},
              {"builtin_tools": ["code_interpreter", "brave_search"]}]
    for extra in extras:
        ctx = dict(messages=CONVERSATIONS[conv], add_generation_prompt=gen, **FAMILY_TOKENS, **extra)
        try:
            want = hf_render(src, **ctx)
        except (RaisedError, jinja2.exceptions.UndefinedError, TypeError) as e:
            with pytest.raises(ValueError):
                kiln.ChatTemplate(src).render(**ctx)
            continue
        assert kiln.ChatTemplate(src).render(**ctx) == want, (name, conv, extra)


EXPRESSIONS = [
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 * 2 }} {{ 0.1 + 0.2 }}",
    "{{ 'a' ~ 1 ~ none }} {{ [1, 'b', none, true] }} {{ {'k': 'v', 'n': 1.0} }} {{ 'x' * 3 }}",
    "{{ 'Hello World'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ '  x '.strip() }}",
    "{{ 'xxhixx'.strip('x') }} {{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'hello world'.title() }}",
    "{{ 'abc'[::-1] }} {{ [1,2,3,4][1:3] }} {{ [1,2,3][-1] }} {{ 'héllo'[1] }} {{ [1,2,3][::2] }}",
    "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }}",
    "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{% for x in [1,2,3,4,5] if x is odd %}{{ loop.index }}:{{ x }}/{{ loop.length }} {% endfor %}",
    "{% for x in [] %}x{% else %}empty{% endfor %}",
    "{% for x in range(10) %}{% if x == 5 %}{% break %}{% endif %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}",
    "{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
    "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}",
    "{{ [3,1,2]|sort|join('-') }} {{ ['a','b']|length }} {{ 'abc'|length }} {{ [1,2]|first }} {{ [1,2]|last }}",
    "{{ none|default('d') }} {{ undefined_name|default('d') }} {{ ''|default('e', true) }} {{ [1,2,1]|unique|list }}",
    "{{ {'a': [1, 2.5, 'ü', none, true]}|tojson }} {{ {'a': {'b': []}}|tojson(indent=2) }}",
    "{{ [{'n': 'x'}, {'n': 'y'}]|map(attribute='n')|join }} {{ [1,2,3]|select('odd')|list }}",
    "{{ [{'r': 'u'}, {'r': 'a'}]|selectattr('r', 'equalto', 'a')|list }} {{ [0,1,2]|reject|list }}",
    "{{ 'a' if false else 'b' }} {{ 'c' if true }} {{ (1, 2)|join }} {{ x is defined }} {{ none is none }}",
    "{{ 'ab'.startswith(('x', 'a')) }} {{ 'ab'.endswith('b') }} {{ 'abab'.replace('a', 'c') }} {{ 'a-b'|replace('-', '+') }}",
    "{{ d.get('k') }} {{ d.get('z', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d['k'] }} {{ d.k }}",
    "  {%- if true %}\n    yes\n  {% endif %}\n{# c #}\n  {% if true -%}\n  x  \n  {%- endif %}\n{%+ if true %}y{% endif %}",
    "line\n    {% for i in [1, 2] %}\n    item {{ i }}\n    {% endfor %}\nend\n",
    "{{ 3 > 2 and 2 >= 2 and 1 < 2 <= 2 }} {{ not 1 == 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ -3|abs }}",
    "{% raw %}{{ not rendered }}{% endraw %} {{ '\\n'|tojson }} {{ \"it's\" }} {{ ['it\\'s'] }}",
    "{{ 1e3 if false else 1.0e-5 }} {{ 12345678901234567.0 }} {{ 100.0 }} {{ 2.5|int }} {{ '42'|int + 1 }} {{ 3|float }}",
    # Python's numbers at the edges of int64 and of float division
    "{{ 9223372036854775806 + 1 }} {{ (-2) ** 63 }} {{ 7 ** 0 }} {{ -true }} {{ 9007199254740993 == 9007199254740992 }} "
    "{{ 9007199254740993 == 9007199254740992.0 }} {{ 9007199254740993 > 9007199254740992 }}",
    "{{ 1 // 0.1 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ 1 % 0.1 }} {{ 2 ** -1 }} {{ 1 ** 1000000000000 }} "
    "{{ (-1) ** 1000000000001 }} {{ (-9223372036854775807 - 1) % -1 }}",
    "{{ ' 42 '|int }} {{ '4_2'|int }} {{ '42.9'|int }} {{ '1e3'|int }} {{ '12abc'|int }} {{ 'x'|int(7) }} "
    "{{ '1e400'|int }} {{ '12abc'|float }} {{ '1e400'|float }} {{ ' -2.5 '|float }}",
    "{{ range(9223372036854775800, 9223372036854775807, 100)|list }} {{ [1, 2, 3][2::9223372036854775807] }} "
    "{{ [1, 2, 3][::-9223372036854775807 - 1] }} {{ 'h\u00e9llo'[::-2] }} {{ [1, 2, 3]['a':] }} {{ [1, 2][true] }}",
    "{{ [1, 'a'] * 2 }} {{ 2 * 'ab' }} {{ [1] * -1 }} {{ ['A', 'a', 'b', 1, 1.0, true, none]|unique|list }} "
    "{{ ['b', 'A', 'c']|sort }} {{ [3, 1.5, true]|sort(reverse=true) }}",
    "{{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b c '.split(none, 1) }} {{ 'abc'.replace('', '-', 2) }} {{ 'abcabc'.rfind('bc') }} "
    "{{ 'h\u00e9llo'.find('l') }} {{ 'xyxyx'.count('x') }} {{ 'ab'.count('') }}",
    "{{ 'h\u00e9\u00e9'.strip('\u00e9') }} {{ 'xxhixx'|trim('x') }} {{ 2.5|round }} {{ 3.14159|round(2) }} {{ 1.5|round(400) }} "
    "{{ 5|round }} {{ 2.7|round(method='floor') }} {% raw -%}  {{ x }} {%- endraw %}",
]


@pytest.mark.parametrize("src", EXPRESSIONS)
def test_expressions_match_jinja2(src):
    ctx = {"d": {"k": "v"}}
    assert kiln.ChatTemplate(src).render(**ctx) == hf_render(src, **ctx)


def test_errors():
    with pytest.raises(ValueError, match="line 1"):
        kiln.ChatTemplate("{% if x %}")
    with pytest.raises(ValueError):
        kiln.ChatTemplate("{{ x | no_such_filter }}").render(x=1)
    with pytest.raises(ValueError, match="boom"):
        kiln.ChatTemplate("{{ raise_exception('boom') }}").render()
    with pytest.raises(TypeError):
        kiln.ChatTemplate("{{ x }}").render(x=object())
    with pytest.raises(ValueError):
        kiln.ChatTemplate("{% macro m() %}{% endmacro %}")


@pytest.mark.parametrize("src", ["{{ 9223372036854775807 + 1 }}", "{{ 2 ** 64 }}", "{{ -(-9223372036854775807 - 1) }}",
                                 "{{ 4611686018427387904 * 2 }}", "{{ '99999999999999999999'|int }}"])
def test_int64_overflow_is_an_error(src):
    # Python's ints are unbounded; kiln's are int64 and say so instead of wrapping.
    assert abs(int(hf_render(src))) > 2**63 - 1
    with pytest.raises(ValueError, match="integer overflow"):
        kiln.ChatTemplate(src).render()


@pytest.mark.parametrize("src,error", [("{{ 1 // 0 }}", ZeroDivisionError), ("{{ 1.5 % 0 }}", ZeroDivisionError),
                                       ("{{ 0 ** -1 }}", ZeroDivisionError), ("{{ range(100001)|length }}", OverflowError),
                                       ("{{ [[1], [1]]|unique|list }}", TypeError), ("{{ [1, 'a']|sort }}", TypeError)])
def test_python_errors_are_template_errors(src, error):
    with pytest.raises(error):
        hf_render(src)
    with pytest.raises(ValueError):
        kiln.ChatTemplate(src).render()


@pytest.mark.parametrize("src,match", [
    ("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "step limit"),
    ("{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = ns.x + ns.x %}{% endfor %}", "memory limit"),
    ("{{ 'x' * 100000000000 }}", "memory limit"),
    ("{% set ns = namespace(x=1) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}", "nested too deeply"),
    ("{{ x" + ".a" * 100000 + " }}", "nested too deeply"),
])
def test_hostile_templates_end_with_an_error(src, match):
    # Jinja would run these for hours or until memory runs out; kiln renders
    # untrusted templates and stops them at its limits.
    with pytest.raises(ValueError, match=match):
        kiln.ChatTemplate(src).render(x={})


def test_tokenizer_apply_chat_template(tmp_path):
    d = tmp_path / "qwen3"
    d.mkdir()
    with tarfile.open(DATA / "tokenizers" / "qwen3" / "tokenizer.json.tar.xz") as tar:
        tar.extract("tokenizer.json", d, filter="data")
    shutil.copy(DATA / "tokenizers" / "qwen3" / "tokenizer_config.json", d)
    tok = kiln.Tokenizer.from_file(str(d / "tokenizer.json"))
    msgs = CONVERSATIONS["multi_turn"]
    for kw in ({}, {"enable_thinking": False}, {"tools": TOOLS}):
        got = tok.apply_chat_template(msgs, add_generation_prompt=True, **kw)
        ctx = dict(messages=msgs, add_generation_prompt=True, eos_token="<|im_end|>", pad_token="<|endoftext|>")
        ctx.setdefault("tools", None)
        ctx.update(kw)
        assert got == hf_render(tok.chat_template, **ctx)
        assert tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, **kw) == tok.encode(got)
    assert got.endswith("<|im_start|>assistant\n")
